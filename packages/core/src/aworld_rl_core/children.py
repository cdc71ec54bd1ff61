"""Child processes that die with their parent, even when the parent is killed with ``kill -9``.

A recipe that starts a helper program (a browser driver, a server) must not leave it running when
the recipe's process dies without cleaning up. Two mechanisms, used together:

- :func:`tethered_popen_kwargs`: ``subprocess.Popen`` arguments that put the child in a process
  group of its own and, on Linux, ask the kernel to SIGKILL it when its parent dies
  (``prctl(PR_SET_PDEATHSIG)`` through ``ctypes``, set between fork and exec).
- :func:`reap_group_with_parent`: a small watchdog process that holds the read end of a pipe
  whose write end only the parent holds; when the parent dies, however it dies, the pipe closes
  and the watchdog SIGKILLs the child's whole process group, so grandchildren (chromium's
  renderer and GPU processes under chromedriver) go too.

:func:`tethered_process` does both for a command and stops its whole group when the ``with``
block ends (the LLaMA-Factory and verl launches use it).

The parent-death signal fires when the *thread* that started the child exits: start tethered
children from a thread that lives as long as they should (the main thread).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from typing import Any

__all__ = ["reap_group_with_parent", "release", "tethered_popen_kwargs", "tethered_process"]

PR_SET_PDEATHSIG = 1

_WATCHDOG = """
import os, signal, sys
group = int(sys.argv[1])
try:
    while sys.stdin.buffer.read(1):  # nothing is ever written: EOF when the parent is gone
        pass
except BaseException:
    pass
try:
    os.killpg(group, signal.SIGKILL)
except OSError:
    pass
"""


def _die_with_parent(parent: int, prctl: Any) -> None:
    """In the child, between fork and exec: a process group of its own and SIGKILL when the
    parent dies (Linux). Runs in a forked child: no import, no allocation beyond the call."""
    os.setpgid(0, 0)
    if prctl is not None:
        prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl: nobody will signal us
            os._exit(1)


def tethered_popen_kwargs() -> dict[str, Any]:
    """``Popen`` keyword arguments for a child that dies with this process (see module doc)."""
    parent = os.getpid()
    prctl = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None
    return {"preexec_fn": lambda: _die_with_parent(parent, prctl)}


def reap_group_with_parent(group: int) -> subprocess.Popen[bytes]:
    """Start a watchdog that SIGKILLs process group ``group`` when this process dies (or when
    :func:`release` closes its pipe). Returns the watchdog; keep a reference for its lifetime."""
    read, write = os.pipe()
    try:
        watchdog = subprocess.Popen(
            [sys.executable, "-I", "-c", _WATCHDOG, str(group)],
            stdin=read,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C to the terminal's group does not end it first
            close_fds=True,
        )
    except BaseException:
        os.close(write)
        raise
    finally:
        os.close(read)
    os.set_inheritable(write, False)  # only this process holds the write end
    watchdog._aworld_pipe = write  # type: ignore[attr-defined]
    return watchdog


def release(watchdog: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    """Close the watchdog's pipe (it kills what is left of its group) and wait for it."""
    write = getattr(watchdog, "_aworld_pipe", None)
    if write is not None:
        with contextlib.suppress(OSError):
            os.close(write)
        watchdog._aworld_pipe = None  # type: ignore[attr-defined]
    with contextlib.suppress(subprocess.TimeoutExpired):
        watchdog.wait(timeout=timeout)


@contextlib.contextmanager
def tethered_process(
    command: Sequence[str], *, stop_timeout: float = 30.0, **popen_kwargs: Any
) -> Iterator[subprocess.Popen]:
    """``subprocess.Popen(command, **popen_kwargs)`` in a process group of its own that dies
    with this process (kill -9 included: parent-death signal and a watchdog on the group).

    When the block ends, a group still running gets SIGTERM, then SIGKILL after
    ``stop_timeout`` seconds; whatever is left of the group (grandchildren) is killed. The
    child is in its own group, so a Ctrl-C at the terminal reaches this process only, which
    stops the child on its way out.
    """
    proc = subprocess.Popen(list(command), **popen_kwargs, **tethered_popen_kwargs())
    try:
        watchdog = reap_group_with_parent(proc.pid)
    except BaseException:
        _stop_group(proc, 0.0)
        raise
    try:
        yield proc
    finally:
        try:
            _stop_group(proc, stop_timeout)
        finally:
            release(watchdog)


def _stop_group(proc: subprocess.Popen, timeout: float) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
