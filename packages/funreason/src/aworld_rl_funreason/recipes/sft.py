"""``funreason.sft``: SFT on refined CoT function-calling data with the SRML loss.

The rows are core records (BFCL system prompt, the query, then ``<think>...</think>`` + call
list as the assistant reply); the loss is handed to the chosen backend's loss hook (``hf-sft``
on CPU / one GPU, ``llamafactory`` for the paper's multi-GPU setting).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from aworld_rl_core.backends.config import ModelConfig, SFTConfig, TrainerConfig
from aworld_rl_core.config import option
from aworld_rl_core.runs import Run, RunResult
from aworld_rl_funreason.data import FcSample, read_samples, to_record, write_jsonl
from aworld_rl_funreason.paths import resolve_path


@dataclass(frozen=True, kw_only=True)
class SftDataConfig:
    """Training samples."""

    path: str = option(
        "",
        help=(
            "refined samples (kept.jsonl of funreason.refine), FunReason samples or xLAM records;"
            " 'package:rel/path' for packaged files"
        ),
    )
    limit: int | None = option(None, help="use only the first N samples")
    prompt: Literal["bfcl", "chat_tools"] = option(
        "bfcl",
        help=(
            "bfcl: BFCL's prompting-mode system prompt with the tool docs (the paper); "
            "chat_tools: tools through the chat template"
        ),
    )
    require_reasoning: bool = option(
        True, help="skip samples without reasoning (SRML needs a think part)"
    )


@dataclass(frozen=True, kw_only=True)
class LossConfig:
    """The token loss."""

    kind: Literal["srml", "ce"] = option(
        "srml", help="srml: alpha-balanced think/result loss; ce: plain SFT"
    )
    alpha: float = option(0.7, help="weight of the reasoning part (init if learnable)")
    learnable: bool = option(
        False,
        help="train alpha with the model (v3 BalanceSFT); false: fixed (v1)",
    )
    parametrization: Literal["sigmoid", "clamp"] = option(
        "sigmoid", help="how a learnable alpha stays in [0, 1]"
    )
    reduction: Literal["per_sample", "pooled"] = option(
        "per_sample",
        help="part means per sample then averaged (per_sample) or over the batch (pooled)",
    )


def _paper_trainer() -> TrainerConfig:
    return TrainerConfig(
        backend="llamafactory",
        learning_rate=4e-5,
        batch_size=512,
        micro_batch_size=4,
        epochs=3.0,
        sft=SFTConfig(max_length=8192, warmup_ratio=0.05, per_turn=True),
    )


@dataclass(frozen=True, kw_only=True)
class SftRecipeConfig:
    """FunReason SFT: refined data, SRML loss, the chosen backend."""

    data: SftDataConfig = option(factory=SftDataConfig, help="training data")
    loss: LossConfig = option(factory=LossConfig, help="SRML loss")
    model: ModelConfig = option(
        factory=lambda: ModelConfig(name_or_path="Qwen/Qwen2.5-Coder-7B-Instruct"),
        help="base model (paper: Qwen2.5-Coder-7B-Instruct)",
    )
    trainer: TrainerConfig = option(
        factory=_paper_trainer,
        help="backend and optimisation (paper: batch 512, lr 4e-5, warm-up 0.05)",
    )


def make_loss(cfg: LossConfig) -> Any:
    """The loss for the backend (None: the backend's own cross-entropy; ``trainer.loss``, when
    set, names the loss instead of this section)."""
    if cfg.kind == "ce":
        return None
    from aworld_rl_funreason.loss import SRMLLoss

    return SRMLLoss(
        cfg.alpha,
        learnable=cfg.learnable,
        parametrization=cfg.parametrization,
        reduction=cfg.reduction,
    )


def sft_rows(samples: list[FcSample], cfg: SftDataConfig) -> tuple[list[dict[str, Any]], int]:
    """Record dicts for the backend, and how many samples were skipped for lack of reasoning."""
    use = [s for s in samples if s.reasoning or not cfg.require_reasoning]
    return [to_record(s, cfg.prompt).to_dict() for s in use], len(samples) - len(use)


def train_on_samples(
    samples: list[FcSample], cfg: SftRecipeConfig, run: Run, *, model: ModelConfig | None = None
) -> RunResult:
    """SFT ``samples`` with ``cfg``'s loss and backend (``model`` overrides ``cfg.model``)."""
    from aworld_rl_core.backends.base import TrainJob
    from aworld_rl_core.registry import get_trainer

    rows, skipped = sft_rows(samples, cfg.data)
    if not rows:
        raise ValueError(
            f"no training rows: {len(samples)} samples, {skipped} without reasoning "
            "(set data.require_reasoning=false or refine with fcdr.generate_cot=true)"
        )
    write_jsonl(run.dir / "sft_rows.jsonl", rows)
    job = TrainJob(
        model=model or cfg.model,
        trainer=cfg.trainer,
        run=run,
        train_rows=rows,
        loss=None if cfg.trainer.loss else make_loss(cfg.loss),
    )
    result = get_trainer(cfg.trainer.backend)().train(job)
    metrics = {
        **result.metrics,
        "sft_rows": float(len(rows)),
        "skipped_no_reasoning": float(skipped),
    }
    loss: Any = job.loss  # SRML: a module with a learnable alpha
    if loss is not None:
        metrics["loss_alpha"] = loss.alpha_value()
    elif "loss_alpha" in result.metrics:
        metrics["loss_alpha"] = result.metrics["loss_alpha"]
    return RunResult(
        metrics=metrics, outputs=dict(result.outputs), checkpoints=list(result.checkpoints)
    )


def run(cfg: SftRecipeConfig, run: Run) -> RunResult:
    """Read the samples and train."""
    samples = read_samples(resolve_path(cfg.data.path), cfg.data.limit)
    return train_on_samples(samples, cfg, run)
