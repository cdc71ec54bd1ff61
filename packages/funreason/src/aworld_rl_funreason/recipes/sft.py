"""``funreason.sft``: SFT on refined CoT function-calling data with the SRML loss.

The rows are core records (BFCL system prompt, the query, then ``<think>...</think>`` + call
list as the assistant reply); the loss is the registered ``funreason.srml`` named by
``trainer.loss`` (the backend resolves it: ``hf-sft`` on CPU / one GPU, ``llamafactory`` for
the paper's multi-GPU setting).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

from aworld_rl_core.backends.llamafactory.config import LlamaFactoryConfig
from aworld_rl_core.config import limit_option, option
from aworld_rl_core.models.config import ModelConfig
from aworld_rl_core.runs import Run, RunResult
from aworld_rl_core.trainer_config import SFTConfig, TrainerConfig, section, with_section
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
    limit: int | None = limit_option("use only the first N samples")
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
    overlong: Literal["drop", "cut"] = option(
        "drop",
        help="a sample longer than trainer.sft.max_length: drop it (counted as "
        "dropped_overlong; its call list would be cut off) or let the backend cut it",
    )


SRML = "funreason.srml"
"""The registered loss; ``trainer.loss=funreason.srml`` + ``trainer.loss_options`` select it."""


def srml_trainer(**fields: Any) -> TrainerConfig:
    """A trainer section training on SRML (alpha 0.7 fixed: v1) plus ``fields``."""
    fields.setdefault("loss_options", {"alpha": 0.7})
    return TrainerConfig(loss=SRML, **fields)


def paper_trainer() -> TrainerConfig:
    """The paper's SFT setting (batch 512, lr 4e-5, warm-up 0.05, 8 GPUs) through LLaMA-Factory
    with DeepSpeed ZeRO-3 (core's config, ``trainer.llamafactory.zero_stage``); epochs (3) and
    max length (8192) are not stated first-hand."""
    return srml_trainer(
        backend="llamafactory",
        learning_rate=4e-5,
        batch_size=512,
        micro_batch_size=2,
        epochs=3.0,
        sft=SFTConfig(max_length=8192, warmup_ratio=0.05, per_turn=True),
        sections={"llamafactory": LlamaFactoryConfig(nproc_per_node=8, zero_stage=3)},
    )


@dataclass(frozen=True, kw_only=True)
class SftRecipeConfig:
    """FunReason SFT: refined data, SRML loss, the chosen backend."""

    data: SftDataConfig = option(factory=SftDataConfig, help="training data")
    model: ModelConfig = option(
        factory=lambda: ModelConfig(name_or_path="Qwen/Qwen2.5-Coder-7B-Instruct"),
        help="base model (paper: Qwen2.5-Coder-7B-Instruct)",
    )
    trainer: TrainerConfig = option(
        factory=paper_trainer,
        help="backend, loss (trainer.loss=funreason.srml, trainer.loss_options.alpha=0.7, "
        "learnable=true for v3; trainer.loss=null: plain cross-entropy) and optimisation "
        "(paper: batch 512, lr 4e-5, warm-up 0.05)",
    )


def sft_rows(samples: list[FcSample], cfg: SftDataConfig) -> tuple[list[dict[str, Any]], int]:
    """Record dicts for the backend, and how many samples were skipped for lack of reasoning."""
    use = [s for s in samples if s.reasoning or not cfg.require_reasoning]
    return [to_record(s, cfg.prompt).to_dict() for s in use], len(samples) - len(use)


def train_on_samples(
    samples: list[FcSample], cfg: SftRecipeConfig, run: Run, *, model: ModelConfig | None = None
) -> RunResult:
    """SFT ``samples`` with ``cfg``'s loss and backend (``model`` overrides ``cfg.model``)."""
    rows, skipped = sft_rows(samples, cfg.data)
    if not rows:
        raise ValueError(
            f"no training rows: {len(samples)} samples, {skipped} without reasoning "
            "(set data.require_reasoning=false or refine with fcdr.generate_cot=true)"
        )
    result = train_on_rows(rows, cfg, run, model=model)
    return RunResult(
        metrics={**result.metrics, "skipped_no_reasoning": float(skipped)},
        outputs=dict(result.outputs),
        checkpoints=list(result.checkpoints),
    )


def train_on_rows(
    rows: list[dict[str, Any]],
    cfg: SftRecipeConfig,
    run: Run,
    *,
    model: ModelConfig | None = None,
) -> RunResult:
    """SFT on core record dicts (``messages``: one or more assistant replies, each
    ``<think>...</think>`` then the answer) with ``cfg``'s loss and backend; ``cfg.data.overlong``
    applies (``model`` overrides ``cfg.model``)."""
    from aworld_rl_core.backends.base import TrainJob
    from aworld_rl_core.backends.plan import planning_active
    from aworld_rl_core.registry import get_trainer

    overlong = 0
    if cfg.data.overlong == "drop" and not planning_active():  # a plan loads no tokenizer
        rows, overlong = drop_overlong(rows, model or cfg.model, cfg.trainer)
        if not rows:
            raise ValueError(
                f"every sample is longer than trainer.sft.max_length={cfg.trainer.sft.max_length}"
            )
    write_jsonl(run.dir / "sft_rows.jsonl", rows)
    job = TrainJob(
        model=model or cfg.model,
        trainer=with_deepspeed_path(cfg.trainer),
        run=run,
        train_rows=rows,
    )
    result = get_trainer(cfg.trainer.backend)().train(job)
    metrics = {
        **result.metrics,
        "sft_rows": float(len(rows)),
        "dropped_overlong": float(overlong),
    }
    return RunResult(
        metrics=metrics, outputs=dict(result.outputs), checkpoints=list(result.checkpoints)
    )


def drop_overlong(
    rows: list[dict[str, Any]], model: ModelConfig, trainer: TrainerConfig
) -> tuple[list[dict[str, Any]], int]:
    """The rows whose tokenized samples (core's ``sft_data``, the model's tokenizer and chat
    template) fit ``trainer.sft.max_length``, and how many were dropped."""
    from aworld_rl_core.backends.sft_data import build_samples
    from aworld_rl_core.models import load_tokenizer

    tokenizer, limit = load_tokenizer(model), trainer.sft.max_length
    keep = []
    for row in rows:
        samples, _ = build_samples(
            [row], tokenizer, max_length=2**31, per_turn=trainer.sft.per_turn
        )
        if all(len(s.input_ids) <= limit for s in samples):
            keep.append(row)
    return keep, len(rows) - len(keep)


def with_deepspeed_path(trainer: TrainerConfig) -> TrainerConfig:
    """``trainer`` with a ``package:rel/path`` DeepSpeed config resolved to a file path."""
    lf = section(trainer, LlamaFactoryConfig)
    if not lf.deepspeed:
        return trainer
    return with_section(trainer, dataclasses.replace(lf, deepspeed=str(resolve_path(lf.deepspeed))))


def run(cfg: SftRecipeConfig, run: Run) -> RunResult:
    """Read the samples and train."""
    samples = read_samples(resolve_path(cfg.data.path), cfg.data.limit)
    return train_on_samples(samples, cfg, run)
