"""The steps a launch plans are the steps verl runs: verl's own V1 trainer builds its loaders
from our composed config (``_init_dataloader``, ``drop_last=True``) and its training loop's
condition decides when the run ends."""

from __future__ import annotations

from dataclasses import replace

import pytest

pytest.importorskip("verl.trainer")

from verl_toys import verl_loader_steps

from aworld_rl_core.backends.verl.config import VerlConfig
from aworld_rl_core.backends.verl.launcher import LaunchPaths, build_overrides
from aworld_rl_core.models.config import ModelConfig
from aworld_rl_core.trainer_config import TrainerConfig

PATHS = LaunchPaths("/data/train.parquet", "/data/val.parquet", "/ckpt")


def steps_verl_runs(verl_compose, monkeypatch, *, n_rows, trainer):
    """(steps per epoch, total_training_steps, steps run) by verl's own code."""
    overrides = build_overrides(
        ModelConfig(name_or_path="/models/m"), trainer, PATHS, n_rows=n_rows, uses_env=True
    )
    return verl_loader_steps(verl_compose(overrides), n_rows, monkeypatch)


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
