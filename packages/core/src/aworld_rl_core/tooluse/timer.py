"""A backstop time bound for tool calls: ``within(seconds, fn)`` stops ``fn`` if it runs past it
(``arm`` / ``disarm`` around a call do the same).

It costs a clock read per call. One watchdog thread per process (started with the first bounded
call) sends SIGALRM to the main thread when the running call is past its deadline; the SIGALRM
handler raises :class:`CallTimeout` in that call. So it works in the main thread only, and it
interrupts Python code only: a C-level computation (a huge ``Decimal.sqrt``) runs to its end,
which is why calls are bounded by their arguments first (``dispatch.CallLimits``). A SIGALRM
that the watchdog did not send goes to the handler that was installed before.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")
_POLL_S = 0.05


class CallTimeout(BaseException):
    """Raised inside a call that ran past its deadline (a BaseException, so that a tool's own
    ``except Exception`` does not swallow it)."""


class _State:
    deadline: float | None = None  # perf_counter() time the main thread's call must end by
    sent = False  # the watchdog sent the pending SIGALRM
    started = False  # the watchdog runs in this process
    previous: Any = signal.SIG_DFL  # the SIGALRM handler before ours


_MAIN = threading.main_thread().ident


def _forked() -> None:  # the child has no watchdog thread and a new main thread
    global _MAIN
    _MAIN = threading.main_thread().ident
    _State.started, _State.deadline, _State.sent = False, None, False


os.register_at_fork(after_in_child=_forked)


def within(seconds: float | None, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)``, raising :class:`CallTimeout` once it runs ``seconds`` (main
    thread only; elsewhere, or with ``None``, it runs unbounded)."""
    outer = arm(seconds)
    try:
        return fn(*args, **kwargs)
    finally:
        disarm(outer)


_OFF = object()


def arm(seconds: float | None) -> Any:
    """Bound what the main thread runs from now on by ``seconds``; pass the result to
    :func:`disarm` when it ends. Does nothing off the main thread or with ``None``."""
    if seconds is None or threading.get_ident() != _MAIN:
        return _OFF
    if not _State.started:
        _start()
    outer = _State.deadline
    deadline = time.perf_counter() + seconds
    _State.deadline = deadline if outer is None or deadline < outer else outer
    return outer


def disarm(outer: Any) -> None:
    """End the bound :func:`arm` started (the enclosing one, if any, applies again)."""
    if outer is not _OFF:
        _State.deadline = outer


def _start() -> None:
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    _State.previous = signal.SIG_DFL if previous is None else previous
    _State.started = True
    thread = threading.Thread(target=_watch, args=(_MAIN,), name="aworld-rl-call-timer")
    thread.daemon = True
    thread.start()


def _watch(main: int) -> None:
    while True:
        deadline = _State.deadline
        now = time.perf_counter()
        if deadline is None or now < deadline:
            time.sleep(_POLL_S if deadline is None else min(_POLL_S, deadline - now))
            continue
        if signal.getsignal(signal.SIGALRM) is _on_alarm and not _State.sent:
            _State.sent = True
            signal.pthread_kill(main, signal.SIGALRM)
        time.sleep(_POLL_S)


def _on_alarm(signum: int, frame: Any) -> None:
    if _State.sent:
        _State.sent = False
        deadline = _State.deadline
        if deadline is not None and time.perf_counter() >= deadline:
            _State.deadline = None  # raise once; the call's wrapper restores the outer one
            raise CallTimeout
        return  # the overdue call ended before the signal arrived
    previous = _State.previous
    if callable(previous):
        previous(signum, frame)
    elif previous == signal.SIG_DFL:  # someone else's alarm, with the default action
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.raise_signal(signal.SIGALRM)
