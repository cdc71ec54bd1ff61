"""Shared helpers of the BFCL adapter tests: cached categories and bfcl-eval's own checkers."""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile

import pytest

pytest.importorskip(
    "bfcl_eval", reason="bfcl-eval not installed (python -m aworld_rl_core.tooluse.bfcl.install)"
)

from aworld_rl_core.tooluse.bfcl import (
    MULTI_TURN_CATEGORIES,
    PYTHON_AST_CATEGORIES,
    load_category,
)
from aworld_rl_core.tooluse.bfcl.reference import BfclReference


@functools.cache
def entries(category: str):
    """Entries of a category, loaded once per test session (read-only use)."""
    return tuple(load_category(category))


def all_multi_turn():
    return [e for c in MULTI_TURN_CATEGORIES for e in entries(c)]


def all_single_turn():
    return [e for c in PYTHON_AST_CATEGORIES for e in entries(c)]


@functools.cache
def reference() -> BfclReference:
    """bfcl-eval's checkers; its decoder import writes its folders under a temporary root."""
    root = tempfile.mkdtemp(prefix="bfcl-root-")
    atexit.register(shutil.rmtree, root, True)
    return BfclReference(root)
