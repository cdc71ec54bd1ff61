"""The in-run stop rule inside verl: a ``trainer.checkpoint_callback_class`` for verl's driver.

verl (0.9.1, its default V1 trainer) calls ``on_save`` in the driver after each checkpoint. The
callback reads the validations so far from verl's file logger (``val-core/<source>/reward/
mean@n`` -> ``val/reward``, ``val-aux/<source>/<key>/mean@n`` -> ``val/<key>``; the mean over
data sources, which hold no ``/``), keeps them in ``<checkpoint dir>/validation.jsonl`` and asks
the job's stop rule. When it says stop, ``total_training_steps`` becomes the current step: the
run validates this step, logs it and ends as if it had reached its last step. The rule sees the
validations before the save (verl validates after saving), so a stop decided on the validation
of step ``n`` ends the run at the next save.

A relaunched run truncates the file logger, so the history of the killed run is read when the
callback is built (before verl opens its logger) and validations after the checkpoint the run
resumes from are dropped. Imports nothing from verl (verl only needs the class to exist).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from aworld_rl_core.backends import validation as val
from aworld_rl_core.refs import Ref

LATEST = "latest_checkpointed_iteration.txt"
_VAL_KEY = re.compile(r"val-(?:core|aux)/[^/]+/(?P<var>.+)/mean@(?P<n>\d+)")


def validation_metrics(data: Mapping[str, float]) -> dict[str, float]:
    """The ``val-core`` / ``val-aux`` means of one verl log record, averaged over data sources
    (the largest ``@n`` of each variable)."""
    found: dict[str, dict[int, list[float]]] = {}
    for key, value in data.items():
        match = _VAL_KEY.fullmatch(key)
        if match:
            by_n = found.setdefault(match["var"], {})
            by_n.setdefault(int(match["n"]), []).append(float(value))
    return {var: _mean(by_n[max(by_n)]) for var, by_n in found.items()}


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def verl_history(records: Sequence[tuple[int, Mapping[str, float]]]) -> val.History:
    """One history entry per record with validation metrics; ``grad_norm`` is the mean of
    ``actor/grad_norm`` over the records since the previous validation."""
    history, norms = [], []
    for step, data in records:
        if "actor/grad_norm" in data:
            norms.append(float(data["actor/grad_norm"]))
        metrics = validation_metrics(data)
        if metrics:
            history.append(val.entry(step, metrics, norms))
            norms = []
    return history


def merged(*histories: val.History) -> val.History:
    """The histories by step; later ones win."""
    by_step = {e["step"]: e for h in histories for e in h}
    return [by_step[s] for s in sorted(by_step)]


def file_logger_path(config: Any) -> Path:
    """Where verl's ``file`` logger writes (its own rule: the env var, else root/project/exp)."""
    explicit = os.environ.get("VERL_FILE_LOGGER_PATH")
    if explicit:
        return Path(explicit)
    root = Path(os.path.expanduser(os.environ.get("VERL_FILE_LOGGER_ROOT", ".")))
    trainer = config.trainer
    return root / str(trainer.project_name) / f"{trainer.experiment_name}.jsonl"


def latest_saved_step(checkpoint_dir: Path) -> int:
    """The step of the checkpoint a relaunch resumes from (0 when there is none)."""
    try:
        return int((checkpoint_dir / LATEST).read_text().strip())
    except (OSError, ValueError):
        return 0


class StopRuleCallback:
    """verl checkpoint callback applying the job's stop rule (see the module docstring)."""

    def __init__(self, config: Any = None) -> None:
        from aworld_rl_core.backends.verl.backend import read_metrics

        self.config = config
        trainer = config.trainer
        self.rule = val.load_stop_rule(Ref.from_json(json.loads(str(trainer.aworld_stop_rule))))
        self.dir = Path(str(trainer.default_local_dir))
        self.dir.mkdir(parents=True, exist_ok=True)
        self.metrics_file = file_logger_path(config)
        resumed = latest_saved_step(self.dir)
        earlier = merged(
            val.read_history(self.dir / val.HISTORY_FILE),
            verl_history(read_metrics(self.metrics_file)),  # before verl truncates it
        )
        self.saved = [e for e in earlier if e["step"] <= resumed]
        val.write_history(self.dir / val.HISTORY_FILE, self.saved)

    def on_save(
        self,
        trainer: Any,
        global_step: int,
        checkpoint_dir: str,
        async_save: bool = False,
        **_: Any,
    ) -> None:
        from aworld_rl_core.backends.verl.backend import read_metrics

        history = merged(self.saved, verl_history(read_metrics(self.metrics_file)))
        val.write_history(self.dir / val.HISTORY_FILE, history)
        if history and self.rule(history):
            trainer.total_training_steps = global_step
            val.write_stop(self.dir, global_step, history)
