"""Batch units, defined once for every backend.

- ``trainer.batch_size``: prompts per optimizer step (RL), or training samples per optimizer
  step (SFT; each per-turn sample counts).
- ``trainer.rl.group_size``: completions per prompt (RL): a step holds ``batch_size x
  group_size`` samples (completions); an SFT step holds ``batch_size`` samples.
- ``trainer.micro_batch_size``: samples per forward pass per device; it (times the devices)
  divides a step's samples, the rest is gradient accumulation.
- Optimizer steps: ``trainer.max_steps``, or ``floor(epochs x (samples // batch_size))`` (a last
  partial batch is dropped, as verl's loader does).

trl, verl, hf-sft and LLaMA-Factory all take their step counts and batch sizes from
:func:`plan_batches`, so one config trains the same way on each.

verl counts steps its own way (``RayPPOTrainer._create_dataloader`` and the V1 trainer): a
``drop_last=True`` loader gives ``rows // batch_size`` steps per epoch, and training ends at
whichever comes first of ``total_epochs`` passes and ``total_training_steps``.
:func:`engine_steps` is that arithmetic; :func:`engine_limits` chooses the two limits so verl
runs exactly the planned steps (enough epochs for a ``max_steps`` run; the last step saved).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from aworld_rl_core.errors import ConfigError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BatchPlan:
    """How a config's batches split: per optimizer step, per device and per forward pass."""

    samples_per_step: int
    micro_batch: int
    devices: int
    accumulation: int
    steps: int


def plan_batches(
    trainer: Any, *, n_rows: int, rl: bool, devices: int = 1, strict: bool = True
) -> BatchPlan:
    """The batch plan of ``trainer`` over ``n_rows`` prompts (RL) or samples (SFT).

    Rows that make no full batch are an error (``max_steps`` or not: the partial batch is
    dropped), unless ``strict=False`` (a dry run): then each epoch counts one step, with a warning.
    """
    per_step = check_batch_shape(trainer, rl=rl, devices=devices)
    micro = trainer.micro_batch_size
    per_epoch = n_rows // trainer.batch_size
    if per_epoch == 0:  # the partial batch is dropped: the run would take no step at all
        problem = (
            f"{n_rows} {'prompts' if rl else 'samples'} make no full batch of "
            f"trainer.batch_size={trainer.batch_size}: lower the batch size or add rows"
        )
        if strict:
            raise ConfigError(problem)
        log.warning("%s (counting one step per epoch)", problem)
        per_epoch = 1
    if trainer.max_steps > 0:
        steps = trainer.max_steps
    else:
        steps = epoch_steps(per_epoch, 1, trainer.epochs)
    return BatchPlan(per_step, micro, devices, per_step // (micro * devices), steps)


def engine_steps(
    n_rows: int, batch_size: int, *, total_epochs: int, total_training_steps: int | None
) -> int:
    """The optimizer steps verl 0.9.1 runs: ``rows // batch_size`` per epoch (its training
    loader drops the last partial batch), ``total_epochs`` epochs, capped by
    ``total_training_steps`` when set (training ends at whichever limit comes first)."""
    if batch_size < 1 or total_epochs < 0:
        raise ValueError("batch_size must be >= 1 and total_epochs >= 0")
    by_epochs = (n_rows // batch_size) * total_epochs
    if total_training_steps is None:
        return by_epochs
    return min(by_epochs, total_training_steps)


@dataclass(frozen=True)
class EngineLimits:
    """verl's two limits (``trainer.total_epochs``, ``trainer.total_training_steps``) and the
    steps they give."""

    total_epochs: int
    total_training_steps: int
    steps_per_epoch: int

    @property
    def steps(self) -> int:
        return min(self.steps_per_epoch * self.total_epochs, self.total_training_steps)


def engine_limits(steps: int, n_rows: int, batch_size: int) -> EngineLimits:
    """The limits under which verl runs exactly ``steps`` steps over ``n_rows`` prompts:
    ``total_epochs = ceil(steps / (rows // batch_size))`` (a ``max_steps`` run of more steps
    than one epoch holds needs that many passes) and ``total_training_steps = steps``, so the
    last step is verl's "last step", the one it always checkpoints."""
    per_epoch = n_rows // batch_size
    if steps < 1:
        raise ConfigError(f"a verl run needs at least one step, planned {steps}")
    if per_epoch < 1:
        raise ConfigError(
            f"{n_rows} prompts make no full batch of trainer.batch_size={batch_size}: verl's "
            "training loader drops the partial batch and would run no step; lower the batch "
            "size or add rows"
        )
    limits = EngineLimits(math.ceil(steps / per_epoch), steps, per_epoch)
    assert (
        limits.steps
        == steps
        == engine_steps(
            n_rows, batch_size, total_epochs=limits.total_epochs, total_training_steps=steps
        )
    )
    return limits


def epoch_steps(n_rows: int, batch_size: int, epochs: float) -> int:
    """Steps of ``epochs`` passes over ``n_rows`` rows as a ``drop_last`` loader counts them:
    ``floor(epochs x (rows // batch_size))`` (at least 1 when a full batch exists)."""
    per_epoch = n_rows // batch_size
    return max(1, math.floor(epochs * per_epoch)) if per_epoch else 0


def check_batch_shape(trainer: Any, *, rl: bool, devices: int = 1) -> int:
    """Samples per optimizer step; an error unless micro batches x devices divide them."""
    per_step = int(trainer.batch_size * (trainer.rl.group_size if rl else 1))
    micro = trainer.micro_batch_size
    if micro < 1 or devices < 1 or per_step % (micro * devices):
        what = "trainer.batch_size x trainer.rl.group_size" if rl else "trainer.batch_size"
        raise ConfigError(
            f"{what} = {per_step} samples per optimizer step must be a positive multiple of "
            f"trainer.micro_batch_size={micro} x {devices} device(s)"
        )
    return per_step


class DropLastInTrainingOnly:
    """A ``transformers.Trainer`` mixin: ``dataloader_drop_last`` (batching's rule for optimizer
    steps) drops the training loader's partial last batch only; evaluation and prediction keep
    every row."""

    def get_eval_dataloader(self, eval_dataset: Any = None) -> Any:
        with _keep_last(self):
            return super().get_eval_dataloader(eval_dataset)  # type: ignore[misc]

    def get_test_dataloader(self, test_dataset: Any) -> Any:
        with _keep_last(self):
            return super().get_test_dataloader(test_dataset)  # type: ignore[misc]


@contextmanager
def _keep_last(trainer: Any) -> Iterator[None]:
    args = trainer.args
    drop = args.dataloader_drop_last
    args.dataloader_drop_last = False
    try:
        yield
    finally:
        args.dataloader_drop_last = drop
