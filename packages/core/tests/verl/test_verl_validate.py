"""verl's own ``validate_config`` (what ``main_ppo`` runs before Ray) on our composed launches:
the default GRPO launch, dynamic batching, rollout correction and the async trainer modes."""

from __future__ import annotations

from dataclasses import replace

import pytest

pytest.importorskip("verl.trainer")

from aworld_rl_core.backends.verl.config import VerlConfig
from aworld_rl_core.backends.verl.launcher import LaunchPaths, build_overrides
from aworld_rl_core.models.config import ModelConfig
from aworld_rl_core.trainer_config import RLConfig, TrainerConfig

PATHS = LaunchPaths("/data/train.parquet", "/data/val.parquet", "/ckpt")


def composed(verl_compose, *, n_rows=64, **verl):
    trainer = TrainerConfig(
        backend="verl", batch_size=16, micro_batch_size=2, max_steps=10,
        rl=RLConfig(group_size=4, kl_coef=0.001, max_response_tokens=1024),
        sections={"verl": replace(VerlConfig(dry_run=True), **verl)},
    )  # fmt: skip
    overrides = build_overrides(
        ModelConfig(name_or_path="/models/m"), trainer, PATHS, n_rows=n_rows, uses_env=True
    )
    return verl_compose(overrides)


def validate(cfg):
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    validate_config(
        config=cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg)
    )


@pytest.mark.parametrize(
    "verl",
    [
        {},
        {"dynamic_batch_size": True, "max_tokens_per_gpu": 8192, "fused_kernels": True},
        {"rollout_engine": "sglang", "max_model_len": 4096},
    ],
)
def test_launches_pass_verls_validate_config(verl_compose, verl):
    cfg = composed(verl_compose, **verl)
    validate(cfg)
    assert cfg.trainer.max_actor_ckpt_to_keep == 3 and cfg.trainer.max_critic_ckpt_to_keep == 3


def test_rollout_correction_keys_reach_verls_algorithm_config(verl_compose):
    from omegaconf import OmegaConf
    from verl.trainer.config.algorithm import RolloutCorrectionConfig
    from verl.trainer.ppo.rollout_corr_helper import _parse_rollout_rs_thresholds

    cfg = composed(
        verl_compose,
        rollout_is="sequence",
        rollout_is_threshold=3.0,
        rollout_rs="seq_mean_k1",
        rollout_rs_threshold=1.5,
        rollout_bypass_mode=True,
    )
    validate(cfg)
    # the section verl's trainer reads (algorithm.rollout_correction), as its dataclass
    rc = RolloutCorrectionConfig(**OmegaConf.to_container(cfg.algorithm.rollout_correction))
    assert (rc.rollout_is, rc.rollout_is_threshold) == ("sequence", 3.0)
    assert (rc.rollout_rs, rc.rollout_rs_threshold, rc.bypass_mode) == ("seq_mean_k1", 1.5, True)
    assert _parse_rollout_rs_thresholds(["seq_mean_k1"], 1.5)  # verl accepts the mode
    # the default leaves rollout correction off, as the papers ran
    default = composed(verl_compose).algorithm.rollout_correction
    assert default.rollout_is is None and default.rollout_rs is None


@pytest.mark.parametrize("mode", ["sync", "colocate_async", "separate_async"])
def test_trainer_modes_compose_and_validate(verl_compose, mode):
    cfg = composed(verl_compose, trainer_mode=mode, parameter_sync_step=2)
    validate(cfg)
    assert cfg.trainer.v1.trainer_mode == mode
    if mode == "separate_async":
        assert cfg.trainer.v1.separate_async.parameter_sync_step == 2
