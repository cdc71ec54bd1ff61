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
        steps = max(1, math.floor(trainer.epochs * per_epoch))
    return BatchPlan(per_step, micro, devices, per_step // (micro * devices), steps)


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
