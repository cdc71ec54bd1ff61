"""Rollout metrics of search episodes, from the environment's per-episode ``info``.

``searches_per_question``, ``queries_per_search``, ``valid_action_rate`` (turns that were a
search or an answer), ``answered`` (episodes that ended with an answer), ``em`` / ``f1``,
``retrieval_share`` (retrieval time over the environment's step time), and what the episodes
retrieved: ``answer_in_retrieved`` (a gold answer occurs in a retrieved passage) and
``gold_docs_retrieved`` (share of the gold documents among them, over questions that have
gold documents). ``retrieval_recall`` scores a retriever alone: recall@k and answer-in-top-k
with the question itself as the query.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aworld_rl_rag_r1.reward import normalize_answer


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
        "answer_in_retrieved": total("answer_in_retrieved") / n,
    }
    with_gold = [i for i in infos if i.get("gold_docs_retrieved") is not None]
    if with_gold:
        found = sum(float(i["gold_docs_retrieved"]) for i in with_gold)
        out["gold_docs_retrieved"] = found / len(with_gold)
    return out


def answer_in(passages: Sequence[str], golds: Sequence[str]) -> bool:
    """Some gold answer occurs (SQuAD-normalised, as whole words) in some passage."""
    wanted = [f" {normalize_answer(g)} " for g in golds if normalize_answer(g)]
    texts = [f" {normalize_answer(p)} " for p in passages]
    return any(g in t for g in wanted for t in texts)


def gold_share(doc_ids: Sequence[str], gold_docs: Sequence[str]) -> float | None:
    """Share of ``gold_docs`` among ``doc_ids`` (None without gold documents)."""
    gold = set(gold_docs)
    return len(gold & set(doc_ids)) / len(gold) if gold else None


def retrieval_recall(
    hits: Sequence[Sequence[Any]],
    gold_docs: Sequence[Sequence[str]],
    golden_answers: Sequence[Sequence[str]],
    ks: Sequence[int] = (1, 3),
) -> dict[str, float]:
    """``recall@k`` (share of a question's gold documents in its top k, averaged over the
    questions with gold documents) and ``answer_in_top{k}`` (a gold answer in the top k
    passages), for each k; ``hits[i]`` are question i's hits best first (``doc_id``,
    ``contents``)."""
    if not len(hits) == len(gold_docs) == len(golden_answers):
        raise ValueError("hits, gold_docs and golden_answers need one entry per question")
    out: dict[str, float] = {}
    for k in ks:
        shares = [
            s
            for row, gold in zip(hits, gold_docs, strict=True)
            if (s := gold_share([h.doc_id for h in row[:k]], gold)) is not None
        ]
        if shares:
            out[f"recall@{k}"] = sum(shares) / len(shares)
        found = [
            answer_in([h.contents for h in row[:k]], golds)
            for row, golds in zip(hits, golden_answers, strict=True)
        ]
        out[f"answer_in_top{k}"] = sum(found) / len(found) if found else 0.0
    return out
