"""BFCL single-turn scoring as FunReason reports it.

Model text loses everything through ``</think>``; the rest is decoded as BFCL's python call
list and judged by core's AST judge. Scores aggregate the way BFCL's leaderboard does:
non-live = unweighted mean of simple (itself the unweighted mean of the simple_* languages),
multiple, parallel and parallel_multiple; live = mean over the four live AST categories weighted
by count; FunReason's overall = (non-live + live) / 2.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from aworld_rl_funreason.data import split_response

SIMPLE = ("simple_python", "simple_java", "simple_javascript")
NON_LIVE = ("multiple", "parallel", "parallel_multiple")
LIVE = ("live_simple", "live_multiple", "live_parallel", "live_parallel_multiple")
RESULT_PREFIX = "BFCL_v4"

Missing = Literal["skip", "zero"]


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


def _unweighted(parts: list[float | None], missing: Missing) -> float | None:
    values = [0.0 if p is None and missing == "zero" else p for p in parts]
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def aggregate(
    scores: Mapping[str, CategoryScore], *, missing: Missing = "skip"
) -> dict[str, float | None]:
    """Leaderboard aggregates from per-category scores (accuracies in [0, 1]).

    ``missing="zero"`` counts a category that was not evaluated as 0, as BFCL's leaderboard does;
    ``"skip"`` averages over the evaluated categories only (our judge covers the python
    categories; Java/JS need ``bfcl evaluate`` on the written result files). None: nothing to
    average.
    """

    def acc(cat: str) -> float | None:
        return scores[cat].accuracy if cat in scores and scores[cat].total else None

    simple = _unweighted([acc(c) for c in SIMPLE], missing)
    non_live = _unweighted([simple, *(acc(c) for c in NON_LIVE)], missing)
    live_scores = [scores[c] for c in LIVE if c in scores and scores[c].total]
    total = sum(s.total for s in live_scores)
    live = sum(s.correct for s in live_scores) / total if total else None
    if live is None and missing == "zero":
        live = 0.0
    parts = [p for p in (non_live, live) if p is not None]
    overall = sum(parts) / len(parts) if parts else None
    return {"simple": simple, "non_live": non_live, "live": live, "overall": overall}


def group_of(category: str) -> str:
    """BFCL's result sub-directory of a single-turn category."""
    if category.startswith("live_"):
        return "live"
    if category.startswith("multi_turn"):
        return "multi_turn"
    return "non_live"


def write_bfcl_results(
    root: Path, model_name: str, category: str, rows: Iterable[tuple[str, str]]
) -> Path:
    """Write ``result/<model>/<group>/BFCL_v4_<category>_result.json`` (JSONL ``{id, result}``)
    so ``bfcl evaluate --model <model>`` can score the same outputs."""
    folder = root / "result" / model_name.replace("/", "_") / group_of(category)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{RESULT_PREFIX}_{category}_result.json"
    with path.open("w", encoding="utf-8") as fh:
        for entry_id, result in rows:
            fh.write(json.dumps({"id": entry_id, "result": result}, ensure_ascii=False) + "\n")
    return path


def format_table(scores: Mapping[str, CategoryScore], agg: Mapping[str, float | None]) -> str:
    """A markdown table: per-category accuracy then the aggregates (percent)."""

    def pct(x: float | None) -> str:
        return "n/a" if x is None else f"{100 * x:.2f}"

    lines = ["| category | correct | total | accuracy |", "|---|---|---|---|"]
    for cat, s in scores.items():
        lines.append(f"| {cat} | {s.correct:g} | {s.total} | {pct(s.accuracy)} |")
    lines += ["", "| aggregate | accuracy |", "|---|---|"]
    lines += [f"| {k} | {pct(v)} |" for k, v in agg.items()]
    return "\n".join(lines)
