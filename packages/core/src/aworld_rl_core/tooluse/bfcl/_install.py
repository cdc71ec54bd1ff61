"""Where the installed bfcl-eval lives, which version it is, and how to install it.

bfcl-eval must be installed without its dependencies (they pull every vendor SDK and a CUDA
torch); this module knows the one command that does it and raises an ImportError naming it.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

BFCL_EVAL_VERSION = "2026.3.23"
"""The bfcl-eval release this adapter is tested against."""

LIGHT_DEPENDENCIES = (
    "filelock",
    "tenacity",
    "mpmath",
    "overrides",
    "tree_sitter==0.21.3",
    "tree-sitter-java==0.21.0",
    "tree-sitter-javascript==0.21.4",
)
"""What bfcl-eval's API classes, checkers and decoders need beyond the standard library."""

INSTALL_COMMAND = "python -m aworld_rl_core.tooluse.bfcl.install"


class BfclNotInstalledError(ImportError):
    """bfcl-eval (or one of its light dependencies) is missing."""


def _missing_message(what: str) -> str:
    return (
        f"{what} is not installed. The BFCL adapter needs bfcl-eval=={BFCL_EVAL_VERSION}, "
        f"installed without its vendor SDKs. Install it with:\n    {INSTALL_COMMAND}\n"
        f"(which runs: pip install --no-deps bfcl-eval=={BFCL_EVAL_VERSION} && "
        f"pip install {' '.join(LIGHT_DEPENDENCIES)})"
    )


def bfcl_root() -> Path:
    """The installed ``bfcl_eval`` package folder, without importing it."""
    spec = importlib.util.find_spec("bfcl_eval")
    if spec is None or not spec.submodule_search_locations:
        raise BfclNotInstalledError(_missing_message("bfcl-eval"))
    return Path(next(iter(spec.submodule_search_locations)))


def data_dir() -> Path:
    """BFCL's data folder (questions, ``possible_answer/``, ``multi_turn_func_doc/``)."""
    path = bfcl_root() / "data"
    if not path.is_dir():
        raise BfclNotInstalledError(_missing_message(f"bfcl-eval's data folder ({path})"))
    return path


def version() -> str:
    """The installed bfcl-eval version, e.g. ``"2026.3.23"``."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    bfcl_root()
    try:
        return dist_version("bfcl-eval")
    except PackageNotFoundError:
        return "unknown"


def require_module(name: str) -> None:
    """Raise a clear BfclNotInstalledError when a light dependency such as mpmath is missing."""
    if name not in sys.modules and importlib.util.find_spec(name) is None:
        raise BfclNotInstalledError(_missing_message(f"{name!r} (needed by bfcl-eval)"))
