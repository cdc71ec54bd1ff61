"""Launch settings of the verl backend (GPU only).

Algorithm knobs (group size, KL, clip ranges, entropy, lengths, sampling) come from
``trainer.rl``; optimisation knobs (lr, batch sizes, steps, seed, checkpoints) from ``trainer``.
This class holds what only verl has: where it runs, the rollout engine, and verl's names for
the estimator, loss and agent loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass(frozen=True, kw_only=True)
class VerlConfig:
    """Where and how verl runs; algorithm knobs come from ``trainer.rl``."""

    rollout_engine: Literal["vllm", "sglang"] = field(
        default="vllm", metadata=_help("rollout engine")
    )
    nnodes: int = field(default=1, metadata=_help("number of nodes"))
    gpus_per_node: int = field(default=8, metadata=_help("GPUs per node"))
    tensor_parallel: int = field(default=1, metadata=_help("rollout tensor parallel size"))
    gpu_memory_utilization: float = field(
        default=0.6, metadata=_help("fraction of GPU memory for the rollout engine")
    )
    ray_address: str | None = field(
        default=None,
        metadata=_help(
            "Ray dashboard address (http://head:8265): submit as a Ray job instead of running "
            "main_ppo locally"
        ),
    )
    dry_run: bool = field(
        default=False, metadata=_help("write and print the launch command and config, run nothing")
    )
    resolve_config: bool = field(
        default=True,
        metadata=_help(
            "dry run: when verl is installed here, also resolve and save verl's full config "
            "(main_ppo --cfg job), which validates every override"
        ),
    )
    extra_overrides: tuple[str, ...] = field(
        default=(), metadata=_help("extra Hydra overrides passed to verl verbatim (applied last)")
    )
    adv_estimator: str = field(
        default="grpo",
        metadata=_help("verl advantage estimator (grpo, rloo, ... or one a package registered)"),
    )
    policy_loss: str = field(
        default="vanilla",
        metadata=_help("verl policy loss mode (vanilla, gspo, ... or one a package registered)"),
    )
    loss_agg_mode: Literal[
        "token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"
    ] = field(default="token-mean", metadata=_help("how token losses are aggregated"))
    max_prompt_length: int = field(
        default=2048, metadata=_help("max prompt tokens (longer prompts are filtered out)")
    )
    mini_batch_size: int | None = field(
        default=None,
        metadata=_help("prompts per PPO mini-batch (actor update); default: trainer.batch_size"),
    )
    agent_loop: str = field(
        default="aworld_env",
        metadata=_help("agent loop for environment rows (ours drives aworld Environments)"),
    )
    agent_workers: int = field(default=8, metadata=_help("agent loop worker processes"))
    param_offload: bool = field(default=False, metadata=_help("FSDP: offload parameters to CPU"))
    optimizer_offload: bool = field(
        default=False, metadata=_help("FSDP: offload optimizer states to CPU")
    )
    gradient_checkpointing: bool = field(
        default=True, metadata=_help("activation checkpointing in the actor")
    )
    test_freq: int = field(
        default=-1, metadata=_help("validate every N steps (-1: never; needs eval rows)")
    )
    val_before_train: bool = field(default=False, metadata=_help("validate before training"))
    loggers: tuple[str, ...] = field(
        default=("console",),
        metadata=_help("verl loggers (console, wandb, tensorboard...); 'file' is always added"),
    )
    project_name: str = field(default="aworld-rl", metadata=_help("project name for loggers"))
    experiment_name: str | None = field(
        default=None, metadata=_help("experiment name for loggers; default: the run dir's name")
    )
    python: str = field(
        default="python3", metadata=_help("Python executable on the cluster for Ray job submission")
    )
    ray_runtime_env: str | None = field(
        default=None,
        metadata=_help(
            "JSON runtime env for `ray job submit` (pip, env_vars); the data dir is always the "
            "working dir"
        ),
    )
    ray_no_wait: bool = field(
        default=False, metadata=_help("submit the Ray job and return without following its logs")
    )
