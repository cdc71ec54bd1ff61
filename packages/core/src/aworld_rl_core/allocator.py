"""Keep freed memory in the process: the CPU allocator setting ``aworld-run`` applies.

glibc serves every block above its mmap threshold (at most 32 MB) with a fresh ``mmap`` and
unmaps it on free, so each CPU training step faults its logits, activations and gradients in
page by page again: on a tiny model with a 151k vocabulary that is most of the step's system
time (``benchmarks/cpu_allocator.py``, docs/benchmarks.md). :func:`keep_freed_memory` makes
glibc serve large blocks from its heap and keep what is freed for the next step. The price is a
higher resident peak: memory freed once is not handed back to the OS until the process ends.

``AWORLD_RL_KEEP_FREED_MEMORY=0`` in the environment leaves the allocator as it is.

That suits a training job, not a long-lived server whose bursts would pin their peak for
good: a recipe that serves calls :func:`release_freed_memory` (glibc's own defaults back) and
:func:`trim` after a burst (free heap returned to the OS).
"""

from __future__ import annotations

import ctypes
import os
import platform

ENV_VAR = "AWORLD_RL_KEEP_FREED_MEMORY"
_M_TRIM_THRESHOLD = -1  # <malloc.h>: free heap above this much is returned to the OS
_M_MMAP_MAX = -4  # <malloc.h>: how many blocks may be served by mmap at once
_TRIM_THRESHOLD = 2**31 - 1  # the largest value mallopt takes (an int)
_DEFAULT_MMAP_MAX = 65536  # glibc's defaults (mallopt(3))
_DEFAULT_TRIM_THRESHOLD = 128 * 1024


def _glibc() -> ctypes.CDLL | None:
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    return ctypes.CDLL(None)


def keep_freed_memory() -> bool:
    """Tell glibc to serve large blocks from its heap and keep freed memory; whether it did.

    A no-op (False) off glibc, or when ``AWORLD_RL_KEEP_FREED_MEMORY=0``.
    """
    if os.environ.get(ENV_VAR, "1").strip().lower() in ("0", "false", "no", "off"):
        return False
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    libc = ctypes.CDLL(None)  # the running process's own symbols: its glibc's mallopt
    return bool(libc.mallopt(_M_MMAP_MAX, 0)) and bool(
        libc.mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD)
    )


def release_freed_memory() -> bool:
    """Undo :func:`keep_freed_memory`: large blocks mmap'd again and freed heap above glibc's
    default threshold returned to the OS (for long-lived servers); whether it did."""
    libc = _glibc()
    if libc is None:
        return False
    return bool(libc.mallopt(_M_MMAP_MAX, _DEFAULT_MMAP_MAX)) and bool(
        libc.mallopt(_M_TRIM_THRESHOLD, _DEFAULT_TRIM_THRESHOLD)
    )


def trim() -> bool:
    """Hand the heap's free memory back to the OS now (``malloc_trim(0)``); whether any was."""
    libc = _glibc()
    return bool(libc.malloc_trim(0)) if libc is not None else False
