"""Children die with their parent (issue 29, item 7): a real kill -9 of the parent ends the child
and the child's own children (its process group)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")

PARENT = textwrap.dedent(
    """
    import subprocess, sys, time
    from pathlib import Path
    from aworld_rl_core.children import reap_group_with_parent, tethered_popen_kwargs

    out = Path(sys.argv[1])
    # a child that starts a grandchild of its own (as chromedriver starts chromium)
    child = subprocess.Popen(
        ["sh", "-c", "sleep 300 & echo $! > " + str(out / "grandchild") + "; wait"],
        **tethered_popen_kwargs(),
    )
    watchdog = reap_group_with_parent(child.pid)
    while not (out / "grandchild").exists() or not (out / "grandchild").read_text().strip():
        time.sleep(0.05)
    (out / "child").write_text(str(child.pid))
    time.sleep(300)
    """
)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"  # a zombie is dead, waiting for its (new) parent to reap it


def wait_dead(pids: list[int], seconds: float = 30.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = [p for p in pids if alive(p)]
        if not left:
            return []
        time.sleep(0.1)
    return [p for p in pids if alive(p)]


def test_kill_9_of_the_parent_ends_the_child_and_its_group(tmp_path):
    script = tmp_path / "parent.py"
    script.write_text(PARENT)
    parent = subprocess.Popen([sys.executable, str(script), str(tmp_path)])
    pids: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "child").exists():
            assert parent.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        pids = [int((tmp_path / n).read_text()) for n in ("child", "grandchild")]
        assert all(alive(p) for p in pids)
        os.kill(parent.pid, signal.SIGKILL)  # a real kill -9: no cleanup code runs
        parent.wait(timeout=30)
        assert wait_dead(pids) == []  # main had no such helper: both ran on, orphaned
    finally:
        parent.kill()
        for pid in pids:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_a_child_outlives_nothing_when_released(tmp_path):
    from aworld_rl_core.children import reap_group_with_parent, release, tethered_popen_kwargs

    child = subprocess.Popen(["sleep", "300"], **tethered_popen_kwargs())
    assert os.getpgid(child.pid) == child.pid  # a process group of its own
    watchdog = reap_group_with_parent(child.pid)
    release(watchdog)  # closing normally: the watchdog ends the group and exits
    assert child.wait(timeout=30) == -signal.SIGKILL
    assert watchdog.returncode == 0


# a stand-in for the trainer: a shell that starts a grandchild (as verl starts Ray, LLaMA-Factory
# torchrun's workers) and records both pids
STAND_IN = "echo $$ > {out}/child; sleep 300 & echo $! > {out}/grandchild; wait"

LAUNCHERS = {
    # LLaMA-Factory: the backend's own worker runner, with a stand-in command
    "llamafactory": textwrap.dedent(
        """
        import sys
        from pathlib import Path
        from aworld_rl_core.backends.llamafactory.backend import _run_worker

        class Run:
            def progress(self, items, total=None, desc=""):
                return items
            def log(self, metrics, step=None):
                pass

        out = Path(sys.argv[1])
        cmd = ["sh", "-c", sys.argv[2]]
        _run_worker(cmd, {}, out, out / "worker.log", out / "events.jsonl", Run(), None)
        """
    ),
    # verl: the backend's launch runner, with a stand-in command
    "verl": textwrap.dedent(
        """
        import sys
        from pathlib import Path
        from aworld_rl_core.backends.verl.backend import VerlBackend
        from aworld_rl_core.backends.verl.launcher import Launch

        out = Path(sys.argv[1])
        launch = Launch(command=["sh", "-c", sys.argv[2]], overrides=[], data_dir=out)
        VerlBackend._execute(launch, out / "verl.log")
        """
    ),
}


@pytest.mark.parametrize("backend", sorted(LAUNCHERS))
def test_kill_9_of_a_training_launch_ends_the_trainer_and_its_children(tmp_path, backend):
    script = tmp_path / "parent.py"
    script.write_text(LAUNCHERS[backend])
    stand_in = STAND_IN.format(out=tmp_path)
    parent = subprocess.Popen([sys.executable, str(script), str(tmp_path), stand_in])
    pids: list[int] = []
    try:
        deadline = time.monotonic() + 120
        while not all(
            (tmp_path / n).is_file() and (tmp_path / n).read_text().strip()
            for n in ("child", "grandchild")
        ):
            assert parent.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        pids = [int((tmp_path / n).read_text()) for n in ("child", "grandchild")]
        assert all(alive(p) for p in pids)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=30)
        assert wait_dead(pids) == []  # main: both ran on, orphaned
    finally:
        parent.kill()
        for pid in pids:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_tethered_process_stops_its_group_when_the_block_ends(tmp_path):
    from aworld_rl_core.children import tethered_process

    with tethered_process(["sh", "-c", STAND_IN.format(out=tmp_path)]) as proc:
        while (
            not (tmp_path / "grandchild").is_file()
            or not (tmp_path / "grandchild").read_text().strip()
        ):
            time.sleep(0.05)
        grandchild = int((tmp_path / "grandchild").read_text())
        assert os.getpgid(proc.pid) == proc.pid != os.getpgid(0)
    assert proc.returncode == -signal.SIGTERM  # stopped on the way out
    assert wait_dead([grandchild]) == []
