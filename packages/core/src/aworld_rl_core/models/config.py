"""The policy model's configuration (every recipe's ``model`` section)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from aworld_rl_core.config import option


@dataclass(frozen=True, kw_only=True)
class ModelConfig:
    """The policy model."""

    name_or_path: str = option(
        "tiny:qwen3",
        help=(
            "HF model id or local path; 'tiny:qwen3' / 'tiny:qwen2' / 'tiny:qwen2_5_vl' build a "
            "tiny random model (offline, for CPU runs and tests)"
        ),
    )
    tokenizer: str | None = option(
        None, help="tokenizer path; default: the model's, or Qwen3's offline"
    )
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = option(
        "auto", help="parameter dtype"
    )
    chat_template: str | None = option(
        None, help="path of a Jinja chat template overriding the tokenizer's"
    )
