"""BFCL's leaderboard aggregates (bfcl-eval 2026.3.23, ``eval_runner_helper``) from per-category
(correct, total) counts.

- simple: unweighted mean of ``simple_python``, ``simple_java``, ``simple_javascript``;
- non-live: unweighted mean of simple, ``multiple``, ``parallel``, ``parallel_multiple``;
- live: the four live AST categories, weighted by entry count;
- irrelevance: unweighted mean of ``irrelevance`` and ``live_irrelevance``; relevance:
  ``live_relevance``;
- multi-turn: unweighted mean of the four multi-turn categories;
- web search: unweighted mean of ``web_search_base`` and ``web_search_no_snippet``; memory:
  unweighted mean of ``memory_kv``, ``memory_vector``, ``memory_rec_sum``; agentic: unweighted
  mean of web search and memory;
- overall: weights 10 non-live, 10 live, 10 irrelevance, 30 multi-turn, 40 agentic (normalised,
  ``calculate_percentage_weighted_accuracy``).

``missing="zero"`` counts a category that was not run as 0, as the leaderboard does;
``"skip"`` (default) aggregates over the categories that were run, and the overall renormalises
BFCL's weights over the groups that were run. None: nothing of that group was run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import Literal

Missing = Literal["skip", "zero"]

SIMPLE = ("simple_python", "simple_java", "simple_javascript")
NON_LIVE = ("multiple", "parallel", "parallel_multiple")
LIVE = ("live_simple", "live_multiple", "live_parallel", "live_parallel_multiple")
IRRELEVANCE = ("irrelevance", "live_irrelevance")
MULTI_TURN = (
    "multi_turn_base",
    "multi_turn_miss_func",
    "multi_turn_miss_param",
    "multi_turn_long_context",
)
WEB_SEARCH = ("web_search_base", "web_search_no_snippet")
MEMORY = ("memory_kv", "memory_vector", "memory_rec_sum")
OVERALL_WEIGHTS = {"non_live": 10, "live": 10, "irrelevance": 10, "multi_turn": 30, "agentic": 40}
"""BFCL v4's weights of the overall accuracy."""

Counts = Mapping[str, tuple[float, int]]


def _accuracy(counts: Counts, category: str) -> float | None:
    correct, total = counts.get(category, (0, 0))
    return correct / total if total else None


def _mean(parts: Sequence[float | None], missing: Missing) -> float | None:
    values = [0.0 if p is None and missing == "zero" else p for p in parts]
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


@cache
def _size(category: str) -> int:
    from aworld_rl_core.tooluse.bfcl.loader import load_category

    return len(load_category(category))


def _weighted(counts: Counts, categories: Sequence[str], missing: Missing) -> float | None:
    """Weighted by count; with ``missing="zero"`` a category not run weighs its full size at 0,
    as BFCL's leaderboard table does."""
    run = {c: counts[c] for c in categories if c in counts and counts[c][1]}
    if missing == "zero":
        run.update({c: (0, _size(c)) for c in categories if c not in run})
    total = sum(n for _, n in run.values())
    return sum(k for k, _ in run.values()) / total if total else None


def aggregate(counts: Counts, *, missing: Missing = "skip") -> dict[str, float | None]:
    """BFCL's group and overall accuracies (in [0, 1]) from ``{category: (correct, total)}``."""

    def acc(category: str) -> float | None:
        return _accuracy(counts, category)

    simple = _mean([acc(c) for c in SIMPLE], missing)
    groups: dict[str, float | None] = {
        "simple": simple,
        "non_live": _mean([simple, *(acc(c) for c in NON_LIVE)], missing),
        "live": _weighted(counts, LIVE, missing),
        "irrelevance": _mean([acc(c) for c in IRRELEVANCE], missing),
        "relevance": acc("live_relevance"),
        "multi_turn": _mean([acc(c) for c in MULTI_TURN], missing),
        "web_search": _mean([acc(c) for c in WEB_SEARCH], missing),
        "memory": _mean([acc(c) for c in MEMORY], missing),
    }
    groups["agentic"] = _mean([groups["web_search"], groups["memory"]], missing)
    weighted: list[tuple[int, float]] = []
    for name, weight in OVERALL_WEIGHTS.items():
        value = groups.get(name)
        if value is not None or missing == "zero":
            weighted.append((weight, value or 0.0))
    total = sum(w for w, _ in weighted)
    groups["overall"] = sum(w * v for w, v in weighted) / total if total else None
    return groups
