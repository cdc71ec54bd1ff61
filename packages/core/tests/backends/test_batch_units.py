"""Batch units are defined once (``backends.batching``): one config gives the same optimizer
steps and samples per step on trl, verl (dry run), hf-sft and LLaMA-Factory."""

from __future__ import annotations

import pytest

from aworld_rl_core.backends.base import TrainJob
from aworld_rl_core.backends.batching import plan_batches
from aworld_rl_core.backends.llamafactory.launch import build_train_args
from aworld_rl_core.backends.verl.launcher import LaunchPaths, build_overrides
from aworld_rl_core.errors import ConfigError
from aworld_rl_core.models.config import ModelConfig
from aworld_rl_core.runs import Run
from aworld_rl_core.trainer_config import RLConfig, SFTConfig, TrainerConfig

ROWS = [{"prompt": f"q{i}", "messages": [{"role": "user", "content": f"q{i}"},
         {"role": "assistant", "content": "a"}]} for i in range(10)]  # fmt: skip


def trainer(**kw):
    base = dict(batch_size=4, micro_batch_size=2, rl=RLConfig(group_size=2), sft=SFTConfig())
    return TrainerConfig(**{**base, **kw})


def job(tmp_path, cfg):
    return TrainJob(
        model=ModelConfig(name_or_path="Qwen/Qwen2.5-0.5B-Instruct"),
        trainer=cfg,
        run=Run(tmp_path / "run", quiet=True),
        train_rows=ROWS,
        rewards=["core.toy-lowercase"],
    )


@pytest.mark.parametrize("limit", [{"max_steps": 3}, {"max_steps": -1, "epochs": 2.0}])
def test_one_config_the_same_steps_and_samples_per_step_on_every_backend(tmp_path, limit):
    cfg = trainer(**limit)
    steps = 3 if "epochs" not in limit else 2 * (10 // 4)  # a partial last batch is dropped
    rl, sft = plan_batches(cfg, n_rows=10, rl=True), plan_batches(cfg, n_rows=10, rl=False)
    assert (rl.steps, rl.samples_per_step, rl.accumulation) == (steps, 8, 4)
    assert (sft.steps, sft.samples_per_step, sft.accumulation) == (steps, 4, 2)

    pytest.importorskip("trl")
    from aworld_rl_core.backends.hf_sft import training_args
    from aworld_rl_core.backends.trl_grpo import grpo_args

    grpo = grpo_args(job(tmp_path, cfg), use_cpu=True)  # completions per step: 4 prompts x 2
    assert grpo.max_steps == steps
    assert grpo.per_device_train_batch_size * grpo.gradient_accumulation_steps == 8

    paths = LaunchPaths(train_file="t", val_file="v", checkpoint_dir="c")
    model = ModelConfig(name_or_path="m")
    verl = dict(
        o.split("=", 1) for o in build_overrides(model, cfg, paths, n_rows=10, uses_env=False)
    )
    assert int(verl["trainer.total_training_steps"]) == steps
    per_step = int(verl["data.train_batch_size"]) * int(verl["actor_rollout_ref.rollout.n"])
    assert per_step == 8 and verl["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"] == "2"

    hf = training_args(job(tmp_path, cfg), n_samples=10)  # samples per step: 4
    assert hf.max_steps == steps and hf.dataloader_drop_last
    assert hf.per_device_train_batch_size * hf.gradient_accumulation_steps == 4

    lf = build_train_args(job(tmp_path, cfg), tmp_path, has_eval=False, resume_from=None)
    assert lf["max_steps"] == steps and lf["dataloader_drop_last"]
    assert lf["per_device_train_batch_size"] * lf["gradient_accumulation_steps"] == 4


@pytest.mark.parametrize(
    ("batch", "micro", "devices", "expected"), [(8, 2, 1, 4), (8, 2, 2, 2), (4, 4, 1, 1)]
)
def test_accumulation(batch, micro, devices, expected):
    cfg = trainer(batch_size=batch, micro_batch_size=micro, max_steps=1)
    assert plan_batches(cfg, n_rows=batch, rl=False, devices=devices).accumulation == expected


@pytest.mark.parametrize(
    ("batch", "micro", "devices"), [(6, 4, 1), (2, 4, 1), (4, 2, 4), (4, 0, 1)]
)
def test_uneven_batches_and_too_few_rows_are_refused(batch, micro, devices):
    cfg = trainer(batch_size=batch, micro_batch_size=micro, max_steps=1)
    with pytest.raises(ConfigError, match="multiple of trainer.micro_batch_size"):
        plan_batches(cfg, n_rows=batch, rl=False, devices=devices)
    with pytest.raises(ConfigError, match="make no full batch of trainer.batch_size=4"):
        plan_batches(trainer(max_steps=-1), n_rows=3, rl=True)


def test_a_dry_run_counts_one_step_per_epoch_when_rows_make_no_full_batch(caplog):
    plan = plan_batches(trainer(max_steps=-1, epochs=2.0), n_rows=3, rl=True, strict=False)
    assert plan.steps == 2
    assert "make no full batch" in caplog.text


def test_hf_sft_splits_a_step_over_the_torchrun_processes(tmp_path, monkeypatch):
    """Under torchrun each of WORLD_SIZE processes accumulates its share of a step."""
    pytest.importorskip("trl")
    from aworld_rl_core.backends.hf_sft import sft_plan

    cfg = trainer(batch_size=8, micro_batch_size=2, max_steps=1)
    assert sft_plan(job(tmp_path, cfg), 10).accumulation == 4
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert sft_plan(job(tmp_path, cfg), 10).accumulation == 2
    monkeypatch.setenv("WORLD_SIZE", "3")
    with pytest.raises(ConfigError, match="x 3 device"):
        sft_plan(job(tmp_path, cfg), 10)


def test_rl_iterations_are_trls_num_iterations_and_verl_names_its_own_key(tmp_path):
    """``trainer.rl.iterations`` (GRPO's mu) reaches TRL as ``num_iterations``; optimizer steps
    stay ``max_steps`` (a batch is generated every ``iterations`` steps). verl has its own key
    (``trainer.verl.ppo_epochs``), so the RL key is refused there rather than ignored."""
    pytest.importorskip("trl")
    from aworld_rl_core.backends.trl_grpo import grpo_args

    cfg = trainer(max_steps=8, rl=RLConfig(group_size=2, iterations=4))
    grpo = grpo_args(job(tmp_path, cfg), use_cpu=True)
    assert (grpo.num_iterations, grpo.max_steps) == (4, 8)
    assert grpo_args(job(tmp_path, trainer(max_steps=8)), use_cpu=True).num_iterations == 1
    paths = LaunchPaths(train_file="t", val_file="v", checkpoint_dir="c")
    with pytest.raises(ConfigError, match=r"rl.iterations=4 .* trainer.verl.ppo_epochs"):
        build_overrides(ModelConfig(name_or_path="m"), cfg, paths, n_rows=10, uses_env=False)
