"""In-run validation: a training run validates its own policy and may end itself early.

``TrainJob.validation = InRunValidation(every=10, stop=...)`` asks a backend to play the job's
``eval_rows`` greedily with the current policy every ``every`` optimizer steps (and at the last
step), log the results as ``val/<name>`` and hand the validations so far to the ``stop`` rule.
Validation episodes have the training episodes' limits unless ``limits`` gives their own
(``Limits()``: only the environment ends them; the trl backend; verl validates with the
training limits).
When the rule says stop, the run ends after that step with a checkpoint of it. Nothing restarts:
the KL reference stays the run's starting policy and the optimizer state carries on.

A stop rule is referenced by import path, so verl's driver can rebuild it:
``stop=Ref("mypkg.rules:plateau", kwargs={"patience": 3})`` names
``plateau(history, patience=3) -> bool``. ``history`` lists one dict per validation, oldest
first: ``{"step": 20, "val/reward": 0.31, "val/<key>": ..., "grad_norm": 0.8}`` where
``val/reward`` is the mean episode reward, ``val/<key>`` the mean of a numeric key of the
episodes' last ``info`` (trl) or of verl's ``val-aux`` metrics, and ``grad_norm`` the mean
gradient norm of the steps since the previous validation. The history is kept in
``validation.jsonl`` (trl: the run directory; verl: the checkpoint directory), so a resumed run
continues it: validations after the checkpoint it resumes from are dropped.
"""

from __future__ import annotations

import functools
import json
import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aworld_rl_core.atomic import write_atomic
from aworld_rl_core.engine.episode import Limits
from aworld_rl_core.errors import ConfigError
from aworld_rl_core.refs import Ref

HISTORY_FILE = "validation.jsonl"
STOP_FILE = "stopped.json"
History = list[dict[str, float]]
StopRule = Callable[[Sequence[Mapping[str, float]]], bool]


@dataclass(frozen=True)
class InRunValidation:
    """Validate every ``every`` steps (and at the last step); ``stop`` may end the run."""

    every: int
    stop: Ref | str | None = None
    before_train: bool = False
    limits: Limits | None = None

    def __post_init__(self) -> None:
        if self.every < 1:
            raise ConfigError(f"in-run validation needs every >= 1 step, got {self.every}")
        if self.stop is not None and not Ref.of(self.stop, "stop rule").is_import_path:
            raise ConfigError(
                f"a stop rule is referenced by import path (package.module:function), got "
                f"{self.stop!r}"
            )

    def due(self, step: int, last_step: int) -> bool:
        return step > 0 and (step % self.every == 0 or step >= last_step)

    def stop_ref(self) -> Ref | None:
        return None if self.stop is None else Ref.of(self.stop, "stop rule")

    def stop_rule(self) -> StopRule | None:
        """The rule, imported, with its arguments bound (None without one)."""
        ref = self.stop_ref()
        return None if ref is None else load_stop_rule(ref)


def load_stop_rule(ref: Ref) -> StopRule:
    from aworld_rl_core.registry import resolve

    rule = resolve(ref.target)
    return functools.partial(rule, *ref.args, **ref.kwargs) if ref.args or ref.kwargs else rule


def entry(step: int, metrics: Mapping[str, float], grad_norms: Iterable[float]) -> dict[str, float]:
    """One validation: ``step``, the ``val/`` metrics, the mean gradient norm of the period."""
    norms = [float(g) for g in grad_norms if math.isfinite(float(g))]
    return {
        "step": float(step),
        **{f"val/{k}": float(v) for k, v in metrics.items()},
        "grad_norm": statistics.fmean(norms) if norms else math.nan,
    }


def read_history(path: Path, *, up_to_step: float = math.inf) -> History:
    """The validations saved in ``path`` at or before ``up_to_step`` (by step, no duplicates)."""
    if not path.is_file():
        return []
    by_step: dict[float, dict[str, float]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            if record["step"] <= up_to_step:
                by_step[record["step"]] = record
    return [by_step[s] for s in sorted(by_step)]


def write_history(path: Path, history: Sequence[Mapping[str, float]]) -> None:
    """Replace ``path`` atomically (a kill leaves the old or the new history)."""
    write_atomic(path, "".join(json.dumps(dict(e)) + "\n" for e in history))


def write_stop(directory: Path, step: int, history: Sequence[Mapping[str, float]]) -> Path:
    """Record that the stop rule ended the run after ``step``."""
    path = directory / STOP_FILE
    write_atomic(path, json.dumps({"step": step, "validations": len(history)}))
    return path


def read_stop(directory: Path) -> dict[str, Any] | None:
    path = directory / STOP_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
