"""Settings of the LLaMA-Factory backend."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass(frozen=True, kw_only=True)
class LlamaFactoryConfig:
    """LLaMA-Factory runs in its own environment (its pins conflict with TRL's)."""

    template: str | None = field(
        default="qwen",
        metadata=_help(
            "LLaMA-Factory chat template name (qwen, qwen3, llama3, ...); null = derive it from "
            "the tokenizer's own Jinja chat template"
        ),
    )
    finetuning_type: str = field(default="full", metadata=_help("full, lora or freeze"))
    lora_rank: int = field(default=8, metadata=_help("LoRA rank (finetuning_type=lora)"))
    lora_alpha: int | None = field(
        default=None, metadata=_help("LoRA alpha; default: 2 x lora_rank")
    )
    lora_target: str = field(
        default="all", metadata=_help("LoRA target modules, comma-separated, or 'all'")
    )
    deepspeed: str | None = field(default=None, metadata=_help("DeepSpeed config path"))
    python: str | None = field(
        default=None,
        metadata=_help(
            "python of the LLaMA-Factory environment (e.g. /work/venvs/lf/bin/python); "
            "default: the current interpreter"
        ),
    )
    nproc_per_node: int = field(
        default=1, metadata=_help("processes (GPUs) per node; > 1 launches through torchrun")
    )
    stub_torchaudio: bool = field(
        default=True,
        metadata=_help(
            "put a stub torchaudio first on the subprocess's PYTHONPATH (LLaMA-Factory imports "
            "torchaudio at import time and PyPI has none for CPU torch 2.13); set false when a "
            "matching torchaudio is installed"
        ),
    )
    preprocessing_num_workers: int | None = field(
        default=None, metadata=_help("processes for dataset tokenization; null = in-process")
    )
    extra_args: dict[str, Any] = field(
        default_factory=dict,
        metadata=_help(
            "extra LLaMA-Factory arguments merged over the generated ones (e.g. {packing: true})"
        ),
    )
