"""Launch settings of the verl backend (GPU only)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal


@dataclass(frozen=True, kw_only=True)
class VerlConfig:
    """Where and how verl runs; algorithm knobs come from ``trainer.rl``."""

    rollout_engine: Literal["vllm", "sglang"] = field(
        default="vllm", metadata={"help": "rollout engine"}
    )
    nnodes: int = field(default=1, metadata={"help": "number of nodes"})
    gpus_per_node: int = field(default=8, metadata={"help": "GPUs per node"})
    tensor_parallel: int = field(default=1, metadata={"help": "rollout tensor parallel size"})
    gpu_memory_utilization: float = field(
        default=0.6, metadata={"help": "fraction of GPU memory for the rollout engine"}
    )
    ray_address: str | None = field(
        default=None, metadata={"help": "Ray cluster address: submit as a Ray job instead of locally"}
    )
    dry_run: bool = field(
        default=False, metadata={"help": "print the launch command and config, run nothing"}
    )
    extra_overrides: tuple[str, ...] = field(
        default=(), metadata={"help": "extra Hydra overrides passed to verl verbatim"}
    )
