"""Atomic file replacement: a reader (a ``--resume``, a server loading an index) sees the old
file or the new one, never half of one.

Every file a resume reads (run status, ``config.yaml``, ``report.md``, a stage or curriculum state,
an index's ``store.json`` / ``build.json`` / ``manifest.json``) is written through
:func:`write_atomic` (text or bytes) or :func:`atomic_path` (for writers that take a path, such as
``np.save`` or ``faiss.write_index``): the data goes to a temporary file beside the target, is
flushed and fsynced, then renamed over the target (``os.replace``, atomic on POSIX), and the
directory is fsynced so the rename survives a power cut. When the disk fills (``ENOSPC``) or the
writer raises, the temporary file is removed and the old file is left as it was.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

__all__ = ["atomic_path", "write_atomic"]


def _temp_beside(path: Path, suffix: str = "") -> Path:
    # pid + random: two processes (or threads) writing the same target never share a temp file
    return path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp{suffix}")


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(directory: Path) -> None:
    # some filesystems refuse fsync on a directory; the rename still happened
    with contextlib.suppress(OSError):
        _fsync_path(directory)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str], *, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path beside ``path``; when the block ends without an exception the file
    written there is fsynced and renamed over ``path``. On any exception (``ENOSPC`` included) the
    temporary file is removed and ``path`` is untouched.

    ``suffix`` ends the temporary name, for writers that add an extension (``np.save`` adds
    ``.npy`` to names that lack it: pass ``suffix=".npy"``).
    """
    target = Path(path)
    tmp = _temp_beside(target, suffix)
    try:
        yield tmp
        _fsync_path(tmp)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    _fsync_dir(target.parent)


def write_atomic(
    path: str | os.PathLike[str], data: str | bytes, *, encoding: str = "utf-8"
) -> Path:
    """Replace ``path`` with ``data`` (text is encoded with ``encoding``) atomically; returns the
    path. The new file gets the usual permissions (``0o666`` less the umask)."""
    target = Path(path)
    payload = data.encode(encoding) if isinstance(data, str) else bytes(data)
    with atomic_path(target) as tmp:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            view = memoryview(payload)
            while view:
                written = os.write(fd, view)
                view = view[written:]
        finally:
            os.close(fd)
    return target
