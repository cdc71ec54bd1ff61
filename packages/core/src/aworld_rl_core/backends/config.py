"""Trainer configuration shared by every recipe; ``backend`` picks the backend."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from aworld_rl_core.backends.llamafactory.config import LlamaFactoryConfig
from aworld_rl_core.backends.verl.config import VerlConfig


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass(frozen=True, kw_only=True)
class ModelConfig:
    """The policy model."""

    name_or_path: str = field(
        default="tiny:qwen3",
        metadata=_help(
            "HF model id or local path; 'tiny:qwen3' / 'tiny:qwen2' build a tiny random model "
            "(offline, for CPU runs and tests)"
        ),
    )
    tokenizer: str | None = field(
        default=None, metadata=_help("tokenizer path; default: the model's, or Qwen3's offline")
    )
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = field(
        default="auto", metadata=_help("parameter dtype")
    )
    chat_template: str | None = field(
        default=None, metadata=_help("path of a Jinja chat template overriding the tokenizer's")
    )


@dataclass(frozen=True, kw_only=True)
class RLConfig:
    """GRPO-family settings, shared by the ``trl`` and ``verl`` backends."""

    group_size: int = field(default=8, metadata=_help("completions sampled per prompt (GRPO n)"))
    kl_coef: float = field(default=0.0, metadata=_help("KL penalty coefficient (beta)"))
    kl_estimator: Literal["k1", "k2", "k3", "low_var_kl"] = field(
        default="low_var_kl", metadata=_help("KL estimator (low_var_kl = k3 clipped)")
    )
    clip_low: float = field(default=0.2, metadata=_help("lower PPO clip range (epsilon low)"))
    clip_high: float = field(default=0.28, metadata=_help("upper PPO clip range (epsilon high)"))
    dual_clip: float | None = field(
        default=None, metadata=_help("dual-clip constant c for negative advantages (verl only)")
    )
    entropy_coef: float = field(default=0.0, metadata=_help("entropy bonus coefficient"))
    max_turns: int = field(default=8, metadata=_help("max model turns per episode"))
    max_new_tokens: int = field(default=256, metadata=_help("max new tokens per model turn"))
    max_response_tokens: int = field(
        default=2048, metadata=_help("max tokens of the whole multi-turn response")
    )
    temperature: float = field(default=1.0, metadata=_help("sampling temperature"))
    top_p: float = field(default=1.0, metadata=_help("nucleus sampling p"))


@dataclass(frozen=True, kw_only=True)
class SFTConfig:
    """Supervised fine-tuning settings (``hf-sft`` and ``llamafactory``)."""

    max_length: int = field(default=2048, metadata=_help("max tokens per training sample"))
    per_turn: bool = field(
        default=True,
        metadata=_help("split multi-turn samples per assistant turn; earlier turns are context"),
    )
    warmup_ratio: float = field(default=0.0, metadata=_help("LR warm-up fraction"))
    lr_scheduler: str = field(default="cosine", metadata=_help("LR scheduler name"))


@dataclass(frozen=True, kw_only=True)
class TrainerConfig:
    """How to train: the backend and the optimisation settings every backend reads."""

    backend: str = field(
        default="trl",
        metadata=_help("training backend: trl (CPU / 1 GPU RL), hf-sft, verl, llamafactory"),
    )
    learning_rate: float = field(default=1e-6, metadata=_help("peak learning rate"))
    max_steps: int = field(default=-1, metadata=_help("optimizer steps; -1 = use epochs"))
    epochs: float = field(default=1.0, metadata=_help("passes over the training rows"))
    batch_size: int = field(
        default=8, metadata=_help("rows per optimizer step (RL: prompts per step)")
    )
    micro_batch_size: int = field(default=1, metadata=_help("rows per forward pass"))
    weight_decay: float = field(default=0.0, metadata=_help("AdamW weight decay"))
    max_grad_norm: float = field(default=1.0, metadata=_help("gradient clipping norm"))
    seed: int = field(default=42, metadata=_help("random seed"))
    save_steps: int = field(default=0, metadata=_help("checkpoint every N steps; 0 = at the end"))
    logging_steps: int = field(default=1, metadata=_help("log metrics every N steps"))
    resume: bool = field(
        default=False, metadata=_help("resume from the latest checkpoint in the run directory")
    )
    rl: RLConfig = field(default_factory=RLConfig, metadata=_help("RL (GRPO) settings"))
    sft: SFTConfig = field(default_factory=SFTConfig, metadata=_help("SFT settings"))
    verl: VerlConfig = field(default_factory=VerlConfig, metadata=_help("verl launch settings"))
    llamafactory: LlamaFactoryConfig = field(
        default_factory=LlamaFactoryConfig, metadata=_help("LLaMA-Factory settings")
    )
