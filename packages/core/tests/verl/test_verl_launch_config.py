"""Our Hydra overrides compose into verl's real ``ppo_trainer`` config (no training started)."""

from __future__ import annotations

from dataclasses import replace

import pytest

pytest.importorskip("verl.trainer")  # not tests/verl, which is on sys.path as a namespace

from aworld_rl_core.backends.verl import reward
from aworld_rl_core.backends.verl.config import CriticConfig, VerlConfig
from aworld_rl_core.backends.verl.launcher import LaunchPaths, build_overrides
from aworld_rl_core.models.config import ModelConfig
from aworld_rl_core.trainer_config import RLConfig, TrainerConfig, with_section

PATHS = LaunchPaths(
    train_file="/data/train.parquet",
    val_file="/data/val.parquet",
    checkpoint_dir="/ckpt",
    metrics_file="/run/verl_metrics.jsonl",
    experiment_name="exp",
)


def overrides(uses_env: bool = True, **verl: object) -> list[str]:
    rl = RLConfig(group_size=4, kl_coef=0.001, dual_clip=3.5, max_turns=6)
    cfg = TrainerConfig(
        backend="verl", batch_size=8, micro_batch_size=2, max_steps=20, rl=rl,
        sections={"verl": replace(VerlConfig(), **verl)},
    )  # fmt: skip
    model = ModelConfig(name_or_path="/models/qwen")
    return build_overrides(model, cfg, PATHS, n_rows=64, uses_env=uses_env)


def test_every_override_key_exists_and_composes(verl_compose):
    from omegaconf import OmegaConf

    cfg = verl_compose(overrides())
    ar = cfg.actor_rollout_ref
    assert ar.rollout.name == "vllm" and ar.rollout.n == 4
    assert ar.rollout.multi_turn.enable is True and ar.rollout.multi_turn.max_assistant_turns == 6
    assert ar.rollout.agent.default_agent_loop == "aworld_env"
    assert ar.rollout.prompt_length == 2048 and ar.rollout.response_length == 2048
    assert ar.actor.clip_ratio_low == 0.2 and ar.actor.clip_ratio_high == 0.28
    assert ar.actor.clip_ratio_c == 3.5 and ar.actor.use_kl_loss is True
    assert ar.actor.kl_loss_coef == 0.001 and ar.actor.kl_loss_type == "low_var_kl"
    assert ar.actor.ppo_mini_batch_size == 8 and ar.actor.ppo_micro_batch_size_per_gpu == 2
    assert cfg.data.train_files == "/data/train.parquet" and cfg.data.train_batch_size == 8
    assert cfg.trainer.total_training_steps == 20 and cfg.trainer.save_freq == 20
    assert list(cfg.trainer.logger) == ["console", "file"]
    env_vars = cfg.ray_kwargs.ray_init.runtime_env.env_vars
    assert env_vars.VERL_FILE_LOGGER_PATH == "/run/verl_metrics.jsonl"
    assert cfg.reward.custom_reward_function.path == "pkg://aworld_rl_core.backends.verl.reward"
    OmegaConf.resolve(cfg)  # every interpolation resolves


def test_engine_and_single_turn_variants_compose(verl_compose):
    cfg = verl_compose(
        overrides(uses_env=False, rollout_engine="sglang", nnodes=2, gpus_per_node=4)
    )
    assert cfg.actor_rollout_ref.rollout.name == "sglang"
    assert cfg.actor_rollout_ref.rollout.agent.default_agent_loop == "single_turn_agent"
    assert (cfg.trainer.nnodes, cfg.trainer.n_gpus_per_node) == (2, 4)


def test_ppo_gae_critic_and_kl_in_reward_compose(verl_compose):
    """First-class PPO fields (RAG-R1's paper preset) land on verl's own keys and validate."""
    from omegaconf import OmegaConf

    critic = CriticConfig(learning_rate=1e-5, warmup_ratio=0.015, micro_batch_size=8,
                          warmup_steps=3, param_offload=True)  # fmt: skip
    cfg = verl_compose(
        overrides(
            adv_estimator="gae", gamma=0.99, lam=0.95, kl_in_reward=True, kl_in_reward_coef=0.002,
            kl_in_reward_ctrl="adaptive", kl_in_reward_target=0.05, actor_warmup_ratio=0.285,
            ppo_epochs=2, critic=critic,
        )
    )  # fmt: skip
    algo = cfg.algorithm
    assert (algo.adv_estimator, algo.gamma, algo.lam, algo.use_kl_in_reward) == (
        "gae", 0.99, 0.95, True,
    )  # fmt: skip
    assert (algo.kl_penalty, algo.kl_ctrl.type, algo.kl_ctrl.kl_coef) == ("kl", "adaptive", 0.002)
    assert algo.kl_ctrl.target_kl == 0.05
    assert cfg.actor_rollout_ref.actor.optim.lr_warmup_steps_ratio == 0.285
    assert cfg.actor_rollout_ref.actor.ppo_epochs == 2
    assert (cfg.critic.optim.lr, cfg.critic.optim.lr_warmup_steps_ratio) == (1e-5, 0.015)
    assert cfg.critic.ppo_micro_batch_size_per_gpu == 8 and cfg.critic.ppo_mini_batch_size == 8
    assert cfg.critic.ppo_epochs == 2 and cfg.critic.cliprange_value == 0.5
    assert cfg.critic.fsdp.param_offload is True and cfg.trainer.critic_warmup == 3
    assert cfg.critic.model.path == "/models/qwen"  # the policy's weights, not verl's placeholder
    OmegaConf.resolve(cfg)


def test_worker_configs_validate(verl_compose):
    """verl's dataclass checks (batch sizes, loss settings) accept the actor and rollout."""
    from verl.utils.config import omega_conf_to_dataclass

    cfg = verl_compose(overrides())
    actor = omega_conf_to_dataclass(cfg.actor_rollout_ref.actor)
    rollout = omega_conf_to_dataclass(cfg.actor_rollout_ref.rollout)
    assert actor.policy_loss.loss_mode == "vanilla" and actor.clip_ratio_c == 3.5
    assert rollout.multi_turn.max_assistant_turns == 6


def test_verl_loads_our_compute_score(verl_compose, toy_registry):
    from verl.trainer.ppo.reward import get_custom_reward_fn

    cfg = verl_compose(
        [*overrides(), "+reward.custom_reward_function.reward_kwargs.rewards=[toy.exact]"]
    )
    fn = get_custom_reward_fn(cfg)
    assert fn.func.__name__ == "_call_with_kwargs" and fn.args[0] is reward.compute_score
    assert fn("toy", "42", "42", extra_info={}) == {"score": 1.0, "reward/toy.exact": 1.0}
    assert fn("toy", "41", "42", extra_info={}) == {"score": 0.0, "reward/toy.exact": 0.0}


def test_dry_run_resolves_the_full_command_with_verl(tmp_path, capsys):
    """The backend's dry run runs ``main_ppo <overrides> --cfg job``: verl accepts the launch."""
    import yaml
    from verl_toys import counter_env

    from aworld_rl_core.backends.base import TrainJob
    from aworld_rl_core.backends.verl.backend import VerlBackend
    from aworld_rl_core.errors import ConfigError
    from aworld_rl_core.runs import Run

    rows = [{"prompt": f"count to {t}", "target": t} for t in (1, 2, 3, 4)]
    cfg = TrainerConfig(backend="verl", batch_size=2, sections={"verl": VerlConfig(dry_run=True)})
    job = TrainJob(
        model=ModelConfig(name_or_path="Qwen/Qwen2.5-0.5B-Instruct"),
        trainer=cfg,
        run=Run(tmp_path / "run", quiet=True),
        train_rows=rows,
        env=counter_env,
    )
    result = VerlBackend().train(job)
    resolved = yaml.safe_load(result.outputs["verl_config"].read_text())
    assert resolved["data"]["train_files"] == str(tmp_path / "run" / "verl_data" / "train.parquet")
    assert resolved["actor_rollout_ref"]["rollout"]["agent"]["default_agent_loop"] == "aworld_env"
    assert resolved["actor_rollout_ref"]["rollout"]["n"] == 8
    assert resolved["trainer"]["default_local_dir"] == str(tmp_path / "run" / "checkpoints")
    assert "verl's resolved config" in capsys.readouterr().out

    bad = with_section(cfg, VerlConfig(dry_run=True, extra_overrides=("trainer.no_such_key=1",)))
    with pytest.raises(ConfigError, match="no_such_key"):
        VerlBackend().train(replace(job, trainer=bad, run=Run(tmp_path / "bad", quiet=True)))


def test_gpu_smoke_script_launch_is_valid(tmp_path):
    """The GPU smoke script's launch (``--dry-run``) passes verl's config check on CPU."""
    import subprocess
    import sys
    from pathlib import Path

    import yaml

    script = Path(__file__).parents[2] / "benchmarks" / "gpu" / "verl_smoke.py"
    command = [sys.executable, str(script), "--model", "/models/qwen", "--out", str(tmp_path)]
    subprocess.run([*command, "--dry-run"], check=True, capture_output=True, text=True)
    resolved = yaml.safe_load((tmp_path / "run" / "verl_config.yaml").read_text())
    assert resolved["trainer"]["n_gpus_per_node"] == 1
    assert resolved["trainer"]["total_training_steps"] == 3
    assert resolved["actor_rollout_ref"]["rollout"]["agent"]["default_agent_loop"] == "aworld_env"


def test_memory_and_validation_overrides_compose_and_build_our_stop_callback(
    verl_compose, tmp_path, monkeypatch
):
    """Dynamic batch size, fused kernels, engine limits, hf_model checkpoints and the stop rule
    are keys verl knows; verl builds our checkpoint callback from the composed config."""
    import inspect
    import json

    from omegaconf import OmegaConf
    from verl.trainer.ppo.checkpoint_callback import build_checkpoint_callback
    from verl.trainer.ppo.v1 import trainer_base
    from verl.utils.config import omega_conf_to_dataclass

    from aworld_rl_core.backends.validation import InRunValidation
    from aworld_rl_core.backends.verl.stopping import StopRuleCallback
    from aworld_rl_core.refs import Ref

    verl = dict(
        dynamic_batch_size=True,
        max_tokens_per_gpu=8192,
        fused_kernels=True,
        entropy_checkpointing=True,
        max_num_batched_tokens=16384,
        max_model_len=4096,
    )
    rl = RLConfig(group_size=4, kl_coef=0.1, max_response_tokens=2048)
    cfg = TrainerConfig(
        backend="verl", batch_size=8, max_steps=20, rl=rl, sections={"verl": VerlConfig(**verl)}
    )
    stop = Ref("stop_rules:after", kwargs={"validations": 2})
    validation = InRunValidation(every=2, stop=stop)
    model = ModelConfig(name_or_path="/models/qwen")
    paths = replace(PATHS, checkpoint_dir=str(tmp_path / "ckpt"))
    composed = verl_compose(
        build_overrides(model, cfg, paths, n_rows=64, uses_env=True, validation=validation)
    )
    ar = composed.actor_rollout_ref
    assert ar.actor.use_dynamic_bsz is True and ar.actor.ppo_max_token_len_per_gpu == 8192
    assert ar.ref.log_prob_use_dynamic_bsz is True
    assert ar.rollout.log_prob_max_token_len_per_gpu == 8192
    assert ar.model.use_fused_kernels is True and ar.actor.entropy_checkpointing is True
    assert ar.rollout.max_num_batched_tokens == 16384 and ar.rollout.max_model_len == 4096
    assert "hf_model" in ar.actor.checkpoint.save_contents
    assert composed.trainer.test_freq == 2 and composed.trainer.save_freq == 2
    OmegaConf.resolve(composed)
    actor = omega_conf_to_dataclass(composed.actor_rollout_ref.actor)
    assert actor.use_dynamic_bsz and actor.ppo_max_token_len_per_gpu == 8192

    monkeypatch.setenv("VERL_FILE_LOGGER_PATH", str(tmp_path / "m.jsonl"))
    callback = build_checkpoint_callback(composed)
    assert isinstance(callback, StopRuleCallback)
    assert Ref.from_json(json.loads(composed.trainer.aworld_stop_rule)) == stop
    # the stop works by lowering total_training_steps: verl's V1 loop must test it each step
    fit = inspect.getsource(trainer_base.PPOTrainer.fit)
    loop = fit[fit.index("while current_epoch") :]
    assert loop.startswith(
        "while current_epoch < self.config.trainer.total_epochs and "
        "self.global_steps <= self.total_training_steps"
    )
    # ... and save before it validates, so a stop ends the run on a validated checkpoint
    assert loop.index("self._save_checkpoint()") < loop.index("self._validate()")
