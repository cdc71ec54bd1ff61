"""Settings of the LLaMA-Factory backend."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from aworld_rl_core.config import option


@dataclass(frozen=True, kw_only=True)
class LlamaFactoryConfig:
    """LLaMA-Factory runs in its own environment (its pins conflict with TRL's)."""

    template: str | None = option(
        "qwen",
        help="LLaMA-Factory chat template name (qwen, qwen3, llama3, ...); null = derive it from "
        "the tokenizer's own Jinja chat template",
    )
    finetuning_type: str = option("full", help="full, lora or freeze")
    lora_rank: int = option(8, help="LoRA rank (finetuning_type=lora)")
    lora_alpha: int | None = option(None, help="LoRA alpha; default: 2 x lora_rank")
    lora_target: str = option("all", help="LoRA target modules, comma-separated, or 'all'")
    deepspeed: str | None = option(
        None, help="DeepSpeed config path (a file of your own; takes precedence over zero_stage)"
    )
    zero_stage: Literal[0, 2, 3] = option(
        0,
        help="DeepSpeed ZeRO stage when no deepspeed file is given: 0 = none (plain DDP); 2 = "
        "optimizer state and gradients sharded; 3 = parameters too. Writes "
        "<run>/llamafactory/zero<stage>.json (core's ZeRO config, batch sizes 'auto') and "
        "launches through torchrun (LLaMA-Factory takes DeepSpeed only in distributed mode)",
    )
    cpu_offload: bool = option(False, help="ZeRO: offload optimizer state to CPU memory")
    python: str | None = option(
        None,
        help="python of the LLaMA-Factory environment (e.g. /work/venvs/lf/bin/python); "
        "default: the current interpreter",
    )
    nproc_per_node: int = option(
        1, help="processes (GPUs) per node; > 1 (or DeepSpeed) launches through torchrun"
    )
    stub_torchaudio: bool = option(
        True,
        help="put a stub torchaudio first on the subprocess's PYTHONPATH (LLaMA-Factory imports "
        "torchaudio at import time and PyPI has none for CPU torch 2.13); set false when a "
        "matching torchaudio is installed",
    )
    preprocessing_num_workers: int | None = option(
        None, help="processes for dataset tokenization; null = in-process"
    )
    extra_args: dict[str, Any] = option(
        factory=dict,
        help="extra LLaMA-Factory arguments merged over the generated ones (e.g. {packing: true})",
    )
