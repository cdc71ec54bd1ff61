"""Dataset builders registered with the plugin system: FunReason samples as core records."""

from __future__ import annotations

from typing import Any

from aworld_rl_funreason.data import read_bfcl, read_samples, to_record
from aworld_rl_funreason.paths import resolve_path


def samples_dataset(path: str, limit: int | None = None, prompt: str = "bfcl") -> list[Any]:
    """xLAM records, FunReason samples or refinement outcomes (kept.jsonl) as core records."""
    return [to_record(s, prompt) for s in read_samples(resolve_path(path), limit)]


def bfcl_dataset(category: str, limit: int | None = None, prompt: str = "bfcl") -> list[Any]:
    """A BFCL single-turn category as core records (target: reference calls, no reasoning)."""
    return [to_record(s, prompt) for s in read_bfcl(category, limit)]
