"""Fault injection for tests: a small real filesystem that can be filled (``ENOSPC``)."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from pathlib import Path

FILLER = ".filler"


class SmallDisk:
    """A tmpfs of ``size`` mounted at ``path`` (needs root); :meth:`fill` takes every free byte,
    :meth:`free` gives them back."""

    def __init__(self, path: Path, size: str = "1m") -> None:
        self.path = Path(path)
        self.size = size
        self.mounted = False

    def mount(self) -> str | None:
        """Mount it; the reason when that is impossible here (not root, no ``mount``)."""
        if os.geteuid() != 0 or shutil.which("mount") is None:
            return "mounting a tmpfs needs root and mount(8)"
        self.path.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={self.size}", "tmpfs", str(self.path)],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            return f"mount -t tmpfs failed: {proc.stderr.strip()}"
        self.mounted = True
        return None

    def fill(self) -> int:
        """Write a filler file until the disk is full; returns the bytes it took."""
        chunk = b"\0" * 4096
        taken = 0
        fd = os.open(self.path / FILLER, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            while True:
                try:
                    taken += os.write(fd, chunk)
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    return taken
        finally:
            os.close(fd)

    def free(self) -> None:
        (self.path / FILLER).unlink(missing_ok=True)

    def unmount(self) -> None:
        if self.mounted:
            subprocess.run(["umount", "-l", str(self.path)], check=False, capture_output=True)
            self.mounted = False
