"""The token-loss trainer subclass, over a plain transformers Trainer (in-process, no subprocess).

Covers what the LLaMA-Factory run cannot show from outside: a trainable ``nn.Module`` loss joins
the optimizer, its state is saved with each checkpoint and restored on resume, and ``alpha()``
is logged as ``loss_alpha``.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("accelerate")

from aworld_rl_core.backends.llamafactory.probe import mean_token_cross_entropy  # noqa: E402

PROMPT, ANSWER = "Add 2 and 3.", "<think>Easy.</think>5"


class ScaledCrossEntropy(torch.nn.Module):
    """scale * mean CE, with a trainable scale (a stand-in for a learnable-weight loss)."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = torch.nn.Parameter(torch.tensor(1.0))
        self.segments: list[dict[str, torch.Tensor]] = []

    def alpha(self) -> torch.Tensor:
        return self.scale.detach()

    def forward(self, logits, labels, segments):
        self.segments.append({k: v.clone() for k, v in segments.items()})
        return self.scale * mean_token_cross_entropy(logits, labels)


@pytest.fixture
def sample(tiny_tokenizer):
    prompt = tiny_tokenizer.encode(PROMPT, add_special_tokens=False)
    answer = tiny_tokenizer.encode(ANSWER, add_special_tokens=False)
    ids = prompt + answer
    return {
        "input_ids": torch.tensor(ids),
        "attention_mask": torch.ones(len(ids), dtype=torch.long),
        "labels": torch.tensor([-100] * len(prompt) + answer),
    }


def _trainer(cls, tiny_lm, tiny_tokenizer, sample, out_dir):
    args = transformers.TrainingArguments(
        output_dir=str(out_dir),
        max_steps=2,
        save_strategy="steps",
        save_steps=1,
        learning_rate=1e-2,
        per_device_train_batch_size=1,
        logging_steps=1,
        use_cpu=True,
        report_to="none",
        seed=0,
    )
    return cls(
        model=tiny_lm,
        args=args,
        train_dataset=[sample],
        processing_class=tiny_tokenizer,
        data_collator=transformers.default_data_collator,
    )


def test_trainable_loss_is_optimized_saved_restored_and_logged(
    tiny_lm, tiny_tokenizer, sample, tmp_path
):
    from aworld_rl_core.backends.llamafactory.trainer import LOSS_STATE_FILE, token_loss_trainer

    loss = ScaledCrossEntropy()
    cls = token_loss_trainer(transformers.Trainer, loss)
    assert cls.__name__ == "TokenLossTrainer" and issubclass(cls, transformers.Trainer)
    trainer = _trainer(cls, tiny_lm, tiny_tokenizer, sample, tmp_path / "out")
    trainer.train()

    # d(loss)/d(scale) = CE > 0, so the optimizer lowered the scale
    assert loss.scale.item() < 1.0
    groups = trainer.optimizer.param_groups
    assert any(any(p is loss.scale for p in g["params"]) for g in groups)
    alphas = [h["loss_alpha"] for h in trainer.state.log_history if "loss_alpha" in h]
    assert len(alphas) == 2 and alphas[-1] == pytest.approx(loss.scale.item())

    # the segments the loss saw: shifted labels, think = "<think>Easy.</think>", call = "5"
    labels = sample["labels"][1:]
    seen = loss.segments[0]
    assert tiny_tokenizer.decode(labels[seen["think"][0]]) == "<think>Easy.</think>"
    assert tiny_tokenizer.decode(labels[seen["call"][0]]) == "5"

    saved = {
        step: torch.load(tmp_path / "out" / f"checkpoint-{step}" / LOSS_STATE_FILE)["scale"]
        for step in (1, 2)
    }
    assert saved[1].item() > saved[2].item() == pytest.approx(loss.scale.item())

    # resume from the last checkpoint: the fresh loss gets the saved scale back
    fresh = ScaledCrossEntropy()
    resumed = _trainer(
        token_loss_trainer(transformers.Trainer, fresh),
        tiny_lm,
        tiny_tokenizer,
        sample,
        tmp_path / "out",
    )
    resumed.train(resume_from_checkpoint=str(tmp_path / "out" / "checkpoint-2"))
    assert fresh.scale.item() == pytest.approx(saved[2].item())
