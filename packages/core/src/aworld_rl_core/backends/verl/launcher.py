"""Launching verl: parquet data, Hydra overrides, and the ``main_ppo`` / ``ray job submit`` command.

Nothing here imports verl (a dry run works without it). The mapping from our config:

- ``trainer``: lr, weight decay, grad clip, batch size (prompts per step), micro batch, epochs /
  max steps, seed, checkpoint frequency and resume.
- ``trainer.rl``: group size (``rollout.n``), KL loss coefficient and estimator, clip low/high,
  dual clip, entropy, max turns, max new tokens per turn, response length, sampling.
- ``trainer.verl``: rollout engine, nodes/GPUs, TP, memory, estimator, loss, agent loop, loggers.

Rows with an environment use our agent loop (``aworld_env``); other rows use verl's single-turn
loop and our ``compute_score`` (``pkg://`` path, so no shared filesystem is needed).
"""

from __future__ import annotations

import json
import math
import re
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aworld_rl_core.backends.batching import engine_limits, plan_batches
from aworld_rl_core.backends.plan import is_dry_run
from aworld_rl_core.backends.verl.config import VerlConfig
from aworld_rl_core.backends.verl.rows import SINGLE_TURN_LOOP, to_verl_row, write_parquet
from aworld_rl_core.backends.verl.specs import EpisodeSpec, reward_refs
from aworld_rl_core.errors import ConfigError
from aworld_rl_core.records.record import RecordError
from aworld_rl_core.refs import Ref, to_jsonable
from aworld_rl_core.trainer_config import section

if TYPE_CHECKING:
    from aworld_rl_core.backends.base import TrainJob
    from aworld_rl_core.backends.validation import InRunValidation
    from aworld_rl_core.models.config import ModelConfig
    from aworld_rl_core.trainer_config import TrainerConfig

REWARD_MODULE = "pkg://aworld_rl_core.backends.verl.reward"
STOP_CALLBACK = "aworld_rl_core.backends.verl.stopping.StopRuleCallback"
STOP_RULE_KEY = "trainer.aworld_stop_rule"
METRICS_FILE = "verl_metrics.jsonl"
_SAFE = re.compile(r"^[A-Za-z0-9_\-+./:@~]+$")
_KEYWORDS = {"null", "true", "false", "nan", "inf", "-inf", "~"}


def hydra_value(value: Any) -> str:
    """``value`` in Hydra's override grammar (strings quoted when they need it)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(hydra_value(v) for v in value) + "]"
    text = str(value)
    if _SAFE.match(text) and text.lower() not in _KEYWORDS and not _is_number(text):
        return text
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


# ----------------------------------------------------------------------------------- data


def episode_specs(job: TrainJob, rows: Sequence[Mapping[str, Any]]) -> list[EpisodeSpec]:
    """The spec each row carries to the verl workers (references resolved once per job)."""
    env = Ref.of(job.env, "environment factory") if job.env is not None else None
    rewards = reward_refs(job.rewards)
    weights = tuple(float(w) for w in job.reward_weights) if job.reward_weights else ()
    if env is None and not rewards:
        raise ConfigError(
            "the verl backend needs a reward: give the TrainJob an env (episode reward) "
            "or reward functions"
        )
    max_new_tokens = job.trainer.rl.max_new_tokens
    window = section(job.trainer, VerlConfig).step_window_ms / 1000
    return [
        EpisodeSpec(
            task=to_jsonable(dict(row), f"row {i}"),
            env=env,
            rewards=rewards,
            weights=weights,
            max_new_tokens=max_new_tokens,
            step_window_s=window,
        )
        for i, row in enumerate(rows)
    ]


def with_prompt(job: TrainJob, row: Mapping[str, Any]) -> Mapping[str, Any]:
    """The row, with the environment's opening messages as its prompt when it has none."""
    factory = job.env_factory()
    if "prompt" in row or factory is None:
        return row
    env = factory(row)
    try:
        return {**row, "prompt": env.reset()}
    finally:
        env.close()


def write_data(job: TrainJob, data_dir: Path) -> tuple[Path, Path]:
    """``train.parquet`` and ``val.parquet`` (val = the first train rows when no eval rows),
    written by core's one verl row writer (``records.to_verl_row``)."""
    loop = section(job.trainer, VerlConfig).agent_loop
    rows = [with_prompt(job, r) for r in job.train_rows]
    evals = [with_prompt(job, r) for r in job.eval_rows] or rows[: max(1, job.trainer.batch_size)]
    paths = []
    for split, part in (("train", rows), ("val", evals)):
        specs = episode_specs(job, part)
        try:
            table = [
                to_verl_row(r, i, split=split, spec=spec, agent_name=loop)
                for i, (r, spec) in enumerate(zip(part, specs, strict=True))
            ]
            paths.append(write_parquet(table, data_dir / f"{split}.parquet"))
        except RecordError as exc:
            raise ConfigError(str(exc)) from None
    return paths[0], paths[1]


# ------------------------------------------------------------------------------ overrides


@dataclass(frozen=True)
class LaunchPaths:
    """Where verl reads data and writes checkpoints and metrics (as seen by verl)."""

    train_file: str
    val_file: str
    checkpoint_dir: str
    metrics_file: str | None = None
    experiment_name: str = "run"


def build_overrides(
    model: ModelConfig,
    trainer: TrainerConfig,
    paths: LaunchPaths,
    *,
    n_rows: int,
    uses_env: bool,
    resume: bool = False,
    validation: InRunValidation | None = None,
) -> list[str]:
    """Hydra overrides for ``verl.trainer.main_ppo`` (``+key`` adds a key verl lacks).

    With ``validation``, verl validates every ``validation.every`` steps (``test_freq``) and a
    stop rule runs in verl's driver at every checkpoint save (``StopRuleCallback``) on the
    validations before it; checkpoints are then saved every ``trainer.save_steps`` steps or,
    when that is 0, every ``validation.every`` steps.
    """
    rl, verl = trainer.rl, section(trainer, VerlConfig)
    if model.chat_template:
        raise ConfigError(
            "model.chat_template is not passed to verl: save the template in the tokenizer "
            "(tokenizer_config.json) that model.tokenizer / the model path points to"
        )
    if rl.call_constraint != "none":
        raise ConfigError(
            f"trainer.rl.call_constraint={rl.call_constraint!r} is a decoding aid of the trl "
            "backend only (verl's rollout engines do not apply it): set it to none"
        )
    if rl.iterations != 1:
        raise ConfigError(
            f"trainer.rl.iterations={rl.iterations} is the trl backend's num_iterations; "
            "verl's passes over a batch are trainer.verl.ppo_epochs: set that instead"
        )
    mini = verl.mini_batch_size or trainer.batch_size
    if trainer.batch_size % mini:
        raise ConfigError(
            f"trainer.verl.mini_batch_size={mini} must divide trainer.batch_size="
            f"{trainer.batch_size}"
        )
    # steps and samples per step as every backend counts them (verl checks its own GPU split)
    steps = plan_batches(trainer, n_rows=n_rows, rl=True, strict=not is_dry_run(trainer)).steps
    epochs, steps = verl_limits(trainer, steps, n_rows)
    save_freq = trainer.save_steps if trainer.save_steps > 0 else steps
    if verl.dynamic_batch_size and verl.max_tokens_per_gpu < (
        verl.max_prompt_length + rl.max_response_tokens
    ):
        raise ConfigError(
            f"trainer.verl.max_tokens_per_gpu={verl.max_tokens_per_gpu} is smaller than one "
            f"sequence (max_prompt_length {verl.max_prompt_length} + max_response_tokens "
            f"{rl.max_response_tokens}): raise it or shorten the sequences"
        )
    ar = "actor_rollout_ref"
    o: dict[str, Any] = {
        "data.train_files": paths.train_file,
        "data.val_files": paths.val_file,
        "data.train_batch_size": trainer.batch_size,
        "data.max_prompt_length": verl.max_prompt_length,
        "data.max_response_length": rl.max_response_tokens,
        "data.filter_overlong_prompts": True,
        "data.truncation": "error",
        "data.return_raw_chat": True,
        "data.seed": trainer.seed,
        f"{ar}.model.path": model.name_or_path,
        f"{ar}.model.enable_gradient_checkpointing": verl.gradient_checkpointing,
        f"{ar}.model.use_remove_padding": True,
        f"{ar}.actor.optim.lr": trainer.learning_rate,
        f"{ar}.actor.optim.weight_decay": trainer.weight_decay,
        f"{ar}.actor.optim.clip_grad": trainer.max_grad_norm,
        f"{ar}.actor.ppo_mini_batch_size": mini,
        f"{ar}.actor.ppo_micro_batch_size_per_gpu": trainer.micro_batch_size,
        f"{ar}.actor.use_kl_loss": rl.kl_coef > 0,
        f"{ar}.actor.kl_loss_coef": rl.kl_coef,
        f"{ar}.actor.kl_loss_type": rl.kl_estimator,
        f"{ar}.actor.clip_ratio_low": rl.clip_low,
        f"{ar}.actor.clip_ratio_high": rl.clip_high,
        f"{ar}.actor.entropy_coeff": rl.entropy_coef,
        f"{ar}.actor.loss_agg_mode": verl.loss_agg_mode,
        f"{ar}.actor.policy_loss.loss_mode": verl.policy_loss,
        f"{ar}.actor.data_loader_seed": trainer.seed,
        f"{ar}.actor.fsdp_config.param_offload": verl.param_offload,
        f"{ar}.actor.fsdp_config.optimizer_offload": verl.optimizer_offload,
        f"{ar}.ref.log_prob_micro_batch_size_per_gpu": trainer.micro_batch_size,
        f"{ar}.ref.fsdp_config.param_offload": verl.param_offload,
        f"{ar}.rollout.name": verl.rollout_engine,
        f"{ar}.rollout.mode": "async",
        f"{ar}.rollout.n": rl.group_size,
        f"{ar}.rollout.temperature": rl.temperature,
        f"{ar}.rollout.top_p": rl.top_p,
        f"{ar}.rollout.seed": trainer.seed,
        f"{ar}.rollout.tensor_model_parallel_size": verl.tensor_parallel,
        f"{ar}.rollout.gpu_memory_utilization": verl.gpu_memory_utilization,
        f"{ar}.rollout.log_prob_micro_batch_size_per_gpu": trainer.micro_batch_size,
        f"{ar}.rollout.multi_turn.enable": uses_env,
        f"{ar}.rollout.multi_turn.max_assistant_turns": rl.max_turns,
        f"{ar}.rollout.agent.num_workers": verl.agent_workers,
        f"{ar}.rollout.agent.default_agent_loop": verl.agent_loop if uses_env else SINGLE_TURN_LOOP,
        f"{ar}.actor.optim.lr_warmup_steps_ratio": verl.actor_warmup_ratio,
        f"{ar}.actor.ppo_epochs": verl.ppo_epochs,
        "algorithm.adv_estimator": verl.adv_estimator,
        "algorithm.gamma": verl.gamma,
        "algorithm.lam": verl.lam,
        "algorithm.use_kl_in_reward": verl.kl_in_reward,
        "reward.custom_reward_function.path": REWARD_MODULE,
        "reward.custom_reward_function.name": "compute_score",
        "trainer.nnodes": verl.nnodes,
        "trainer.n_gpus_per_node": verl.gpus_per_node,
        "trainer.total_epochs": epochs,
        "trainer.total_training_steps": steps,
        "trainer.save_freq": save_freq,
        "trainer.test_freq": verl.test_freq,
        "trainer.val_before_train": verl.val_before_train,
        "trainer.default_local_dir": paths.checkpoint_dir,
        "trainer.max_actor_ckpt_to_keep": trainer.keep_checkpoints,
        "trainer.max_critic_ckpt_to_keep": trainer.keep_checkpoints,
        "trainer.v1.trainer_mode": verl.trainer_mode,
        "trainer.resume_mode": "auto" if (resume or trainer.resume) else "disable",
        "trainer.project_name": verl.project_name,
        "trainer.experiment_name": verl.experiment_name or paths.experiment_name,
    }
    if rl.dual_clip is not None:
        o[f"{ar}.actor.clip_ratio_c"] = rl.dual_clip
    if verl.kl_in_reward:
        o["algorithm.kl_penalty"] = verl.kl_penalty
        o["algorithm.kl_ctrl.type"] = verl.kl_in_reward_ctrl
        o["algorithm.kl_ctrl.kl_coef"] = verl.kl_in_reward_coef
        if verl.kl_in_reward_ctrl == "adaptive":
            o["algorithm.kl_ctrl.target_kl"] = verl.kl_in_reward_target
    if verl.adv_estimator == "gae":
        o.update(critic_overrides(trainer, mini, model.name_or_path))
    o.update(_memory_overrides(verl))
    o.update(scale_overrides(verl, trainer.batch_size))
    if validation is not None:
        o.update(_validation_overrides(validation, verl, trainer.save_steps))
    loggers = list(dict.fromkeys(verl.loggers))
    if paths.metrics_file:
        loggers.append("file")
        o["+ray_kwargs.ray_init.runtime_env.env_vars.VERL_FILE_LOGGER_PATH"] = paths.metrics_file
    o["trainer.logger"] = list(dict.fromkeys(loggers))
    return merge_overrides([f"{k}={hydra_value(v)}" for k, v in o.items()], verl.extra_overrides)


def scale_overrides(verl: Any, batch_size: int) -> dict[str, Any]:
    """Rollout correction and the async trainer modes (verl 0.9.1's keys)."""
    rc = "algorithm.rollout_correction"
    o: dict[str, Any] = {}
    if verl.rollout_is is not None:
        o[f"{rc}.rollout_is"] = verl.rollout_is
        o[f"{rc}.rollout_is_threshold"] = verl.rollout_is_threshold
    if verl.rollout_rs is not None:
        o[f"{rc}.rollout_rs"] = verl.rollout_rs
        o[f"{rc}.rollout_rs_threshold"] = verl.rollout_rs_threshold
    if verl.rollout_bypass_mode:
        o[f"{rc}.bypass_mode"] = True
    if verl.trainer_mode == "separate_async":
        if batch_size % verl.parameter_sync_step:
            raise ConfigError(
                f"trainer.verl.parameter_sync_step={verl.parameter_sync_step} must divide "
                f"trainer.batch_size={batch_size} (verl splits each batch into that many updates)"
            )
        o["trainer.v1.separate_async.parameter_sync_step"] = verl.parameter_sync_step
    return o


def verl_limits(trainer: TrainerConfig, steps: int, n_rows: int) -> tuple[int, int]:
    """``trainer.total_epochs`` and ``trainer.total_training_steps`` under which verl runs the
    planned ``steps`` (``batching.engine_limits``); rows that make no full batch (a dry run
    only) keep the configured epochs."""
    if n_rows // trainer.batch_size < 1:
        return max(1, math.ceil(trainer.epochs)), steps
    limits = engine_limits(steps, n_rows, trainer.batch_size)
    return limits.total_epochs, limits.total_training_steps


def _memory_overrides(verl: Any) -> dict[str, Any]:
    """Dynamic batch size, fused kernels, entropy checkpointing, rollout engine limits."""
    ar = "actor_rollout_ref"
    o: dict[str, Any] = {
        f"{ar}.model.use_fused_kernels": verl.fused_kernels,
        f"{ar}.actor.entropy_checkpointing": verl.entropy_checkpointing,
    }
    if verl.dynamic_batch_size:
        for key in ("actor.use_dynamic_bsz", "ref.log_prob_use_dynamic_bsz"):
            o[f"{ar}.{key}"] = True
        o[f"{ar}.rollout.log_prob_use_dynamic_bsz"] = True
        for key in ("actor.ppo_max_token_len_per_gpu", "ref.log_prob_max_token_len_per_gpu"):
            o[f"{ar}.{key}"] = verl.max_tokens_per_gpu
        o[f"{ar}.rollout.log_prob_max_token_len_per_gpu"] = verl.max_tokens_per_gpu
    if verl.max_num_batched_tokens is not None:
        if verl.rollout_engine != "vllm":
            raise ConfigError(
                f"trainer.verl.max_num_batched_tokens={verl.max_num_batched_tokens} is a vLLM "
                f"setting that verl's {verl.rollout_engine} server ignores: set it to null (or "
                "pass the engine's own option through trainer.verl.extra_overrides, e.g. "
                "+actor_rollout_ref.rollout.engine_kwargs.sglang.chunked_prefill_size=N)"
            )
        o[f"{ar}.rollout.max_num_batched_tokens"] = verl.max_num_batched_tokens
    if verl.max_model_len is not None:
        o[f"{ar}.rollout.max_model_len"] = verl.max_model_len
    if verl.save_hf_model:
        o[f"{ar}.actor.checkpoint.save_contents"] = ["model", "optimizer", "extra", "hf_model"]
    return o


def _validation_overrides(validation: Any, verl: Any, save_steps: int) -> dict[str, Any]:
    """``test_freq`` from the job's in-run validation, and its stop rule in verl's driver."""
    if verl.test_freq > 0 and verl.test_freq != validation.every:
        raise ConfigError(
            f"trainer.verl.test_freq={verl.test_freq} disagrees with the job's in-run "
            f"validation every {validation.every} steps: leave test_freq at -1"
        )
    if validation.limits is not None:
        raise ConfigError(
            "verl validates with the training episodes' limits (trainer.rl.max_turns, "
            "max_new_tokens, max_response_tokens): give the in-run validation no limits of "
            "its own"
        )
    o: dict[str, Any] = {
        "trainer.test_freq": validation.every,
        "trainer.val_before_train": validation.before_train or verl.val_before_train,
    }
    stop = validation.stop_ref()
    if stop is not None:
        o["trainer.checkpoint_callback_class"] = STOP_CALLBACK
        o[f"+{STOP_RULE_KEY}"] = json.dumps(stop.to_json(), separators=(",", ":"))
        o["trainer.save_freq"] = save_steps if save_steps > 0 else validation.every
    return o


def critic_overrides(trainer: TrainerConfig, mini_batch: int, policy: str) -> dict[str, Any]:
    """verl's critic settings (GAE): its model (default: the policy's; verl's own default is a
    placeholder path), optimiser, batches, value clipping and FSDP."""
    verl = section(trainer, VerlConfig)
    critic = verl.critic
    return {
        "critic.model.path": critic.model_path or policy,
        "critic.optim.lr": critic.learning_rate,
        "critic.optim.lr_warmup_steps_ratio": critic.warmup_ratio,
        "critic.ppo_mini_batch_size": mini_batch,
        "critic.ppo_micro_batch_size_per_gpu": critic.micro_batch_size or trainer.micro_batch_size,
        "critic.ppo_epochs": verl.ppo_epochs,
        "critic.cliprange_value": critic.cliprange_value,
        "critic.model.enable_gradient_checkpointing": critic.gradient_checkpointing,
        "critic.fsdp.param_offload": critic.param_offload,
        "critic.fsdp.optimizer_offload": critic.optimizer_offload,
        "trainer.critic_warmup": critic.warmup_steps,
    }


def override_key(override: str) -> str:
    """The config key an override sets (``+a.b=1`` -> ``a.b``)."""
    key = override.split("=", 1)[0].lstrip("+~")
    if not key or ("=" not in override and not override.startswith("~")):
        raise ConfigError(
            f"bad verl override {override!r}: expected key=value (e.g. trainer.save_freq=10)"
        )
    return key


def merge_overrides(base: Sequence[str], extra: Sequence[str]) -> list[str]:
    """``base`` with ``extra`` applied: an extra override replaces one for the same key."""
    replaced = {override_key(o) for o in extra}
    return [o for o in base if override_key(o) not in replaced] + list(extra)


# -------------------------------------------------------------------------------- command


@dataclass(frozen=True)
class Launch:
    """A ready verl launch: the command, its environment and where things go."""

    command: list[str]
    overrides: list[str]
    data_dir: Path
    env: dict[str, str] = field(default_factory=dict)
    metrics_file: Path | None = None

    def shell(self) -> str:
        """The command as one shell line (with its environment variables)."""
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env.items())
        return (env + " " if env else "") + shlex.join(self.command)


def plan_launch(job: TrainJob, run_dir: Path, checkpoint_dir: Path, *, resume: bool) -> Launch:
    """Write the parquet files and build the command (local ``main_ppo`` or a Ray job)."""
    verl = section(job.trainer, VerlConfig)
    data_dir = run_dir / "verl_data"
    train_file, val_file = write_data(job, data_dir)
    remote = verl.ray_address is not None
    metrics = None if remote else run_dir / METRICS_FILE
    stops = job.validation is not None and job.validation.stop is not None
    paths = LaunchPaths(
        # A Ray job runs in a copy of data_dir (its working dir): paths are relative there.
        train_file=train_file.name if remote else str(train_file),
        val_file=val_file.name if remote else str(val_file),
        checkpoint_dir=str(checkpoint_dir),
        # the stop rule reads the file logger's records (in the job's working dir when remote)
        metrics_file=str(metrics) if metrics else (METRICS_FILE if stops else None),
        experiment_name=run_dir.name,
    )
    overrides = build_overrides(
        job.model,
        job.trainer,
        paths,
        n_rows=len(job.train_rows),
        uses_env=job.env is not None,
        resume=resume,
        validation=job.validation,
    )
    main = ["-m", "verl.trainer.main_ppo", *overrides]
    if not remote:
        env = {"VERL_FILE_LOGGER_PATH": str(metrics)} if metrics else {}
        return Launch([sys.executable, *main], overrides, data_dir, env, metrics)
    command = ["ray", "job", "submit", "--address", str(verl.ray_address)]
    command += ["--working-dir", str(data_dir)]
    if verl.ray_runtime_env:
        try:
            json.loads(verl.ray_runtime_env)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"trainer.verl.ray_runtime_env is not valid JSON: {exc}") from None
        command += ["--runtime-env-json", verl.ray_runtime_env]
    if verl.ray_no_wait:
        command.append("--no-wait")
    command += ["--", verl.python, *main]
    return Launch(command, overrides, data_dir)
