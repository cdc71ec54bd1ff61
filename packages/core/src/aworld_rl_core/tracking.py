"""Metric sinks: metrics.jsonl always; TensorBoard and W&B when switched on."""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aworld_rl_core.atomic import write_atomic


@dataclass(frozen=True, kw_only=True)
class TrackingConfig:
    """Opt-in experiment trackers (metrics.jsonl is always written)."""

    tensorboard: bool = field(default=False, metadata={"help": "also log to TensorBoard"})
    wandb: bool = field(default=False, metadata={"help": "also log to Weights & Biases"})
    wandb_project: str = field(default="aworld-rl", metadata={"help": "W&B project name"})


class MetricsLog:
    """Appends one JSON object per ``log`` call and forwards to the enabled trackers."""

    def __init__(
        self, run_dir: Path, tracking: TrackingConfig, run_name: str, *, resume: bool = False
    ) -> None:
        self.path = run_dir / "metrics.jsonl"
        _drop_torn_tail(self.path)  # a line cut by a kill would swallow the next row
        # a resumed run does its remaining work again, stepless summaries included: the rows
        # logged without a step after the last stepped one are replaced when logged again
        self._pending: list[tuple[str, frozenset[str]]] = (
            _tail_stepless(self.path) if resume else []
        )
        # and a row it logs again at a step (the final evaluation at the last step, redone
        # when the kill came after it) replaces the earlier row of that step with its keys
        self._earlier: dict[tuple[float, frozenset[str]], str] = (
            _stepped_rows(self.path) if resume else {}
        )
        self._file = self.path.open("a", encoding="utf-8")
        self._tb = self._wandb = None
        if tracking.tensorboard:
            from torch.utils.tensorboard import SummaryWriter

            self._tb = SummaryWriter(str(run_dir / "tensorboard"))
        if tracking.wandb:
            import wandb

            self._wandb = wandb.init(project=tracking.wandb_project, name=run_name, dir=run_dir)

    def log(self, metrics: dict[str, float], step: int | None = None) -> None:
        record: dict[str, Any] = {"time": round(time.time(), 3)}
        if step is not None:
            record["step"] = step
        record.update({k: _jsonable(v) for k, v in metrics.items()})
        if step is None and self._pending:
            self._replace_pending(frozenset(record) - {"time"})
        elif step is not None and self._earlier:
            earlier = self._earlier.pop((float(step), frozenset(record) - {"time"}), None)
            if earlier is not None:
                self._drop_line(earlier)
        self._file.write(json.dumps(record) + "\n")
        self._file.flush()
        numeric = {k: v for k, v in record.items() if isinstance(v, (int, float))}
        if self._tb is not None:
            for key, value in numeric.items():
                if key not in ("time", "step"):
                    self._tb.add_scalar(key, value, step)
        if self._wandb is not None:
            self._wandb.log(numeric, step=step)

    def rewind(self, step: int) -> int:
        """Drop the rows logged past ``step``: a run resumed from its checkpoint at ``step``
        logs those steps again, and each step must appear once. Rows without a step stay,
        except those after the last row kept with a step (a summary logged after training,
        before a kill: the resumed run logs it again). The file is replaced atomically;
        returns how many rows were dropped. (TensorBoard and W&B keep what they were sent.)"""
        self._file.close()
        kept: list[tuple[str, bool]] = []  # (line, has a step)
        dropped = 0
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:  # a line torn by the kill
                dropped += 1
                continue
            logged = record.get("step") if isinstance(record, dict) else None
            stepped = isinstance(logged, (int, float))
            if isinstance(logged, (int, float)) and logged > step:
                dropped += 1
            else:
                kept.append((line + "\n", stepped))
        if any(stepped for _, stepped in kept):
            while kept and not kept[-1][1]:  # stepless rows after the last step kept
                kept.pop()
                dropped += 1
        if dropped:
            write_atomic(self.path, "".join(line for line, _ in kept))
        self._pending = _tail_stepless(self.path) if self._pending else []
        self._earlier = {k: line for k, line in self._earlier.items() if k[0] <= step}
        self._file = self.path.open("a", encoding="utf-8")
        return dropped

    def _replace_pending(self, keys: frozenset[str]) -> None:
        """A resumed run logs a stepless row again (a summary logged before the kill, after
        the last step): the earlier row with the same keys goes, so the row appears once."""
        found = next((i for i, (_, k) in enumerate(self._pending) if k == keys), None)
        if found is None:
            return
        line, _ = self._pending.pop(found)
        self._drop_line(line)

    def _drop_line(self, line: str) -> None:
        """Remove the last copy of ``line`` from the file (atomically)."""
        self._file.close()
        lines = self.path.read_text(encoding="utf-8").splitlines(keepends=True)
        for i in range(len(lines) - 1, -1, -1):
            if lines[i] == line:
                del lines[i]
                break
        write_atomic(self.path, "".join(lines))
        self._file = self.path.open("a", encoding="utf-8")

    def close(self) -> None:
        self._file.close()
        if self._tb is not None:
            self._tb.close()
        if self._wandb is not None:
            self._wandb.finish()


def _drop_torn_tail(path: Path) -> None:
    """Cut a last line left without its newline (a kill mid-write), so rows appended later
    start on a line of their own."""
    if not path.is_file():
        return
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        write_atomic(path, data[: data.rfind(b"\n") + 1])


def _tail_stepless(path: Path) -> list[tuple[str, frozenset[str]]]:
    """The rows without a step after the last row with one (each with its keys, minus
    ``time``); all stepless rows when none has a step."""
    if not path.is_file():
        return []
    tail: list[tuple[str, frozenset[str]]] = []
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(record, dict):
            continue
        if isinstance(record.get("step"), (int, float)):
            tail = []
        else:
            tail.append((line, frozenset(record) - {"time"}))
    return tail


def _stepped_rows(path: Path) -> dict[tuple[float, frozenset[str]], str]:
    """Each row with a step, by (step, its keys minus ``time``): the last such line."""
    if not path.is_file():
        return {}
    rows: dict[tuple[float, frozenset[str]], str] = {}
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict) and isinstance(record.get("step"), (int, float)):
            rows[(float(record["step"]), frozenset(record) - {"time"})] = line
    return rows


def _jsonable(value: Any) -> Any:
    if hasattr(value, "item"):  # numpy / torch scalars
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """The records of a metrics.jsonl file, skipping a torn last line."""
    if not path.exists():
        return []
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records
