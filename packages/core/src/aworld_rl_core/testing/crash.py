"""Crash-and-fault harness: a recipe killed with SIGKILL at a seeded random point, resumed, and
compared with an uninterrupted run of the same command.

:func:`check_kill_resume` runs ``aworld-run <recipe> --preset <preset> --output-dir A``
uninterrupted, then the same command into ``B`` killed (``kill -9`` of its whole process
group) at a point drawn from ``random.Random(seed)`` between the moment its run directory
appears and the end the uninterrupted run took, then ``aworld-run <recipe> --output-dir B
--resume`` until it completes. It returns the differences between ``A`` and ``B``:

- ``metrics.jsonl``: the same rows, once per step, equal after dropping timing keys;
- every ``validation.jsonl`` (validation history) under the run, the same way;
- every output ``status.json`` names (files byte for byte after the run directory's path is
  replaced, JSON Lines as a multiset of rows without timing keys; folders file by file),
  minus the case's ``ignore`` list.

The LLM calls a process made and the records a resume found done (``PROCESS_ACCOUNTING``)
are not compared either: a resumed run rightly makes fewer calls. Every run gets
``PYTHONHASHSEED=0`` (unless the case's ``env`` sets it), so what iterates a
set comes out in the same order in each run. Timing keys (wall times, rates, latencies, and
the case's own ``timing`` patterns) are left out of every comparison; a step counts as
logged twice when it has more rows after the resume
than in the uninterrupted run (a training and an evaluation row may share a step).

:func:`check_full_disk` runs the recipe with its output directory on a small tmpfs that is
filled once the run has started, expects a clean failure, frees the space and resumes.

:func:`fuzz_for` feeds generated cases to a target until a CPU-time budget is spent (fuzz corpora
in CI on a budget, not a count). Nothing here asserts wall-clock time.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TIMING = re.compile(
    r"(^time$|^built$|(^|[_/])(time|seconds|runtime|elapsed|latency)$|_s$|_ms$|per_s(ec(ond)?)?$|"
    r"samples_per_second|steps_per_second|^uptime)"
)


@dataclass(frozen=True)
class CrashCase:
    """One recipe under the harness."""

    recipe: str
    preset: str = "tiny-cpu"
    overrides: Sequence[str] = ()
    ignore: Sequence[str] = ()  # output names (status.json keys) not compared
    timing: Sequence[str] = ()  # metric keys (regexes) that measure wall time, not compared
    env: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = 1800.0  # a hung run fails the test instead of CI
    # globs under the run directory: kill when a new match appears after the drawn point
    # (a checkpoint's staging folder: a kill mid-save); empty: kill at the drawn point
    kill_when: Sequence[str] = ()

    @property
    def id(self) -> str:
        return self.recipe


@dataclass
class CrashReport:
    """What the harness did and found; ``differences`` is empty when the resume was exact."""

    case: CrashCase
    seed: int
    kill_after_s: float
    killed: bool  # False: the run finished before the kill point (nothing was interrupted)
    differences: list[str]
    whole: Path
    resumed: Path
    killed_at: str | None = None  # kill_when: the path whose appearance set off the kill
    mid_save: bool = False  # that path was still there after the kill (a save was cut)
    last_step: Any = None  # the last step the killed run had logged in metrics.jsonl

    def summary(self) -> str:
        where = f" at {self.killed_at} (mid-save: {self.mid_save})" if self.killed_at else ""
        where += f", after logging step {self.last_step}" if self.last_step is not None else ""
        head = (
            f"{self.case.recipe} seed {self.seed}: "
            + (f"killed after {self.kill_after_s:.2f} s{where}" if self.killed else "not killed")
            + f", compared {self.whole} with {self.resumed}"
        )
        return "\n".join([head, *self.differences])


def command(case: CrashCase, directory: Path, *, resume: bool = False) -> list[str]:
    base = [sys.executable, "-m", "aworld_rl_core.cli", case.recipe, "--output-dir", str(directory)]
    if resume:
        return [*base, "--resume", "--quiet"]
    return [*base, "--preset", case.preset, "--quiet", *case.overrides]


def _start(case: CrashCase, argv: list[str], log: Path) -> subprocess.Popen:
    # one hash seed for every run: set order is then the same in each (TRL's model card lists
    # its tags from a set: with random seeds two whole runs already differ there)
    env = {**os.environ, "PYTHONHASHSEED": "0", **case.env}
    handle = log.open("ab")
    try:
        return subprocess.Popen(
            argv,
            stdout=handle,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # its own group: the kill takes its children too
        )
    finally:
        handle.close()


def _finish(case: CrashCase, argv: list[str], log: Path) -> None:
    proc = _start(case, argv, log)
    try:
        code = proc.wait(timeout=case.timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise AssertionError(f"{' '.join(argv)} ran over {case.timeout_s} s; log: {log}") from None
    if code != 0:
        tail = log.read_text(errors="replace")[-3000:]
        raise AssertionError(f"{' '.join(argv)} exited {code}:\n{tail}")


def _kill_group(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def check_kill_resume(case: CrashCase, root: Path, seed: int) -> CrashReport:
    """Uninterrupted run, killed run, resume; the report lists every difference."""
    root.mkdir(parents=True, exist_ok=True)
    # names of one length: a path pickled into a binary file (training_args.bin) keeps its
    # length prefix, so the two compare equal once each run's path is replaced
    whole, killed = root / "run-a", root / "run-b"
    began = time.monotonic()
    proc = _start(case, command(case, whole), root / "whole.log")
    ready = None
    while proc.poll() is None:
        if ready is None and (whole / "config.yaml").is_file():
            ready = time.monotonic() - began
        if time.monotonic() - began > case.timeout_s:
            _kill_group(proc)
            raise AssertionError(f"{case.recipe} ran over {case.timeout_s} s")
        time.sleep(0.02)
    if proc.returncode != 0:
        tail = (root / "whole.log").read_text(errors="replace")[-3000:]
        raise AssertionError(
            f"the uninterrupted {case.recipe} run exited {proc.returncode}:\n{tail}"
        )
    took = time.monotonic() - began
    start = ready if ready is not None else 0.0
    kill_after = random.Random(seed).uniform(start, max(start, took))
    was_killed, killed_at, mid_save = False, None, False
    for attempt in range(4):  # a run quicker than the uninterrupted one may finish first
        if attempt:
            shutil.rmtree(killed, ignore_errors=True)
            kill_after = start + (kill_after - start) / 2
        proc = _start(case, command(case, killed), root / "killed.log")
        try:
            proc.wait(timeout=kill_after)
        except subprocess.TimeoutExpired:
            if case.kill_when:
                killed_at = _kill_on_appearance(proc, killed, case)
                if killed_at is None:  # finished without another match: an earlier point
                    continue
                mid_save = (killed / killed_at).exists()
            else:
                _kill_group(proc)
            was_killed = True
            break
    last_step = _last_step(killed / "metrics.jsonl") if was_killed else None
    if was_killed:  # (never interrupted: the completed run is compared as it is)
        resume = (killed / "config.yaml").is_file()  # else killed before its directory existed
        _finish(case, command(case, killed, resume=resume), root / "resumed.log")
    differences = compare_runs(whole, killed, ignore=case.ignore, timing=case.timing)
    return CrashReport(
        case,
        seed,
        kill_after,
        was_killed,
        differences,
        whole,
        killed,
        killed_at,
        mid_save,
        last_step,
    )


def _last_step(path: Path) -> Any:
    """The ``step`` of the last whole row of a metrics file (None: no row)."""
    last = None
    with contextlib.suppress(OSError):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            with contextlib.suppress(ValueError, AttributeError):
                last = json.loads(line).get("step", last)
    return last


def _matches(run_dir: Path, patterns: Sequence[str]) -> set[str]:
    return {str(p.relative_to(run_dir)) for g in patterns for p in run_dir.glob(g)}


def _kill_on_appearance(proc: subprocess.Popen, run_dir: Path, case: CrashCase) -> str | None:
    """Kill ``proc``'s group as soon as a path matching ``case.kill_when`` appears that was not
    there when this was called; the path (relative to ``run_dir``), or None when the process
    ended first."""
    seen = _matches(run_dir, case.kill_when)
    began = time.monotonic()
    while proc.poll() is None:
        new = _matches(run_dir, case.kill_when) - seen
        if new:
            _kill_group(proc)
            return sorted(new)[0]
        if time.monotonic() - began > case.timeout_s:
            _kill_group(proc)
            raise AssertionError(f"{case.recipe} ran over {case.timeout_s} s")
        time.sleep(0.002)
    return None


# ------------------------------------------------------------------------------- comparing


# what one process did rather than what the run produced: the LLM calls this process made
# (``llm.guard``: a resumed run makes only the calls its killed part had not), the records a
# resume found done
PROCESS_ACCOUNTING = frozenset({"llm_calls", "llm_errors", "skipped_done"})


def is_timing(key: Any) -> bool:
    """Whether a metric key is left out of comparisons: it measures wall time (any
    ``/``-separated part does: ``entries_per_s/simple_python``, ``train/step_time``) or is
    one process's accounting (``PROCESS_ACCOUNTING``)."""
    parts = str(key).split("/")
    return parts[-1] in PROCESS_ACCOUNTING or any(TIMING.search(part) for part in parts)


def without_timing(row: Any) -> Any:
    """``row`` with timing keys (wall times, rates, timestamps) dropped, recursively."""
    if isinstance(row, dict):
        return {k: without_timing(v) for k, v in row.items() if not is_timing(k)}
    if isinstance(row, list):
        return [without_timing(v) for v in row]
    return row


def _rows(path: Path, timing: Sequence[str] = ()) -> list[Any]:
    if not path.is_file():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    rows = [without_timing(json.loads(line)) for line in lines if line.strip()]
    if timing:  # the case's own wall-time measures
        extra = re.compile("|".join(f"(?:{t})" for t in timing))
        rows = [
            {k: v for k, v in r.items() if not extra.search(str(k))} if isinstance(r, dict) else r
            for r in rows
        ]
    # what a resume reports about itself (``resume_found_checkpoint``) is no training metric
    rows = [
        {k: v for k, v in r.items() if not str(k).startswith("resume_")}
        if isinstance(r, dict)
        else r
        for r in rows
    ]
    return [r for r in rows if r != {}]


def _same(a: Any, b: Any, rel: float = 1e-6) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            return math.isclose(a, b, rel_tol=rel, abs_tol=1e-9) or (a != a and b != b)
        return False
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k], rel) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y, rel) for x, y in zip(a, b, strict=True))
    return a == b


def compare_rows(name: str, a: list[Any], b: list[Any]) -> list[str]:
    out = []
    # a step may have rows of several kinds (training, then evaluation at that step): a step
    # is repeated when it has more rows after the resume than in the uninterrupted run
    steps_a = Counter(r.get("step") for r in a if isinstance(r, dict))
    steps_b = Counter(r.get("step") for r in b if isinstance(r, dict))
    repeated = sorted(
        s for s, n in steps_b.items() if s is not None and n > 1 and n > steps_a.get(s, 0)
    )
    if repeated:
        out.append(f"{name}: step(s) {repeated} logged more than once after the resume")
    if len(a) != len(b):
        out.append(f"{name}: {len(a)} rows uninterrupted, {len(b)} after kill and resume")
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if not _same(x, y):
            keys = (
                sorted(k for k in {*x, *y} if not _same(x.get(k), y.get(k)))
                if isinstance(x, dict) and isinstance(y, dict)
                else []
            )
            out.append(f"{name}: row {i} differs" + (f" in {keys[:8]}" if keys else ""))
    return out


def _canonical_jsonl(path: Path, run_dir: Path) -> Counter:
    text = path.read_text(encoding="utf-8", errors="replace").replace(str(run_dir), "<run>")
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            rows.append(json.dumps(without_timing(json.loads(line)), sort_keys=True))
        except ValueError:
            rows.append(line)
    return Counter(rows)


def _compare_file(name: str, a: Path, b: Path, run_a: Path, run_b: Path) -> list[str]:
    if not b.is_file():
        return [f"{name}: missing after the resume"]
    if a.suffix == ".jsonl":
        ca, cb = _canonical_jsonl(a, run_a), _canonical_jsonl(b, run_b)
        if ca != cb:
            only_a, only_b = sum((ca - cb).values()), sum((cb - ca).values())
            return [f"{name}: {only_a} row(s) only uninterrupted, {only_b} only after resume"]
        return []
    if a.suffix == ".json":
        try:
            ja = without_timing(json.loads(a.read_text().replace(str(run_a), "<run>")))
            jb = without_timing(json.loads(b.read_text().replace(str(run_b), "<run>")))
        except ValueError:  # JSON Lines under a .json name (BFCL's result files)
            ca, cb = _canonical_jsonl(a, run_a), _canonical_jsonl(b, run_b)
            return [] if ca == cb else [f"{name}: JSON Lines content differs"]
        else:
            return [] if _same(ja, jb) else [f"{name}: JSON content differs"]
    ba, bb = a.read_bytes(), b.read_bytes()
    if ba == bb:
        return []
    ba = ba.replace(str(run_a).encode(), b"<run>")
    bb = bb.replace(str(run_b).encode(), b"<run>")
    return [] if ba == bb else [f"{name}: content differs"]


# transformers' pickled TrainingArguments: the resumed run's own (its resume flag, log dir)
NOT_COMPARED = frozenset({"training_args.bin"})


def _visible_files(folder: Path) -> list[Path]:
    """Files under ``folder``, relative, without hidden ones (locks, temporaries) and
    ``NOT_COMPARED``."""
    if not folder.is_dir():
        return []
    found = (p.relative_to(folder) for p in folder.rglob("*") if p.is_file())
    return sorted(
        p
        for p in found
        if not any(part.startswith(".") for part in p.parts) and p.name not in NOT_COMPARED
    )


def _outputs(run_dir: Path) -> dict[str, str]:
    status = json.loads((run_dir / "status.json").read_text(encoding="utf-8"))
    return {k: str(v) for k, v in (status.get("outputs") or {}).items()}


def compare_runs(
    whole: Path, resumed: Path, *, ignore: Sequence[str] = (), timing: Sequence[str] = ()
) -> list[str]:
    """Every difference between an uninterrupted run directory and a killed-and-resumed one."""
    out: list[str] = []
    status = json.loads((resumed / "status.json").read_text(encoding="utf-8"))
    if status.get("status") != "completed":
        out.append(f"status.json says {status.get('status')!r} after the resume")
    out += compare_rows(
        "metrics.jsonl",
        _rows(whole / "metrics.jsonl", timing),
        _rows(resumed / "metrics.jsonl", timing),
    )
    for history in sorted(whole.rglob("validation.jsonl")):
        relative = history.relative_to(whole)
        out += compare_rows(
            str(relative), _rows(history, timing), _rows(resumed / relative, timing)
        )
    outputs_a, outputs_b = _outputs(whole), _outputs(resumed)
    for name, target in sorted(outputs_a.items()):
        if name in ignore:
            continue
        if name not in outputs_b:
            out.append(f"output {name!r} missing after the resume")
            continue
        a = Path(target) if Path(target).is_absolute() else whole / target
        b = (
            Path(outputs_b[name])
            if Path(outputs_b[name]).is_absolute()
            else resumed / outputs_b[name]
        )
        if a.is_dir():
            files, others = _visible_files(a), _visible_files(b)
            if files != others:
                out.append(f"output {name!r}: other files after the resume")
                continue
            for f in files:
                out += _compare_file(f"output {name!r} {f}", a / f, b / f, whole, resumed)
        elif a.is_file():
            out += _compare_file(f"output {name!r}", a, b, whole, resumed)
    return out


# ------------------------------------------------------------------------------- full disk


def check_full_disk(case: CrashCase, disk: Any, root: Path) -> list[str]:
    """Run ``case`` with its output directory on ``disk`` (a mounted ``SmallDisk``), fill the
    disk once the run has started, expect a failure (not a hang), free the space, resume, and
    compare with an uninterrupted run elsewhere. Returns the differences."""
    root.mkdir(parents=True, exist_ok=True)
    whole, target = root / "whole", disk.path / "run"
    _finish(case, command(case, whole), root / "whole.log")
    proc = _start(case, command(case, target), root / "full.log")
    began = time.monotonic()
    while proc.poll() is None and not (target / "config.yaml").is_file():
        if time.monotonic() - began > case.timeout_s:
            _kill_group(proc)
            raise AssertionError(f"{case.recipe} never wrote its run directory")
        time.sleep(0.01)
    disk.fill()
    try:
        proc.wait(timeout=case.timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise AssertionError(f"{case.recipe} hung on a full disk") from None
    disk.free()
    log = (root / "full.log").read_text(errors="replace")
    problems = []
    if proc.returncode == 0:
        problems.append("the run on a full disk reported success")
    if "Traceback" in log:
        problems.append("a full disk ended the run with a traceback, not an error message")
    _finish(case, command(case, target, resume=True), root / "resumed.log")
    return problems + compare_runs(whole, target, ignore=case.ignore, timing=case.timing)


# ------------------------------------------------------------------------------------- fuzz


def fuzz_for(
    cases: Iterator[Any], target: Callable[[Any], Any], cpu_seconds: float
) -> tuple[int, list[tuple[Any, Exception]]]:
    """Call ``target`` on generated cases until this process has spent ``cpu_seconds`` of CPU
    time (``time.process_time``: a budget that does not depend on how loaded the machine is);
    returns how many ran and the cases that raised, with what."""
    spent_from = time.process_time()
    ran = 0
    failures: list[tuple[Any, Exception]] = []
    for case in cases:
        if time.process_time() - spent_from >= cpu_seconds:
            break
        ran += 1
        try:
            target(case)
        except Exception as exc:  # every escape is a finding
            failures.append((case, exc))
    return ran, failures
