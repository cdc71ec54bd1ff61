"""Settings of the LLaMA-Factory backend."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, kw_only=True)
class LlamaFactoryConfig:
    """LLaMA-Factory runs in its own environment (its pins conflict with TRL's)."""

    template: str = field(default="qwen", metadata={"help": "LLaMA-Factory chat template name"})
    finetuning_type: str = field(default="full", metadata={"help": "full, lora or freeze"})
    deepspeed: str | None = field(default=None, metadata={"help": "DeepSpeed config path"})
    python: str | None = field(
        default=None,
        metadata={"help": "python of the LLaMA-Factory environment; default: the current one"},
    )
