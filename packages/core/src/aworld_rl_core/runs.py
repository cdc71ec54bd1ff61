"""Running a recipe: the run directory, metrics, progress, report and a consistent end state.

A run directory belongs to one run. Starting a run in a directory that already holds one is
refused unless ``--overwrite``; ``--resume`` runs the saved ``config.yaml`` (a command that asks
for a different config is refused with the difference, except for :data:`RESUME_MAY_CHANGE`);
a lock file stops two processes from sharing a directory. SIGTERM (``timeout``, SLURM,
Kubernetes) ends a run like Ctrl-C: ``status.json`` says interrupted and gives the command
that resumes it. Library warnings and logs go to ``run.log`` in the directory, not the terminal.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import re
import shlex
import shutil
import signal
import sys
import threading
import time
import typing
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence, Sized
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

from aworld_rl_core.atomic import write_atomic
from aworld_rl_core.config import load_config, members, section_table, to_dict, to_yaml
from aworld_rl_core.errors import AworldError
from aworld_rl_core.report import write_report
from aworld_rl_core.tracking import MetricsLog, TrackingConfig

T = TypeVar("T")
HOME_ENV = "AWORLD_RL_HOME"
LOCK_FILE = ".aworld-run.lock"
LOG_FILE = "run.log"
RUN_FILES = ("config.yaml", "status.json")
RESUME_MAY_CHANGE = (
    "trainer.max_steps",
    "trainer.epochs",
    "trainer.save_steps",
    "trainer.logging_steps",
    "tracking.*",
)
"""Keys a ``--resume`` command may change: how long to go on, how often to save and log, and
the trackers. Anything else would make the resumed run a different run than the one started."""


@dataclass(frozen=True)
class RunResult:
    """What a recipe returns: headline metrics, named output files and checkpoints.

    ``headline`` names the metrics the terminal summary shows (default: the first twelve).
    """

    metrics: dict[str, Any] = field(default_factory=dict)
    outputs: dict[str, Path] = field(default_factory=dict)
    checkpoints: list[Path] = field(default_factory=list)
    headline: Sequence[str] = ()


class Interrupted(KeyboardInterrupt):
    """The run was stopped by a signal (SIGTERM) or Ctrl-C; ``signum`` names which."""

    def __init__(self, signum: int = signal.SIGINT) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def aworld_home() -> Path:
    return Path(os.environ.get(HOME_ENV) or Path.home() / ".cache" / "aworld-rl")


def default_run_dir(recipe: str) -> Path:
    """A fresh ``$AWORLD_RL_HOME/runs/<recipe>/<timestamp>`` (``-2``, ``-3``... when taken)."""
    base = aworld_home() / "runs" / recipe / datetime.now().strftime("%Y%m%d-%H%M%S")
    candidate, n = base, 1
    while candidate.exists():
        n += 1
        candidate = base.with_name(f"{base.name}-{n}")
    return candidate


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
        self.warnings = 0  # logged to run.log (the summary points at them)
        self._metrics = MetricsLog(self.dir, tracking or TrackingConfig(), name, resume=resume)

    @property
    def checkpoint_dir(self) -> Path:
        return self.dir / "checkpoints"

    def log(self, metrics: dict[str, Any], step: int | None = None) -> None:
        """Append metrics to ``metrics.jsonl`` (and the enabled trackers)."""
        self._metrics.log(metrics, step)

    def rewind(self, step: int) -> int:
        """Forget the metrics rows past ``step`` (a resume from the checkpoint at ``step`` logs
        them again); a run's ``metrics.jsonl`` holds one step axis (a recipe that trains twice
        gives each training a sub-run)."""
        return self._metrics.rewind(step)

    def add_section(self, title: str, markdown: str) -> None:
        """Add a section (a table, a note) to ``report.md``."""
        self.sections.append((title, markdown))

    def progress(
        self, iterable: Iterable[T], total: int | None = None, desc: str = ""
    ) -> Iterator[T]:
        """Iterate with a progress bar on stderr (silent when the run is quiet)."""
        if self.quiet:
            yield from iterable
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        if total is None and isinstance(iterable, Sized):
            total = len(iterable)
        columns = [
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
        ]
        with Progress(*columns, transient=False, console=Console(stderr=True)) as bar:
            task = bar.add_task(desc, total=total)
            for item in iterable:
                yield item
                bar.advance(task)

    def write_status(self, status: str, **extra: Any) -> None:
        """Replace ``status.json`` atomically (a kill never leaves half a file)."""
        record = {"status": status, "time": datetime.now(timezone.utc).isoformat(), **extra}
        write_atomic(self.dir / "status.json", json.dumps(record, indent=2))

    def close(self) -> None:
        self._metrics.close()


# ---------------------------------------------------------------------------------------------
# Which config a run uses, and whether the directory is free
# ---------------------------------------------------------------------------------------------


def may_change_on_resume(key: str, cls: type | None = None) -> bool:
    """Whether ``key`` is in :data:`RESUME_MAY_CHANGE` (``section.*`` covers a section) or names
    a field of config class ``cls`` declared ``option(..., resumable=True)`` (``judges[1].base_url``
    reaches into a list of sections)."""
    plain = re.sub(r"\[\d+\]", "", key)
    if any(
        plain == allowed or (allowed.endswith(".*") and plain.startswith(allowed[:-1]))
        for allowed in RESUME_MAY_CHANGE
    ):
        return True
    found = _field_at(cls, plain.split(".")) if cls is not None else None
    return found is not None and bool(found.metadata.get("resumable"))


def _field_at(cls: Any, path: list[str]) -> dataclasses.Field | None:
    """The dataclass field a dotted path names (through nested and listed sections)."""
    for i, name in enumerate(path):
        if not dataclasses.is_dataclass(cls):
            return None
        fields = {f.name: f for f in dataclasses.fields(cls)}
        if name not in fields:
            cls = section_table(cls).classes.get(name)  # trainer.verl: a backend's section
            continue
        if i == len(path) - 1:
            return fields[name]
        cls = _section_type(typing.get_type_hints(cls)[name])
    return None


def _section_type(tp: Any) -> Any:
    """The dataclass inside ``tp`` (itself, or the item type of a list, tuple or Optional)."""
    if dataclasses.is_dataclass(tp):
        return tp
    for arg in typing.get_args(tp):
        found = _section_type(arg)
        if found is not None:
            return found
    return None


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def config_diff(old: Any, new: Any, prefix: str = "") -> list[tuple[str, Any, Any]]:
    """``(key, old value, new value)`` for each leaf where two configs differ; sections and
    lists of sections are compared field by field (``judges[1].base_url``)."""
    if dataclasses.is_dataclass(old) and type(old) is type(new):
        after = dict(members(new))
        return [
            diff
            for name, value in members(old)
            for diff in config_diff(value, after.get(name), _join(prefix, name))
        ]
    if (
        isinstance(old, (list, tuple))
        and isinstance(new, (list, tuple))
        and len(old) == len(new)
        and any(dataclasses.is_dataclass(v) for v in old)
    ):
        return [
            diff
            for i, (a, b) in enumerate(zip(old, new, strict=True))
            for diff in config_diff(a, b, f"{prefix}[{i}]")
        ]
    before, after = to_dict(old), to_dict(new)
    return [] if before == after else [(prefix, before, after)]


def resume_config(
    directory: Path,
    cls: type[T],
    *,
    preset: str | None = None,
    config_file: str | Path | None = None,
    presets: str | None = None,
    overrides: Sequence[str] = (),
) -> T:
    """The config a resumed run uses: the saved ``config.yaml``.

    A resume command that names a preset or config file states the config in full; one with
    only overrides applies them to the saved config. Either way the result may differ from the
    saved config only in :data:`RESUME_MAY_CHANGE`; anything else is refused, showing the diff.
    """
    saved_file = Path(directory) / "config.yaml"
    if not saved_file.is_file():
        raise AworldError(f"--resume: '{directory}' holds no run to resume (no config.yaml)")
    saved = load_config(cls, config_file=saved_file)
    if preset is None and config_file is None:
        requested = load_config(cls, config_file=saved_file, overrides=overrides)
    else:
        requested = load_config(
            cls, preset=preset, config_file=config_file, presets=presets, overrides=overrides
        )
    refuse_changes(saved, requested, Path(directory))
    return requested


def refuse_changes(saved: Any, requested: Any, directory: Path) -> None:
    """Raise, showing the diff, when ``requested`` differs from ``saved`` outside
    :data:`RESUME_MAY_CHANGE`."""
    refused = [
        d for d in config_diff(saved, requested) if not may_change_on_resume(d[0], type(saved))
    ]
    if not refused:
        return
    lines = "\n".join(f"  {k}: {old!r} (run) -> {new!r} (this command)" for k, old, new in refused)
    raise AworldError(
        f"--resume: this command asks for another config than the run in '{directory}' was "
        f"started with:\n{lines}\nResume with `aworld-run <recipe> --output-dir {directory} "
        f"--resume` (it runs the saved config.yaml); only {', '.join(RESUME_MAY_CHANGE)} and the "
        "recipe's resumable keys (see --help) may change on resume. For a different config, "
        "start a new run (another --output-dir) or start over with --overwrite."
    )


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on the run directory's lock file (freed even by kill -9)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no cross-process guard
        yield
        return
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise AworldError(
            f"cannot create the run directory '{directory}': {exc.strerror}; "
            "pass a writable --output-dir"
        ) from None
    path = directory / LOCK_FILE
    with open(path, "a+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise AworldError(
                f"the run directory '{directory}' is in use by {holder}; wait for it to end "
                "or pick another --output-dir"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"aworld-run (pid {os.getpid()})\n")
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _claim(directory: Path, *, overwrite: bool, clear: bool) -> None:
    """Refuse a directory that holds another run (or other files); with ``clear``, empty it
    for --overwrite."""
    if not directory.exists():
        return
    if not directory.is_dir():
        raise AworldError(f"--output-dir '{directory}' is a file; give a directory")
    contents = [p for p in directory.iterdir() if p.name != LOCK_FILE]
    if not contents:
        return
    if not any((directory / name).exists() for name in RUN_FILES):
        raise AworldError(
            f"--output-dir '{directory}' is not empty and holds no run; give a new or empty "
            "directory"
        )
    if not overwrite:
        status = _read_status(directory).get("status", "unknown")
        raise AworldError(
            f"'{directory}' already holds a run (status: {status}); continue it with "
            "--resume, start over with --overwrite, or pick another --output-dir"
        )
    for path in contents if clear else ():
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()


def _read_status(directory: Path) -> dict[str, Any]:
    try:
        return json.loads((directory / "status.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _relative(path: Path | str, directory: Path) -> str:
    """``path`` relative to the run directory when inside it (the run stays movable)."""
    resolved, root = Path(path).resolve(), directory.resolve()
    return str(resolved.relative_to(root)) if resolved.is_relative_to(root) else str(resolved)


def run_output(value: str | Path, name: str = "model") -> Path | None:
    """What a finished run wrote under ``name`` (``status.json`` outputs: ``model`` is the run's
    final model, wherever its backend put it) when ``value`` is a run directory; None when it
    is not one (a model directory, a hub id, ``tiny:``). A run that did not complete or has no
    such output is an error naming the run."""
    directory = Path(value)
    if not (directory / "status.json").is_file():
        return None
    status = _read_status(directory)
    found = (status.get("outputs") or {}).get(name)
    if status.get("status") != "completed" or not found:
        raise AworldError(
            f"'{directory}' is a run directory (status: {status.get('status', 'unknown')}) "
            f"without a '{name}' output; finish it (aworld-run ... --resume) or pass the "
            f"{name} directory itself"
        )
    path = Path(found)
    return path if path.is_absolute() else directory / path


# ---------------------------------------------------------------------------------------------
# Signals and logs
# ---------------------------------------------------------------------------------------------


def _raise_interrupted(signum: int, frame: Any) -> None:
    raise Interrupted(signum)


@contextlib.contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """Inside the block, SIGTERM raises :class:`Interrupted` as Ctrl-C raises KeyboardInterrupt."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_interrupted)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class _CountingHandler(logging.FileHandler):
    """``run.log``; counts the warnings so the summary can point at them."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, encoding="utf-8")
        self.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        self.warnings = 0

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.WARNING:
            self.warnings += 1
        super().emit(record)

    def handleError(self, record: logging.LogRecord) -> None:
        if isinstance(sys.exc_info()[1], OSError):
            return  # a full disk: run.log misses the line; the error itself still surfaces
        super().handleError(record)

    def close(self) -> None:
        with contextlib.suppress(OSError):  # flushing onto a full disk
            super().close()


@contextlib.contextmanager
def _logs_to_file(path: Path) -> Iterator[_CountingHandler]:
    """Send logging, Python warnings and transformers' logs and bars to ``path``."""
    handler = _CountingHandler(path)
    root = logging.getLogger()
    saved_level = root.level
    root.addHandler(handler)
    root.setLevel(min(saved_level, logging.INFO) if saved_level else logging.INFO)
    logging.captureWarnings(True)
    restore_hf = _quiet_transformers()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("default")  # each distinct warning once, into run.log
            yield handler
    finally:
        restore_hf()
        logging.captureWarnings(False)
        root.removeHandler(handler)
        root.setLevel(saved_level)
        handler.close()


def _quiet_transformers() -> Callable[[], None]:
    """Route transformers' logging to the root logger and hide its weight-loading bars."""
    import importlib.util

    if importlib.util.find_spec("transformers") is None:
        return lambda: None
    from transformers.utils import logging as hf_logging

    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_default_handler()
    hf_logging.enable_propagation()
    hf_logging.disable_progress_bar()

    def restore() -> None:
        hf_logging.disable_propagation()
        hf_logging.enable_default_handler()
        if bars:
            hf_logging.enable_progress_bar()

    return restore


# ---------------------------------------------------------------------------------------------
# execute
# ---------------------------------------------------------------------------------------------


def execute(
    recipe: str,
    run_fn: Callable[[Any, Run], RunResult],
    cfg: Any,
    *,
    output_dir: Path | None = None,
    resume: bool = False,
    overwrite: bool = False,
    quiet: bool = False,
    command: Sequence[str] | None = None,
) -> tuple[RunResult, Run]:
    """Run ``run_fn(cfg, run)`` in a fresh (or resumed) run directory.

    The directory always ends consistent: ``config.yaml``, ``metrics.jsonl``, ``report.md``,
    ``run.log`` and ``status.json`` saying completed, interrupted or failed, with the command
    that started the run (``command``, the arguments after ``aworld-run``) and, unless it
    completed, the one that resumes it.
    """
    directory = Path(output_dir) if output_dir else default_run_dir(recipe)
    directory = directory.expanduser().absolute()
    if resume:
        saved = directory / "config.yaml"
        if not saved.is_file():
            raise AworldError(f"--resume: '{directory}' holds no run to resume (no config.yaml)")
        refuse_changes(load_config(type(cfg), config_file=saved), cfg, directory)
    else:
        _claim(directory, overwrite=overwrite, clear=False)  # before the lock file goes in
    with _locked(directory):
        if not resume:
            _claim(directory, overwrite=overwrite, clear=True)
        return _execute_locked(recipe, run_fn, cfg, directory, resume, quiet, command)


def _execute_locked(
    recipe: str,
    run_fn: Callable[[Any, Run], RunResult],
    cfg: Any,
    directory: Path,
    resume: bool,
    quiet: bool,
    command: Sequence[str] | None,
) -> tuple[RunResult, Run]:
    tracking = getattr(cfg, "tracking", None)
    run = Run(directory, name=recipe, tracking=tracking, resume=resume, quiet=quiet)
    argv = list(command or [recipe])
    if "--output-dir" not in argv:
        argv += ["--output-dir", str(directory)]
    started_by = _read_status(directory).get("command") if resume else None
    start = started_by or shlex.join(["aworld-run", *argv])
    resume_cmd = shlex.join(["aworld-run", recipe, "--output-dir", str(directory), "--resume"])
    write_atomic(run.dir / "config.yaml", to_yaml(cfg))
    run.write_status("running", recipe=recipe, command=start, resume=resume_cmd, pid=os.getpid())
    started = time.time()
    status, result, error, signum = "failed", RunResult(), None, None
    with _logs_to_file(run.dir / LOG_FILE) as log_file, _sigterm_interrupts():
        try:
            result = run_fn(cfg, run)
            if not isinstance(result, RunResult):
                raise AworldError(
                    f"recipe '{recipe}' returned {type(result).__name__}, not RunResult"
                )
            status = "completed"
            return result, run
        except KeyboardInterrupt as exc:
            status = "interrupted"
            signum = getattr(exc, "signum", signal.SIGINT)
            raise
        except BaseException as exc:
            error = f"{type(exc).__name__}: {exc}"
            logging.getLogger(__name__).exception("run failed")
            raise
        finally:
            run.warnings = log_file.warnings
            extra: dict[str, Any] = {
                "recipe": recipe,
                "seconds": round(time.time() - started, 2),
                "command": start,
            }
            if error:
                extra["error"] = error
            if signum is not None:
                extra["signal"] = signal.Signals(signum).name
            if status != "completed":
                extra["resume"] = resume_cmd
            else:
                extra["outputs"] = {k: _relative(v, run.dir) for k, v in result.outputs.items()}
            run.close()
            _finish(run, recipe, status, result, extra)


def _finish(run: Run, recipe: str, status: str, result: RunResult, extra: dict[str, Any]) -> None:
    """Write ``report.md`` then ``status.json``, each atomically. A full disk leaves either file as
    it was (never truncated): a report that cannot be written is named in the status
    (``report_error``); a status that cannot be written raises an error saying how to go on."""
    try:
        metrics = dict(result.metrics)
        write_report(run.dir, title=recipe, status=status, metrics=metrics, sections=run.sections)
    except OSError as exc:
        extra = {**extra, "report_error": f"report.md not written: {exc}"}
        logging.getLogger(__name__).error("report.md not written: %s", exc)
    try:
        run.write_status(status, **extra)
    except OSError as exc:
        raise AworldError(
            f"the run ended ({status}) but '{run.dir}' could not record it: {exc}; free space "
            f"there and run `{extra.get('resume') or extra.get('command')}` (its files are intact)"
        ) from exc
