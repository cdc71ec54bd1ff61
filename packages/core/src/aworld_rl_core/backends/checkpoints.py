"""A run's checkpoint folders: ``<prefix><step>`` (``checkpoint-N``, verl's ``global_step_N``)."""

from __future__ import annotations

import re
from pathlib import Path


def checkpoints(directory: Path, prefix: str = "checkpoint-") -> list[Path]:
    """The ``<prefix><N>`` folders in ``directory`` (N an integer), lowest N first."""
    if not directory.is_dir():
        return []
    pattern = re.compile(re.escape(prefix) + r"(\d+)")
    steps = [
        (int(match.group(1)), path)
        for path in directory.iterdir()
        if (match := pattern.fullmatch(path.name)) and path.is_dir()
    ]
    return [path for _, path in sorted(steps)]


def latest_checkpoint(directory: Path, prefix: str = "checkpoint-") -> Path | None:
    """The ``<prefix><N>`` folder with the largest N (None when there is none)."""
    found = checkpoints(directory, prefix)
    return found[-1] if found else None
