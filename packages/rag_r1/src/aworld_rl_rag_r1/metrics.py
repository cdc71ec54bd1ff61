"""Rollout metrics of search episodes, from the environment's per-episode ``info``.

``searches_per_question``, ``queries_per_search``, ``valid_action_rate`` (turns that were a
search or an answer), ``answered`` (episodes that ended with an answer), ``em`` / ``f1``, and
``retrieval_share`` (retrieval time over the environment's step time).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def rollout_metrics(infos: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Means over episodes (each ``info`` is one episode's last step info)."""
    n = len(infos)
    if n == 0:
        return {}

    def total(key: str) -> float:
        return float(sum(float(i.get(key) or 0.0) for i in infos))

    turns, searches = total("turns"), total("searches")
    out = {
        "episodes": float(n),
        "em": total("em") / n,
        "f1": total("f1") / n,
        "answered": sum(i.get("answer") is not None for i in infos) / n,
        "searches_per_question": searches / n,
        "queries_per_search": total("queries") / searches if searches else 0.0,
        "valid_action_rate": 1.0 - total("invalid_actions") / turns if turns else 0.0,
        "dropped_queries": total("dropped_queries") / n,
        "retrieval_share": total("retrieval_s") / total("step_s") if total("step_s") else 0.0,
    }
    return out
