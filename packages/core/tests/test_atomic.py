"""Atomic metadata writes (issue 29, item 6): a full disk or a failing writer leaves the old
file."""

from __future__ import annotations

import errno
import json
import os
import stat
from dataclasses import dataclass

import numpy as np
import pytest

from aworld_rl_core.atomic import atomic_path, write_atomic
from aworld_rl_core.config import option
from aworld_rl_core.errors import AworldError
from aworld_rl_core.runs import RunResult, execute


def test_write_atomic_replaces_and_leaves_no_temp_file(tmp_path):
    path = tmp_path / "store.json"
    write_atomic(path, '{"count": 1}')
    write_atomic(path, b'{"count": 2}')
    assert json.loads(path.read_text()) == {"count": 2}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store.json"]
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask


def test_a_failing_write_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "manifest.json"
    path.write_text('{"hash": "old"}')

    def no_space(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", no_space)
    with pytest.raises(OSError, match="No space"):
        write_atomic(path, '{"hash": "new"}')
    monkeypatch.undo()
    assert path.read_text() == '{"hash": "old"}'
    assert [p.name for p in tmp_path.iterdir()] == ["manifest.json"]


def test_atomic_path_for_writers_that_take_a_path(tmp_path):
    target = tmp_path / "offsets.npy"
    with atomic_path(target, suffix=".npy") as tmp:
        np.save(tmp, np.arange(3))
    assert np.load(target).tolist() == [0, 1, 2]
    with pytest.raises(RuntimeError), atomic_path(target, suffix=".npy") as tmp:
        np.save(tmp, np.arange(5))
        raise RuntimeError("writer failed after writing")
    assert np.load(target).tolist() == [0, 1, 2]
    assert [p.name for p in tmp_path.iterdir()] == ["offsets.npy"]


def test_full_disk_on_a_real_tmpfs_keeps_the_old_file(small_disk):
    path = small_disk.path / "build.json"
    write_atomic(path, json.dumps({"shard_size": 8}))
    assert small_disk.fill() > 0
    with pytest.raises(OSError) as caught:
        write_atomic(path, json.dumps({"shard_size": 16}) + " " * 10_000)
    assert caught.value.errno == errno.ENOSPC
    assert json.loads(path.read_text()) == {"shard_size": 8}
    small_disk.free()
    write_atomic(path, json.dumps({"shard_size": 16}))
    assert json.loads(path.read_text()) == {"shard_size": 16}
    assert sorted(p.name for p in small_disk.path.iterdir()) == ["build.json"]


@dataclass(frozen=True, kw_only=True)
class StepsConfig:
    steps: int = option(3, help="steps")


def test_a_run_that_fills_the_disk_keeps_its_report_and_status_and_resumes(small_disk):
    """The first run is interrupted (report.md says so); its resume fills the disk: report.md and
    status.json stay whole (main truncated report.md to 0 bytes), and once space returns a
    second resume completes."""
    out = small_disk.path / "run"
    calls = []

    def run_fn(cfg, run):
        calls.append(len(calls))
        if len(calls) == 1:
            raise KeyboardInterrupt
        if len(calls) == 2:
            small_disk.fill()
        return RunResult(metrics={"steps": cfg.steps})

    with pytest.raises(KeyboardInterrupt):
        execute("demo.steps", run_fn, StepsConfig(), output_dir=out, quiet=True)
    first_report = (out / "report.md").read_text()
    assert "Status: **interrupted**" in first_report
    with pytest.raises(AworldError, match="could not record it.*No space left"):
        execute("demo.steps", run_fn, StepsConfig(), output_dir=out, resume=True, quiet=True)
    assert (out / "report.md").read_text() == first_report
    status = json.loads((out / "status.json").read_text())
    assert status["status"] == "running"  # the last state that could be recorded, whole
    small_disk.free()
    result, _ = execute(
        "demo.steps", run_fn, StepsConfig(), output_dir=out, resume=True, quiet=True
    )
    assert result.metrics == {"steps": 3}
    assert json.loads((out / "status.json").read_text())["status"] == "completed"
    assert "Status: **completed**" in (out / "report.md").read_text()
    assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp")]
