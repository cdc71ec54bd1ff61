"""The ``hf-sft`` backend: assistant-only labels, per-turn samples, loss hook, training, resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from aworld_rl_core.backends.base import TrainJob  # noqa: E402
from aworld_rl_core.backends.hf_sft import LOSS_STATE_FILE, HfSftBackend  # noqa: E402
from aworld_rl_core.backends.sft_data import (  # noqa: E402
    IGNORE_INDEX,
    SEGMENT_PREFIX,
    SftCollator,
    build_samples,
    has_generation_markers,
)
from aworld_rl_core.errors import AworldError  # noqa: E402
from aworld_rl_core.models import tiny_tokenizer  # noqa: E402
from aworld_rl_core.models.config import ModelConfig  # noqa: E402
from aworld_rl_core.records import RecordError  # noqa: E402
from aworld_rl_core.runs import Run  # noqa: E402
from aworld_rl_core.segments import shift_segments  # noqa: E402
from aworld_rl_core.testing.contracts import BackendContract  # noqa: E402
from aworld_rl_core.trainer_config import SFTConfig, TrainerConfig  # noqa: E402

IM_START, IM_END, THINK, END_THINK = 151644, 151645, 151667, 151668
SHORT = {
    "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "<think>a</think>ok"},
    ]
}
TOOLS = [
    {"name": "add", "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}
]
MULTI = {
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "add 1"},
        {
            "role": "assistant",
            "content": "<think>call</think>",
            "tool_calls": [{"name": "add", "arguments": {"a": 1}}],
        },
        {"role": "tool", "content": "2"},
        {"role": "assistant", "content": "It is 2."},
        {"role": "user", "content": "again"},
        {"role": "assistant", "content": "Still 2."},
    ],
    "tools": TOOLS,
}


@pytest.fixture(scope="module")
def tok():
    return tiny_tokenizer()


def enc(tok, text: str) -> list[int]:
    return tok(text, add_special_tokens=False)["input_ids"]


def decode_labels(tok, sample) -> str:
    return tok.decode([t for t in sample.labels if t != IGNORE_INDEX])


# ---- labels and masks ---------------------------------------------------------------------


def test_labels_and_think_mask_on_a_hand_built_sample(tok):
    (sample,), stats = build_samples([SHORT], tok, max_length=512, per_turn=True)
    prompt = [
        IM_START,
        *enc(tok, "user\nhi"),
        IM_END,
        *enc(tok, "\n"),
        IM_START,
        *enc(tok, "assistant\n"),
    ]
    answer = [THINK, *enc(tok, "a"), END_THINK, *enc(tok, "ok"), IM_END]
    assert sample.input_ids == prompt + answer
    assert sample.labels == [IGNORE_INDEX] * len(prompt) + answer
    n_a = len(enc(tok, "a"))
    think = sample.segments["think"]
    assert think == [0] * len(prompt) + [1] * (n_a + 2) + [0] * (len(answer) - n_a - 2)
    assert (stats.samples, stats.supervised_tokens) == (1, len(answer))
    # the whole conversation (no per-turn split) keeps the trailing newline unlabelled
    (whole,), _ = build_samples([SHORT], tok, max_length=512, per_turn=False)
    assert whole.input_ids == prompt + answer + enc(tok, "\n")
    assert whole.labels == sample.labels + [IGNORE_INDEX] * len(enc(tok, "\n"))


def test_per_turn_split_counts_and_context(tok):
    per_turn, stats = build_samples([MULTI, SHORT], tok, max_length=4096, per_turn=True)
    assert (stats.rows, stats.samples) == (2, 4)
    turns = [decode_labels(tok, s) for s in per_turn[:3]]
    assert turns == [
        "<think>call</think>\n<tool_call>\n"
        '{"name": "add", "arguments": {"a": 1}}\n</tool_call><|im_end|>',
        "It is 2.<|im_end|>",
        "Still 2.<|im_end|>",
    ]
    (whole,), _ = build_samples([MULTI], tok, max_length=4096, per_turn=False)
    for sample in per_turn[:3]:  # earlier turns are context: each sample is a prefix of the whole
        assert whole.input_ids[: len(sample.input_ids)] == sample.input_ids
        assert sample.labels[-1] == IM_END  # ends with the supervised turn
    assert decode_labels(tok, whole) == "".join(turns)


def test_prefix_rendering_matches_generation_markers(tok):
    """A template without {% generation %} markers gives the same samples by prefix rendering."""
    plain = tiny_tokenizer()
    plain.chat_template = plain.chat_template.replace("{%- generation %}", "").replace(
        "{%- endgeneration %}", ""
    )
    assert has_generation_markers(tok) and not has_generation_markers(plain)
    for per_turn in (True, False):
        marked, _ = build_samples([MULTI], tok, max_length=4096, per_turn=per_turn)
        prefixed, _ = build_samples([MULTI], plain, max_length=4096, per_turn=per_turn)
        assert [s.labels for s in prefixed] == [s.labels for s in marked]
        assert [s.segments for s in prefixed] == [s.segments for s in marked]
        n_whole = len(marked[-1].input_ids)
        assert [s.input_ids for s in prefixed][-1][:n_whole] == marked[-1].input_ids


def test_trl_rows_give_the_same_samples_as_records(tok):
    from aworld_rl_core.records import to_trl_rows

    from_records, _ = build_samples([MULTI], tok, max_length=4096, per_turn=True)
    from_trl, _ = build_samples(to_trl_rows([MULTI]), tok, max_length=4096, per_turn=True)
    assert [s.input_ids for s in from_trl] == [s.input_ids for s in from_records]
    assert [s.labels for s in from_trl] == [s.labels for s in from_records]


def test_truncation_drops_samples_without_labels(tok):
    samples, stats = build_samples([MULTI], tok, max_length=60, per_turn=True)
    assert stats.dropped == 3 and samples == [] and "max_length=60" in stats.notes[0]
    with pytest.raises(RecordError, match=r"training row 0: .*at least one assistant"):
        build_samples(
            [{"messages": [{"role": "user", "content": "x"}]}], tok, max_length=64, per_turn=True
        )


def test_collator_and_shifted_segments_hand_computed():
    features = [
        {"input_ids": [5, 6, 7, 8], "labels": [-100, -100, 7, 8], "segment_think": [0, 0, 1, 0]},
        {"input_ids": [9, 10], "labels": [-100, 10], "segment_think": [0, 0]},
    ]
    batch = SftCollator(pad_token_id=0)(features)
    assert batch["input_ids"].tolist() == [[5, 6, 7, 8], [9, 10, 0, 0]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1, 1], [1, 1, 0, 0]]
    assert batch["labels"].tolist() == [[-100, -100, 7, 8], [-100, 10, -100, -100]]
    logits = torch.arange(2 * 4 * 3, dtype=torch.float).view(2, 4, 3)
    masks = {"think": batch["segment_think"]}
    shifted_logits, labels, seg = shift_segments(logits, batch["labels"], masks)
    assert torch.equal(shifted_logits, logits[:, :3])
    assert labels.tolist() == [[-100, 7, 8], [10, -100, -100]]
    assert seg["think"].tolist() == [[False, True, False], [False, False, False]]
    assert seg["call"].tolist() == [[False, False, True], [True, False, False]]


# ---- training through the backend ----------------------------------------------------------


def make_job(
    run_dir: Path,
    rows,
    *,
    steps: int,
    eval_rows=(),
    loss=None,
    lr: float = 1e-2,
    save_steps: int = 0,
    resume=False,
):
    trainer = TrainerConfig(
        backend="hf-sft",
        learning_rate=lr,
        max_steps=steps,
        batch_size=1,
        micro_batch_size=1,
        save_steps=save_steps,
        resume=resume,
        seed=0,
        sft=SFTConfig(max_length=256, lr_scheduler="constant"),
    )
    run = Run(run_dir, quiet=True, resume=resume)
    return TrainJob(
        model=ModelConfig(name_or_path="tiny:qwen3"),
        trainer=trainer,
        run=run,
        train_rows=rows,
        eval_rows=eval_rows,
        loss=loss,
    )


def metrics_lines(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def test_tiny_sft_memorises_a_sample_and_logs(tmp_path):
    run_dir = tmp_path / "run"
    job = make_job(run_dir, [SHORT], steps=6, lr=5e-2, eval_rows=[SHORT])
    result = HfSftBackend().train(job)
    lines = [m for m in metrics_lines(run_dir) if "loss" in m and "grad_norm" in m]
    assert [m["step"] for m in lines] == [1, 2, 3, 4, 5, 6]
    first, last = lines[0]["loss"], lines[-1]["loss"]
    assert first > 10.0  # ~ln(151669) = 11.9 for a random model
    assert last < 0.5 * first
    assert all(m["lr"] == pytest.approx(5e-2) for m in lines)
    assert result.metrics["final_loss"] == pytest.approx(last)
    assert result.metrics["eval_loss"] < 0.5 * first
    assert (result.outputs["model"] / "config.json").is_file()
    assert [p.name for p in result.checkpoints] == ["checkpoint-6"]
    n_labels = int(result.metrics["supervised_tokens"])
    assert job.run.sections == [
        (
            "hf-sft data",
            "| rows | samples | truncated | dropped | supervised tokens |\n|---|---|---|---|---|\n"
            f"| 1 | 1 | 0 | 0 | {n_labels} |",
        )
    ]


def test_resume_continues_from_the_latest_checkpoint(tmp_path):
    rows = [SHORT, MULTI]
    straight = tmp_path / "straight"
    HfSftBackend().train(make_job(straight, rows, steps=3))
    resumed = tmp_path / "resumed"
    first = HfSftBackend().train(make_job(resumed, rows, steps=2, save_steps=1))
    assert [p.name for p in first.checkpoints] == ["checkpoint-1", "checkpoint-2"]
    second = HfSftBackend().train(make_job(resumed, rows, steps=3, save_steps=1, resume=True))
    assert second.metrics["global_step"] == 3.0
    assert [p.name for p in second.checkpoints][-1] == "checkpoint-3"
    steps = [m["step"] for m in metrics_lines(resumed) if "grad_norm" in m]
    assert steps == [1, 2, 3]  # the second run trained step 3 only
    a = tiny_model_weights(straight / "model")
    b = tiny_model_weights(resumed / "model")
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)


def tiny_model_weights(path: Path) -> dict:
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(path).state_dict()


class LearnableWeight(torch.nn.Module):
    """A test double for a custom loss with a trainable weight (like FunReason's learnable
    alpha): alpha * CE(think) + (1 - alpha) * CE(call); records what it receives."""

    def __init__(self):
        super().__init__()
        self.raw = torch.nn.Parameter(torch.tensor(0.0))
        self.calls = []

    def alpha(self):
        return torch.sigmoid(self.raw)

    def forward(self, logits, labels, segments):
        self.calls.append((labels.clone(), {k: v.clone() for k, v in segments.items()}))
        ce = torch.nn.functional.cross_entropy(
            logits.flatten(0, 1).float(), labels.clamp(min=0).flatten(), reduction="none"
        ).view_as(labels)
        think = (ce * segments["think"]).sum() / segments["think"].sum().clamp(min=1)
        call = (ce * segments["call"]).sum() / segments["call"].sum().clamp(min=1)
        return self.alpha() * think + (1 - self.alpha()) * call


def test_loss_hook_gets_segments_and_trains_its_parameters(tmp_path, tok):
    loss = LearnableWeight()
    run_dir = tmp_path / "run"
    result = HfSftBackend().train(make_job(run_dir, [SHORT], steps=2, loss=loss, lr=1e-1))
    assert len(loss.calls) == 2
    labels, segments = loss.calls[0]
    (sample,), _ = build_samples([SHORT], tok, max_length=256, per_turn=True)
    assert labels.tolist() == [sample.labels[1:]]
    # hand-computed: after the P prompt tokens the answer is <think> a </think> ok <|im_end|>;
    # shifted by one, label position t holds token t + 1
    n_prompt = sum(1 for t in sample.labels if t == IGNORE_INDEX)
    n_a, n_ok = len(enc(tok, "a")), len(enc(tok, "ok"))
    think = [n_prompt - 1 + i for i in range(n_a + 2)]
    call = [think[-1] + 1 + i for i in range(n_ok + 1)]
    assert segments["think"][0].nonzero().flatten().tolist() == think
    assert segments["call"][0].nonzero().flatten().tolist() == call
    # the loss's own parameter is optimised, logged and checkpointed
    assert loss.raw.item() != 0.0
    alphas = [m["loss_alpha"] for m in metrics_lines(run_dir) if "loss_alpha" in m]
    assert len(alphas) == 2 and alphas[0] < 0.5  # logged after each step, from sigmoid(0)
    assert alphas[-1] == pytest.approx(loss.alpha().item())
    saved = torch.load(result.checkpoints[-1] / LOSS_STATE_FILE)
    assert saved["raw"].item() == pytest.approx(loss.raw.item())
    assert result.metrics["global_step"] == 2.0


def test_batch_size_must_be_a_multiple_of_micro_batch(tmp_path):
    job = make_job(tmp_path / "run", [SHORT], steps=1)
    bad = TrainJob(
        model=job.model,
        trainer=TrainerConfig(backend="hf-sft", batch_size=3, micro_batch_size=2),
        run=job.run,
        train_rows=[SHORT],
    )
    with pytest.raises(AworldError, match=r"multiple of trainer\.micro_batch_size=2"):
        HfSftBackend().train(bad)


class TestHfSftContract(BackendContract):
    """The registered ``hf-sft`` backend: its shape, two toy steps and a resume."""

    backend = "hf-sft"
    kind = "sft"


def test_supervised_loss_equals_the_full_logits_loss_with_its_gradients(tok):
    """Logits only where a label follows: the model's own loss and gradients, both with the
    Trainer's token count (gradient accumulation) and without it."""
    from aworld_rl_core.backends.hf_sft import supervised_loss
    from aworld_rl_core.models import tiny_causal_lm

    model = tiny_causal_lm(tok)
    samples, _ = build_samples([MULTI, SHORT], tok, max_length=256, per_turn=True)
    batch = SftCollator(tok.pad_token_id)([s.as_features() for s in samples])
    for key in [k for k in batch if k.startswith(SEGMENT_PREFIX)]:
        batch.pop(key)
    supervised = int((batch["labels"][:, 1:] != IGNORE_INDEX).sum())
    for count in (None, torch.tensor(supervised + 5)):
        model.zero_grad()
        full = model(**batch, num_items_in_batch=count).loss
        full.backward()
        expected = {n: p.grad.clone() for n, p in model.named_parameters()}
        model.zero_grad()
        ours = supervised_loss(model, dict(batch), count)
        ours.backward()
        assert ours.item() == pytest.approx(full.item(), rel=1e-5)
        for name, param in model.named_parameters():
            assert torch.allclose(param.grad, expected[name], atol=1e-6), name
    kept = model(
        **{k: v for k, v in batch.items() if k != "labels"}, logits_to_keep=torch.tensor([3])
    )
    assert kept.logits.shape[1] == 1
