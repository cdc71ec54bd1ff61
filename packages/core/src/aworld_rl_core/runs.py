"""Running a recipe: the run directory, metrics, progress, report and a consistent end state."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

from aworld_rl_core.config import to_yaml
from aworld_rl_core.errors import AworldError
from aworld_rl_core.report import write_report
from aworld_rl_core.tracking import MetricsLog, TrackingConfig

T = TypeVar("T")
HOME_ENV = "AWORLD_RL_HOME"


@dataclass(frozen=True)
class RunResult:
    """What a recipe returns: headline metrics, named output files and checkpoints."""

    metrics: dict[str, Any] = field(default_factory=dict)
    outputs: dict[str, Path] = field(default_factory=dict)
    checkpoints: list[Path] = field(default_factory=list)


def aworld_home() -> Path:
    return Path(os.environ.get(HOME_ENV) or Path.home() / ".cache" / "aworld-rl")


def default_run_dir(recipe: str) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return aworld_home() / "runs" / recipe / stamp


class Run:
    """The run in progress, handed to ``run(cfg, run)``."""

    def __init__(
        self,
        directory: Path,
        *,
        name: str = "run",
        tracking: TrackingConfig | None = None,
        resume: bool = False,
        quiet: bool = False,
    ) -> None:
        self.dir = Path(directory)
        self.name = name
        self.resume = resume
        self.quiet = quiet
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            self.checkpoint_dir.mkdir(exist_ok=True)
        except OSError as exc:
            raise AworldError(
                f"cannot create the run directory '{self.dir}': {exc.strerror}; "
                "pass a writable --output-dir"
            ) from None
        self.sections: list[tuple[str, str]] = []
        self._metrics = MetricsLog(self.dir, tracking or TrackingConfig(), name)

    @property
    def checkpoint_dir(self) -> Path:
        return self.dir / "checkpoints"

    def log(self, metrics: dict[str, Any], step: int | None = None) -> None:
        """Append metrics to ``metrics.jsonl`` (and the enabled trackers)."""
        self._metrics.log(metrics, step)

    def add_section(self, title: str, markdown: str) -> None:
        """Add a section (a table, a note) to ``report.md``."""
        self.sections.append((title, markdown))

    def progress(
        self, iterable: Iterable[T], total: int | None = None, desc: str = ""
    ) -> Iterator[T]:
        """Iterate with a progress bar (silent when the run is quiet)."""
        if self.quiet:
            yield from iterable
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        if total is None and hasattr(iterable, "__len__"):
            total = len(iterable)  # type: ignore[arg-type]
        columns = [
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
        ]
        with Progress(*columns, transient=False) as bar:
            task = bar.add_task(desc, total=total)
            for item in iterable:
                yield item
                bar.advance(task)

    def write_status(self, status: str, **extra: Any) -> None:
        record = {"status": status, "time": datetime.now(timezone.utc).isoformat(), **extra}
        (self.dir / "status.json").write_text(json.dumps(record, indent=2), encoding="utf-8")

    def close(self) -> None:
        self._metrics.close()


def execute(
    recipe: str,
    run_fn: Callable[[Any, Run], RunResult],
    cfg: Any,
    *,
    output_dir: Path | None = None,
    resume: bool = False,
    quiet: bool = False,
) -> tuple[RunResult, Run]:
    """Run ``run_fn(cfg, run)`` in a fresh (or resumed) run directory.

    The directory always ends consistent: ``config.yaml``, ``metrics.jsonl``, ``report.md`` and
    ``status.json`` saying completed, interrupted or failed.
    """
    directory = Path(output_dir) if output_dir else default_run_dir(recipe)
    if resume and not (directory / "config.yaml").exists():
        raise AworldError(f"--resume: '{directory}' holds no run to resume (no config.yaml)")
    tracking = getattr(cfg, "tracking", None)
    run = Run(directory, name=recipe, tracking=tracking, resume=resume, quiet=quiet)
    (run.dir / "config.yaml").write_text(to_yaml(cfg), encoding="utf-8")
    run.write_status("running", recipe=recipe)
    started = time.time()
    status, result, error = "failed", RunResult(), None
    try:
        result = run_fn(cfg, run)
        if not isinstance(result, RunResult):
            raise AworldError(f"recipe '{recipe}' returned {type(result).__name__}, not RunResult")
        status = "completed"
        return result, run
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    except BaseException as exc:
        error = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        elapsed = round(time.time() - started, 2)
        extra: dict[str, Any] = {"recipe": recipe, "seconds": elapsed}
        if error:
            extra["error"] = error
        if status == "interrupted":
            extra["resume"] = f"aworld-run {recipe} --output-dir {run.dir} --resume"
        run.close()
        write_report(
            run.dir,
            title=f"{recipe}",
            status=status,
            metrics=dict(result.metrics),
            sections=run.sections,
        )
        run.write_status(status, **extra)
