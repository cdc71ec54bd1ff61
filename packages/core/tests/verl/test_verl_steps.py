"""The steps a launch plans are the steps verl runs: verl's own V1 trainer builds its loaders
from our composed config (``_init_dataloader``, ``drop_last=True``) and its training loop's
condition decides when the run ends."""

from __future__ import annotations

import inspect
from dataclasses import replace

import pytest

pytest.importorskip("verl.trainer")

from aworld_rl_core.backends.verl.config import VerlConfig
from aworld_rl_core.backends.verl.launcher import LaunchPaths, build_overrides
from aworld_rl_core.models.config import ModelConfig
from aworld_rl_core.trainer_config import TrainerConfig

PATHS = LaunchPaths("/data/train.parquet", "/data/val.parquet", "/ckpt")


def steps_verl_runs(verl_compose, monkeypatch, *, n_rows, trainer):
    """(steps per epoch, total_training_steps, steps run) by verl's own code."""
    from verl.trainer.ppo.v1 import trainer_base

    overrides = build_overrides(
        ModelConfig(name_or_path="/models/m"), trainer, PATHS, n_rows=n_rows, uses_env=True
    )
    cfg = verl_compose(overrides)
    monkeypatch.setattr(
        trainer_base,
        "create_rl_dataset",
        lambda files, data, tok, proc, is_train, max_samples: list(
            range(n_rows if is_train else 2)
        ),
    )
    monkeypatch.setattr(trainer_base, "create_rl_sampler", lambda data, dataset: None)
    bare = type("Bare", (trainer_base.PPOTrainer,), {})
    bare.__abstractmethods__ = frozenset()  # only the loader set-up is called
    obj = object.__new__(bare)
    obj.config, obj.tokenizer, obj.processor = cfg, None, None
    obj.trainer_mode = cfg.trainer.v1.trainer_mode
    obj.parameter_sync_step = 1
    obj._init_dataloader()
    assert obj.steps_per_epoch == len(obj.train_dataloader)  # drop_last: full batches only
    # verl's V1 loop (fit): epoch = (step - 1) // steps_per_epoch, and
    fit = inspect.getsource(trainer_base.PPOTrainer.fit)
    assert (
        "while current_epoch < self.config.trainer.total_epochs and "
        "self.global_steps <= self.total_training_steps" in fit
    )
    assert "current_epoch = (self.global_steps - 1) // self.steps_per_epoch" in fit
    step, epoch, ran = 1, 0, 0
    while epoch < cfg.trainer.total_epochs and step <= obj.total_training_steps:
        ran += 1
        step += 1
        epoch = (step - 1) // obj.steps_per_epoch
    return obj.steps_per_epoch, obj.total_training_steps, ran


def trainer_of(batch, *, max_steps=-1, epochs=1.0):
    return TrainerConfig(
        backend="verl", batch_size=batch, micro_batch_size=1, max_steps=max_steps, epochs=epochs,
        sections={"verl": replace(VerlConfig(), dry_run=True)},
    )  # fmt: skip


def test_a_max_steps_run_longer_than_an_epoch_runs_all_its_steps(verl_compose, monkeypatch):
    """500 steps over 6,664 prompts at batch 512 (13 per epoch): all 500 run."""
    got = steps_verl_runs(
        verl_compose, monkeypatch, n_rows=6664, trainer=trainer_of(512, max_steps=500)
    )
    assert got == (13, 500, 500)


@pytest.mark.parametrize(
    ("rows", "batch", "steps"), [(75, 16, 80), (100, 32, 60), (400, 32, 240), (5, 2, 40)]
)
def test_epoch_runs_count_full_batches_only(verl_compose, monkeypatch, rows, batch, steps):
    """20 epochs as a curriculum stage plans them (core's epoch_steps) and as verl runs them."""
    from aworld_rl_core.backends.batching import epoch_steps

    planned = epoch_steps(rows, batch, 20)
    assert planned == steps
    trainer = trainer_of(batch, max_steps=planned, epochs=20)
    per_epoch, total, ran = steps_verl_runs(verl_compose, monkeypatch, n_rows=rows, trainer=trainer)
    assert (per_epoch, total, ran) == (rows // batch, steps, steps)
