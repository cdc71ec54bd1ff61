"""plan_batches: a run whose rows make no full batch is an error, max_steps or not."""

from types import SimpleNamespace

import pytest

from aworld_rl_core.backends.batching import check_batch_shape, plan_batches
from aworld_rl_core.errors import ConfigError


def trainer(batch_size=2, max_steps=0, epochs=1.0):
    return SimpleNamespace(
        batch_size=batch_size,
        micro_batch_size=1,
        max_steps=max_steps,
        epochs=epochs,
        rl=SimpleNamespace(group_size=4),
    )


@pytest.mark.parametrize("max_steps", [0, 3])
def test_rows_that_make_no_full_batch_are_an_error(max_steps):
    with pytest.raises(ConfigError, match="1 samples make no full batch of trainer.batch_size=2"):
        plan_batches(trainer(max_steps=max_steps), n_rows=1, rl=False)


def test_steps_from_max_steps_or_full_batches_per_epoch():
    assert plan_batches(trainer(max_steps=3), n_rows=2, rl=False).steps == 3
    plan = plan_batches(trainer(epochs=2.0), n_rows=5, rl=True)  # 2 full batches per epoch
    assert (plan.steps, plan.samples_per_step, plan.accumulation) == (4, 8, 8)


def test_a_dry_run_counts_one_step_per_epoch():
    assert plan_batches(trainer(), n_rows=1, rl=False, strict=False).steps == 1


def test_the_batch_shape_is_checked_without_rows():
    assert check_batch_shape(trainer(batch_size=2), rl=True) == 8
    with pytest.raises(ConfigError, match="positive multiple of trainer.micro_batch_size=1 x 3"):
        check_batch_shape(trainer(batch_size=2), rl=False, devices=3)


# ------------------------------------------------------------- steps as verl counts them


def test_verl_counts_full_batches_and_stops_at_the_first_limit():
    from aworld_rl_core.backends.batching import engine_steps

    # 6,664 prompts at batch 512: 13 full batches per epoch (the 8 left over are dropped)
    assert engine_steps(6664, 512, total_epochs=1, total_training_steps=500) == 13
    assert engine_steps(6664, 512, total_epochs=39, total_training_steps=500) == 500
    assert engine_steps(75, 16, total_epochs=20, total_training_steps=94) == 80
    assert engine_steps(75, 16, total_epochs=20, total_training_steps=None) == 80


@pytest.mark.parametrize(
    ("steps", "rows", "batch", "epochs"),
    [
        (500, 6664, 512, 39),
        (80, 75, 16, 20),
        (60, 100, 32, 20),
        (240, 400, 32, 20),
        (13, 6664, 512, 1),
    ],
)
def test_engine_limits_make_verl_run_the_planned_steps(steps, rows, batch, epochs):
    from aworld_rl_core.backends.batching import engine_limits, engine_steps

    limits = engine_limits(steps, rows, batch)
    assert (limits.total_epochs, limits.total_training_steps) == (epochs, steps)
    assert engine_steps(rows, batch, total_epochs=epochs, total_training_steps=steps) == steps


def test_epoch_steps_drop_the_partial_batch():
    from aworld_rl_core.backends.batching import epoch_steps

    assert [epoch_steps(n, b, 20) for n, b in ((75, 16), (100, 32), (400, 32))] == [80, 60, 240]
    assert epoch_steps(4, 1, 0.25) == 1 and epoch_steps(3, 4, 1) == 0


def test_engine_limits_refuse_rows_without_a_full_batch():
    from aworld_rl_core.backends.batching import engine_limits

    with pytest.raises(ConfigError, match="3 prompts make no full batch of trainer.batch_size=4"):
        engine_limits(2, 3, 4)


def test_verl_launch_runs_max_steps_over_several_epochs(tmp_path):
    """A max_steps run longer than one epoch gets the epochs it needs (6,664 rows, batch 512,
    500 steps: 39 epochs; before, total_epochs=1 ended it after 13 steps)."""
    from aworld_rl_core.backends.verl.config import VerlConfig
    from aworld_rl_core.backends.verl.launcher import LaunchPaths, build_overrides
    from aworld_rl_core.models.config import ModelConfig
    from aworld_rl_core.trainer_config import TrainerConfig, with_section

    trainer = TrainerConfig(backend="verl", batch_size=512, micro_batch_size=8, max_steps=500)
    trainer = with_section(trainer, VerlConfig(dry_run=True))
    overrides = build_overrides(
        ModelConfig(name_or_path="m"),
        trainer,
        LaunchPaths("t.parquet", "v.parquet", str(tmp_path)),
        n_rows=6664,
        uses_env=True,
    )
    values = dict(o.split("=", 1) for o in overrides)
    assert values["trainer.total_epochs"] == "39"
    assert values["trainer.total_training_steps"] == "500"
