"""A run's checkpoint folders: ``<prefix><step>`` (``checkpoint-N``, verl's ``global_step_N``).

Checkpoints are written whole or not at all: :class:`AtomicCheckpoints` makes a transformers
``Trainer`` write each one under ``.staging/`` and rename it into place when complete, and
:func:`checkpoints` skips folders that are not complete, so a job killed (even with kill -9)
while saving resumes from the last whole checkpoint.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # a mixin over transformers' Trainer: its attributes are the Trainer's
    _Trainer = Any
else:
    _Trainer = object

STAGING = ".staging"
TRAINER_STATE = "trainer_state.json"  # what transformers writes last into a checkpoint


def is_complete(path: Path, prefix: str = "checkpoint-") -> bool:
    """Whether a checkpoint folder is whole: a transformers ``checkpoint-N`` needs its
    ``trainer_state.json`` (written last) to parse; other kinds need only exist."""
    if prefix != "checkpoint-":
        return True
    try:
        json.loads((path / TRAINER_STATE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return True


def checkpoints(directory: Path, prefix: str = "checkpoint-") -> list[Path]:
    """The complete ``<prefix><N>`` folders in ``directory`` (N an integer), lowest N first."""
    if not directory.is_dir():
        return []
    pattern = re.compile(re.escape(prefix) + r"(\d+)")
    steps = [
        (int(match.group(1)), path)
        for path in directory.iterdir()
        if (match := pattern.fullmatch(path.name)) and path.is_dir() and is_complete(path, prefix)
    ]
    return [path for _, path in sorted(steps)]


def latest_checkpoint(directory: Path, prefix: str = "checkpoint-") -> Path | None:
    """The complete ``<prefix><N>`` folder with the largest N (None when there is none)."""
    found = checkpoints(directory, prefix)
    return found[-1] if found else None


class _AlreadyTrained(Exception):
    """A resumed ``Trainer`` reached ``training_step`` with every step already done."""


class AtomicCheckpoints(_Trainer):
    """Mixin for a transformers ``Trainer`` (put it first among the bases): each checkpoint is
    saved into ``<output_dir>/.staging/checkpoint-N`` and renamed to ``<output_dir>/checkpoint-N``
    once everything (weights, optimizer, scheduler, RNG, trainer state) is written. A rename is
    atomic, so ``checkpoint-N`` is either absent or whole after any kill. Under DDP the main
    process alone clears, renames and rotates, between barriers around every rank's save."""

    _staging_checkpoint = False

    def train(self, *args: Any, **kwargs: Any) -> Any:
        """A resume from a checkpoint at ``max_steps`` (a run killed after its last save) ends
        there: transformers would train one step more, so the resumed run's weights and
        metrics would differ from the uninterrupted run's. A resumed run's ``training_loss``
        covers the whole run, not only the steps after the resume."""
        from transformers.trainer_utils import TrainOutput

        resumed = bool(kwargs.get("resume_from_checkpoint") or (args[0] if args else None))
        try:
            output = super().train(*args, **kwargs)
        except _AlreadyTrained:
            return TrainOutput(self.state.global_step, self._run_loss(0.0), {})
        if not resumed:
            return output
        # transformers averages the loss over the steps of this process only: after a resume,
        # the run's is the average over every logged step (checkpointed log history included)
        return TrainOutput(output.global_step, self._run_loss(output.training_loss), output.metrics)

    def _run_loss(self, fallback: float) -> float:
        """The training loss averaged over every step the log history covers."""
        total, last = 0.0, 0
        for entry in self.state.log_history:
            if "loss" in entry and "step" in entry and entry["step"] > last:
                total += float(entry["loss"]) * (entry["step"] - last)
                last = entry["step"]
        return total / last if last else fallback

    def training_step(self, *args: Any, **kwargs: Any) -> Any:
        if 0 < self.state.max_steps <= self.state.global_step:  # resumed at the end
            raise _AlreadyTrained(self.state.global_step)
        return super().training_step(*args, **kwargs)

    def _get_output_dir(self, trial: Any) -> str:
        real = super()._get_output_dir(trial)
        return os.path.join(real, STAGING) if self._staging_checkpoint else real

    def _save_checkpoint(self, model: Any, trial: Any) -> None:
        real = Path(self._get_output_dir(trial))
        staging = real / STAGING
        main = self.args.should_save  # under DDP every rank writes its RNG state into the folder
        if main:
            shutil.rmtree(staging, ignore_errors=True)  # what a killed save left behind
        self.accelerator.wait_for_everyone()
        self._staging_checkpoint = True
        try:
            super()._save_checkpoint(model, trial)
        finally:
            self._staging_checkpoint = False
        self.accelerator.wait_for_everyone()  # every rank's files are in before the rename
        if main:
            name = f"checkpoint-{self.state.global_step}"
            if (staging / name).is_dir():
                final = real / name
                if final.exists():  # saved again at the same step
                    shutil.rmtree(final)
                os.replace(staging / name, final)
            shutil.rmtree(staging, ignore_errors=True)
            self._rotate(real)
        self.accelerator.wait_for_everyone()

    def _rotate(self, directory: Path) -> None:
        limit = self.args.save_total_limit
        if limit is None or limit <= 0:
            return
        for old in checkpoints(directory)[:-limit]:
            shutil.rmtree(old, ignore_errors=True)
