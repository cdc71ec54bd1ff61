"""Data paths in configs: a file path, or ``package:relative/path`` for files shipped as
package data (so presets hold no absolute paths)."""

from __future__ import annotations

import importlib.util
import re
from importlib import resources
from pathlib import Path

_PKG_REF = re.compile(r"^([A-Za-z_][\w.]*):(.+)$")


def resolve_path(spec: str) -> Path:
    """``spec`` as a local path; ``pkg:rel/path`` resolves inside an installed package."""
    if not spec:
        raise ValueError("empty data path; set data.path to a JSON/JSONL file")
    match = _PKG_REF.match(spec)
    if match and not Path(spec).exists() and importlib.util.find_spec(match.group(1)):
        path = Path(str(resources.files(match.group(1)).joinpath(match.group(2))))
    else:
        path = Path(spec).expanduser()
    if not path.exists():
        raise FileNotFoundError(f"data path '{spec}' does not exist ({path})")
    return path


def model_source(value: str) -> str:
    """A model to load: a finished run's directory (``funreason.sft``'s, any backend) stands for
    the final model that run wrote, wherever its backend put it; anything else is kept."""
    from aworld_rl_core.runs import run_output

    found = run_output(value, "model") if value else None
    return str(found) if found is not None else value
