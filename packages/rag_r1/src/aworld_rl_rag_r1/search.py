"""One retrieval per turn: flatten every trajectory's queries, dedupe, look up, regroup.

GRPO samples several answers per question, so the same queries recur within a turn and across
turns; the released code sent one blocking request per trajectory. ``BatchedSearch`` sends the
unique, uncached queries of all trajectories as one ``retriever.search`` call and hands each
trajectory its own results in its own order. The optional LRU cache is keyed by (query, topk,
gold, index manifest hash), so results from another index are never reused. A retriever that
limits its requests (the HTTP client: ``max_request_queries(topk)``, from the server's
``/health``) gets the turn's queries in as many requests as its limits need, reassembled in
order.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

from aworld_rl_rag_r1.retrievers import Hit, Retriever

Key = tuple[str, int, tuple[str, ...], str]


class QueryCache:
    """A thread-safe LRU map from query keys to hits."""

    def __init__(self, max_entries: int = 100_000) -> None:
        if max_entries < 1:
            raise ValueError(f"cache size must be >= 1, got {max_entries}")
        self.max_entries = max_entries
        self._data: OrderedDict[Key, list[Hit]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Key) -> list[Hit] | None:
        with self._lock:
            hits = self._data.get(key)
            if hits is not None:
                self._data.move_to_end(key)
            return hits

    def put(self, key: Key, hits: list[Hit]) -> None:
        with self._lock:
            self._data[key] = hits
            self._data.move_to_end(key)
            while len(self._data) > self.max_entries:
                self._data.popitem(last=False)

    def __len__(self) -> int:
        return len(self._data)


@dataclass
class SearchStats:
    """Counts of one batched call (and running totals when accumulated)."""

    calls: int = 0
    trajectories: int = 0
    queries: int = 0
    unique: int = 0
    cache_hits: int = 0
    retrieved: int = 0
    seconds: float = 0.0

    def add(self, other: SearchStats) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    @property
    def dedup_rate(self) -> float:
        """Share of queries answered without their own retrieval (duplicates + cache hits)."""
        return 1.0 - self.retrieved / self.queries if self.queries else 0.0


def request_limit(retriever: Retriever, topk: int) -> int:
    """Most queries one ``retriever.search`` call may carry (0: no limit)."""
    limit = getattr(retriever, "max_request_queries", None)
    return int(limit(topk)) if callable(limit) else 0


def request_chunks(n: int, limit: int) -> list[range]:
    """``range(n)`` in consecutive pieces of at most ``limit`` (one piece when 0)."""
    if n == 0:
        return []
    step = limit if limit > 0 else n
    return [range(start, min(n, start + step)) for start in range(0, n, step)]


@dataclass
class BatchedSearch:
    """``run(groups)``: one retrieval for every trajectory's queries of a turn."""

    retriever: Retriever
    topk: int = 3
    cache: QueryCache | None = None
    totals: SearchStats = field(default_factory=SearchStats)

    def __post_init__(self) -> None:
        if self.topk < 1:
            raise ValueError(f"topk must be >= 1, got {self.topk}")

    def run(
        self,
        groups: Sequence[Sequence[str]],
        gold: Sequence[Sequence[str]] | None = None,
    ) -> tuple[list[list[list[Hit]]], SearchStats]:
        """``groups[i]`` = trajectory i's queries -> ``results[i][j]`` = hits of its query j.

        ``gold[i]`` (the oracle's gold document ids) applies to every query of trajectory i.
        """
        began = time.perf_counter()
        if gold is not None and len(gold) != len(groups):
            raise ValueError(f"{len(gold)} gold lists for {len(groups)} trajectories")
        version = self.retriever.manifest_hash
        keys: list[list[Key]] = [
            [(q, self.topk, tuple(gold[i]) if gold is not None else (), version) for q in group]
            for i, group in enumerate(groups)
        ]
        found: dict[Key, list[Hit]] = {}
        pending: dict[Key, None] = {}
        hits = 0
        for key in (k for row in keys for k in row):
            if key in found or key in pending:
                continue
            cached = self.cache.get(key) if self.cache is not None else None
            if cached is not None:
                found[key] = cached
                hits += 1
            else:
                pending[key] = None
        requests = 0
        if pending:
            asked = list(pending)
            answers: list[list[Hit]] = []
            for part in request_chunks(len(asked), request_limit(self.retriever, self.topk)):
                requests += 1
                answers += self.retriever.search(
                    [asked[i][0] for i in part],
                    self.topk,
                    gold=[list(asked[i][2]) for i in part] if gold is not None else None,
                )
            if len(answers) != len(asked):
                raise RuntimeError(f"the retriever answered {len(answers)} of {len(asked)} queries")
            for key, answer in zip(asked, answers, strict=True):
                found[key] = answer
                if self.cache is not None:
                    self.cache.put(key, answer)
        results = [[found[k] for k in row] for row in keys]
        n = sum(len(row) for row in keys)
        stats = SearchStats(
            calls=requests,
            trajectories=len(groups),
            queries=n,
            unique=len(found),
            cache_hits=hits,
            retrieved=len(pending),
            seconds=time.perf_counter() - began,
        )
        self.totals.add(stats)
        return results, stats
