"""BFCL single-turn scores: BFCL's leaderboard aggregates beside FunReason's overall.

BFCL's (core's ``leaderboard``): non-live = unweighted mean of simple (itself the unweighted mean
of python, Java and JavaScript), multiple, parallel and parallel_multiple; live = the four live
AST categories weighted by count; irrelevance = mean of irrelevance and live_irrelevance; BFCL's
overall weights non-live, live and irrelevance 10 each (over the groups that were run; the
leaderboard adds multi-turn 30 and agentic 40). FunReason's overall = (non-live + live) / 2.
FunReason's protocol strips everything through ``</think>`` before judging.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aworld_rl_core.tooluse.bfcl.leaderboard import Missing
from aworld_rl_core.tooluse.bfcl.leaderboard import aggregate as bfcl_aggregate
from aworld_rl_funreason.data import split_response

AGGREGATES = {
    "simple": "BFCL simple (mean of python, Java, JavaScript)",
    "non_live": "BFCL non-live AST (mean of simple, multiple, parallel, parallel_multiple)",
    "live": "BFCL live AST (weighted by count)",
    "irrelevance": "BFCL irrelevance (mean of irrelevance, live_irrelevance)",
    "relevance": "BFCL relevance (live_relevance)",
    "overall_bfcl": "BFCL overall (non-live, live, irrelevance weighted 10 each, as run)",
    "overall_funreason": "FunReason overall ((non-live + live) / 2)",
}


def strip_reasoning(text: str) -> str:
    """The call-list part of model text: everything through the last ``</think>`` removed."""
    return split_response(text)[1]


@dataclass(frozen=True)
class CategoryScore:
    """Correct / total for one BFCL category (``correct`` is a mean over samples when each
    entry was sampled several times, so it may be fractional)."""

    category: str
    correct: float
    total: int

    @property
    def accuracy(self) -> float:
        return self.correct / self.total if self.total else 0.0


def aggregate(
    scores: Mapping[str, CategoryScore], *, missing: Missing = "skip"
) -> dict[str, float | None]:
    """The aggregates of :data:`AGGREGATES` (accuracies in [0, 1]; None: nothing to average).

    ``missing="zero"`` counts a category that was not run as 0, as BFCL's leaderboard does;
    ``"skip"`` averages over the categories that were run.
    """
    bfcl = bfcl_aggregate({c: (s.correct, s.total) for c, s in scores.items()}, missing=missing)
    parts = [v for k in ("non_live", "live") if (v := bfcl[k]) is not None]
    funreason = sum(parts) / len(parts) if parts else None
    out = {k: bfcl[k] for k in ("simple", "non_live", "live", "irrelevance", "relevance")}
    return {**out, "overall_bfcl": bfcl["overall"], "overall_funreason": funreason}


def format_table(scores: Mapping[str, CategoryScore], agg: Mapping[str, float | None]) -> str:
    """A markdown table: per-category accuracy then the labelled aggregates (percent)."""

    def pct(x: float | None) -> str:
        return "n/a" if x is None else f"{100 * x:.2f}"

    lines = ["| category | correct | total | accuracy |", "|---|---|---|---|"]
    for cat, s in scores.items():
        lines.append(f"| {cat} | {s.correct:g} | {s.total} | {pct(s.accuracy)} |")
    lines += ["", "| aggregate | accuracy |", "|---|---|"]
    lines += [f"| {AGGREGATES[k]} | {pct(v)} |" for k, v in agg.items()]
    return "\n".join(lines)
