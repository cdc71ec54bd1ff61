"""``rag_r1.train --preset tiny-cpu`` (shortened): the warm-started tiny model searches the
in-process index in every GRPO step, the ``<information>`` tokens of a real training step are
out of the loss, and the held-out points are reported."""

import json

SHORT = (
    "warm_start.steps=60",
    "trainer.max_steps=2",
    "data.heldout=4",
    "data.validation=2",
    "trainer.batch_size=2",
    "trainer.rl.group_size=2",
    "trainer.micro_batch_size=4",
)


class LossInputs:
    """Records the loss inputs of every real GRPO training step (TRL's ``_compute_loss``)."""

    def __init__(self, monkeypatch):
        from trl import GRPOTrainer

        self.seen = []
        original = GRPOTrainer._compute_loss

        def recording(trainer, model, inputs):
            self.seen.append(
                {
                    "ids": inputs["completion_ids"].tolist(),
                    "completion": inputs["completion_mask"].tolist(),
                    "tool": inputs["tool_mask"].tolist(),
                    "tokenizer": trainer.processing_class,
                }
            )
            return original(trainer, model, inputs)

        monkeypatch.setattr(GRPOTrainer, "_compute_loss", recording)


def check_learning_run(result, run_dir, seen):
    m = result.metrics
    assert m["global_step"] == 2.0
    steps = [
        json.loads(line)
        for line in (run_dir / "metrics.jsonl").read_text().splitlines()
        if "episode/searches" in line
    ]
    assert len(steps) == 2 and all(s["episode/searches"] > 0 for s in steps)
    # a real training step's loss inputs: every retrieved block is out of the loss
    assert seen
    blocks = 0
    for batch in seen:
        tok = batch["tokenizer"]
        for ids, comp, tool in zip(batch["ids"], batch["completion"], batch["tool"], strict=True):
            both = list(zip(ids, comp, tool, strict=True))
            trained = tok.decode([t for t, c, k in both if c and k])
            masked = tok.decode([t for t, c, k in both if c and not k])
            assert "<information>" not in trained and "Doc 1:" not in trained
            blocks += masked.count("<information>")
    assert blocks > 0
    for point in ("random", "warm_start", "final"):
        for key in ("em", "f1", "searches_per_question", "queries_per_search"):
            assert f"heldout/{key}/{point}" in m and f"val/{key}/{point}" in m
    # the warm start teaches the protocol: the random start never searches, the warm start does
    assert m["heldout/searches_per_question/random"] == 0.0
    assert m["heldout/searches_per_question/warm_start"] > 0.0
    report = (run_dir / "report.md").read_text()
    assert report.index("Held-out questions") < report.index("Warm start")
    assert "| searches / question |" in report
