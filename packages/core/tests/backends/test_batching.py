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
