"""Launch settings of the verl backend (GPU only).

Algorithm knobs (group size, KL, clip ranges, entropy, lengths, sampling) come from
``trainer.rl``; optimisation knobs (lr, batch sizes, steps, seed, checkpoints) from ``trainer``.
This class holds what only verl has: where it runs, the rollout engine, verl's names for the
estimator, loss and agent loop, and PPO's own parts: GAE (``gamma``, ``lam``), the KL penalty in
the reward (``kl_in_reward``) and the critic (``critic``, used with ``adv_estimator=gae``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from aworld_rl_core.config import option


@dataclass(frozen=True, kw_only=True)
class CriticConfig:
    """verl's critic, the value model GAE needs (used only with ``adv_estimator=gae``)."""

    model_path: str = option(
        "", help="the critic's initial weights (a value head is added); empty: the policy's model"
    )
    learning_rate: float = option(1e-5, help="critic learning rate", gt=0)
    warmup_ratio: float = option(0.0, help="critic LR warm-up fraction of the steps", ge=0, le=1)
    warmup_steps: int = option(
        0,
        help="steps that train only the critic before the actor starts (trainer.critic_warmup)",
        ge=0,
    )
    micro_batch_size: int | None = option(
        None, help="critic samples per forward pass per GPU; default: trainer.micro_batch_size"
    )
    cliprange_value: float = option(0.5, help="value clipping range", gt=0)
    gradient_checkpointing: bool = option(True, help="activation checkpointing in the critic")
    param_offload: bool = option(False, help="FSDP: offload critic parameters to CPU")
    optimizer_offload: bool = option(False, help="FSDP: offload critic optimizer states to CPU")


@dataclass(frozen=True, kw_only=True)
class VerlConfig:
    """Where and how verl runs; algorithm knobs come from ``trainer.rl``."""

    rollout_engine: Literal["vllm", "sglang"] = option("vllm", help="rollout engine")
    nnodes: int = option(1, help="number of nodes")
    gpus_per_node: int = option(8, help="GPUs per node")
    tensor_parallel: int = option(1, help="rollout tensor parallel size")
    gpu_memory_utilization: float = option(
        0.6, help="fraction of GPU memory for the rollout engine"
    )
    ray_address: str | None = option(
        None,
        help="Ray dashboard address (http://head:8265): submit as a Ray job instead of running "
        "main_ppo locally",
    )
    dry_run: bool = option(False, help="write and print the launch command and config, run nothing")
    resolve_config: bool = option(
        True,
        help="dry run: when verl is installed here, also resolve and save verl's full config "
        "(main_ppo --cfg job), which validates every override",
    )
    extra_overrides: tuple[str, ...] = option(
        (), help="extra Hydra overrides passed to verl verbatim (applied last)"
    )
    adv_estimator: str = option(
        "grpo", help="verl advantage estimator (grpo, rloo, ... or one a package registered)"
    )
    policy_loss: str = option(
        "vanilla", help="verl policy loss mode (vanilla, gspo, ... or one a package registered)"
    )
    loss_agg_mode: Literal[
        "token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"
    ] = option("token-mean", help="how token losses are aggregated")
    max_prompt_length: int = option(
        2048, help="max prompt tokens (longer prompts are filtered out)"
    )
    gamma: float = option(1.0, help="GAE discount (adv_estimator=gae)", ge=0, le=1)
    lam: float = option(1.0, help="GAE lambda (adv_estimator=gae)", ge=0, le=1)
    kl_in_reward: bool = option(
        False,
        help="PPO's KL penalty: subtract kl_in_reward_coef x KL(policy || reference) from the "
        "token rewards (trainer.rl.kl_coef is the KL *loss*; set it to 0 with this)",
    )
    kl_in_reward_coef: float = option(0.001, help="KL-in-reward coefficient", ge=0)
    kl_in_reward_ctrl: Literal["fixed", "adaptive"] = option(
        "fixed", help="KL-in-reward controller (adaptive targets kl_in_reward_target)"
    )
    kl_in_reward_target: float = option(0.1, help="adaptive controller: target KL", gt=0)
    kl_penalty: Literal["kl", "abs", "mse", "low_var_kl", "full"] = option(
        "kl", help="KL estimator of the in-reward penalty"
    )
    actor_warmup_ratio: float = option(
        0.0, help="actor LR warm-up fraction of the steps", ge=0, le=1
    )
    ppo_epochs: int = option(1, help="PPO epochs over each batch (actor and critic)", ge=1)
    critic: CriticConfig = option(factory=CriticConfig, help="the critic (adv_estimator=gae)")
    mini_batch_size: int | None = option(
        None, help="prompts per PPO mini-batch (actor update); default: trainer.batch_size"
    )
    agent_loop: str = option(
        "aworld_env", help="agent loop for environment rows (ours drives aworld Environments)"
    )
    agent_workers: int = option(8, help="agent loop worker processes")
    step_window_ms: float = option(
        10.0,
        help="a worker steps together the environments whose turns end within this window "
        "(one step_many, one service request per turn)",
        ge=0,
    )
    param_offload: bool = option(False, help="FSDP: offload parameters to CPU")
    optimizer_offload: bool = option(False, help="FSDP: offload optimizer states to CPU")
    gradient_checkpointing: bool = option(True, help="activation checkpointing in the actor")
    dynamic_batch_size: bool = option(
        False,
        help="pack micro-batches up to max_tokens_per_gpu tokens (verl use_dynamic_bsz) instead "
        "of trainer.micro_batch_size sequences",
    )
    max_tokens_per_gpu: int = option(
        16384,
        help="dynamic batch size: tokens per GPU in one actor / log-prob forward pass "
        "(ppo_max_token_len_per_gpu)",
        ge=1,
    )
    fused_kernels: bool = option(
        False, help="fused log-prob / entropy kernels: no full-vocabulary logits in memory"
    )
    entropy_checkpointing: bool = option(
        False, help="recompute the entropy in the backward pass instead of keeping it"
    )
    max_num_batched_tokens: int | None = option(
        None, help="rollout engine: tokens per scheduler step (null: verl's default)", ge=1
    )
    max_model_len: int | None = option(
        None, help="rollout engine: max prompt + response tokens (null: the model's)", ge=1
    )
    save_hf_model: bool = option(
        True,
        help="checkpoints also hold the model in HF format (actor/huggingface), the directory "
        "a later run or an evaluation loads",
    )
    rollout_is: Literal["token", "sequence"] | None = option(
        None,
        help="rollout correction (algorithm.rollout_correction.rollout_is): truncated importance "
        "weights between the rollout engine's and the trainer's log-probs, per token or per "
        "sequence; null = off (the papers' setting)",
    )
    rollout_is_threshold: float = option(
        2.0, help="rollout correction: upper truncation of the importance weights", gt=0
    )
    rollout_rs: str | None = option(
        None,
        help="rollout correction: rejection sampling mode (verl's rollout_rs, e.g. token_k1, "
        "seq_mean_k1); null = off",
    )
    rollout_rs_threshold: float | None = option(
        None, help="rollout correction: the rejection threshold (verl's rollout_rs_threshold)"
    )
    rollout_bypass_mode: bool = option(
        False,
        help="rollout correction: use the rollout engine's log-probs as the old policy (skips "
        "the trainer's recomputation)",
    )
    trainer_mode: Literal["sync", "colocate_async", "separate_async"] = option(
        "sync",
        help="verl's V1 trainer mode (trainer.v1.trainer_mode): sync (on-policy, the papers'), "
        "colocate_async or separate_async (rollout and training overlap; off-policy by up to "
        "parameter_sync_step updates)",
    )
    parameter_sync_step: int = option(
        4,
        help="separate_async: policy updates between weight syncs to the rollout engine "
        "(must divide trainer.batch_size)",
        ge=1,
    )
    check_rollout_engine: bool = option(
        True,
        help="before a local launch, check that the rollout engine is installed at a version "
        "verl 0.9.1 supports (vLLM 0.18-0.24, SGLang >= 0.5.5)",
    )
    test_freq: int = option(-1, help="validate every N steps (-1: never; needs eval rows)")
    val_before_train: bool = option(False, help="validate before training")
    loggers: tuple[str, ...] = option(
        ("console",), help="verl loggers (console, wandb, tensorboard...); 'file' is always added"
    )
    project_name: str = option("aworld-rl", help="project name for loggers")
    experiment_name: str | None = option(
        None, help="experiment name for loggers; default: the run dir's name"
    )
    python: str = option("python3", help="Python executable on the cluster for Ray job submission")
    ray_runtime_env: str | None = option(
        None,
        help="JSON runtime env for `ray job submit` (pip, env_vars); the data dir is always the "
        "working dir",
    )
    ray_no_wait: bool = option(
        False, help="submit the Ray job and return without following its logs"
    )
