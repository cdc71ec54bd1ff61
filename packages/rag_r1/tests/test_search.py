import pytest

from aworld_rl_rag_r1.retrievers import load_retriever
from aworld_rl_rag_r1.search import BatchedSearch, QueryCache
from aworld_rl_rag_r1.testing import CountingRetriever as Counting


@pytest.fixture
def retriever(hash_index):
    return Counting(load_retriever(hash_index))


def _groups(world, n_questions=16, samples=8):
    """A GRPO turn: every question sampled `samples` times, each sample 1-3 queries."""
    questions = [q["question"] for q in world[1][:n_questions]]
    groups = []
    for i, q in enumerate(questions):
        for s in range(samples):
            groups.append([q, *(questions[(i + k) % len(questions)] for k in range(1, 1 + s % 3))])
    return groups


def test_one_call_equals_one_request_per_trajectory(retriever, world):
    groups = _groups(world)
    batched, stats = BatchedSearch(retriever, topk=3).run(groups)
    assert len(retriever.calls) == 1
    per_trajectory = [retriever.inner.search(g, 3) for g in groups]
    assert batched == per_trajectory
    n = sum(len(g) for g in groups)
    assert (stats.queries, stats.unique, stats.retrieved) == (n, 16, 16)
    assert stats.dedup_rate == pytest.approx(1 - 16 / n)
    assert retriever.calls[0] == list(dict.fromkeys(q for g in groups for q in g))


def test_cache_across_turns_and_indexes(retriever, world):
    cache = QueryCache(100)
    search = BatchedSearch(retriever, topk=3, cache=cache)
    groups = _groups(world, n_questions=4, samples=2)
    first, _ = search.run(groups)
    again, stats = search.run(groups)
    assert again == first and stats.cache_hits == stats.unique and len(retriever.calls) == 1
    assert stats.calls == 0 and search.totals.calls == 1
    retriever.manifest_hash = "another-index"  # another index: nothing is reused
    search.run(groups)
    assert len(retriever.calls) == 2


def test_lru_evicts_oldest():
    cache = QueryCache(2)
    for key in ("a", "b", "c"):
        cache.put((key, 3, (), "m"), [])
    assert cache.get(("a", 3, (), "m")) is None and len(cache) == 2


def test_gold_is_part_of_the_key(retriever, world):
    search = BatchedSearch(retriever, topk=2)
    q = world[1][0]["question"]
    _, stats = search.run([[q], [q]], gold=[["d1"], ["d2"]])
    assert stats.retrieved == 2
    with pytest.raises(ValueError, match="gold lists"):
        search.run([[q]], gold=[])


class Limited(Counting):
    """A retriever that takes at most `cap` queries per call (as the HTTP client announces)."""

    def __init__(self, inner, cap):
        super().__init__(inner)
        self.cap = cap

    def max_request_queries(self, topk):
        return self.cap

    def search(self, queries, topk, gold=None):
        assert len(queries) <= self.cap
        return super().search(queries, topk, gold)


def test_a_turn_is_split_under_the_retrievers_limit_and_reassembled(hash_index, world):
    inner = load_retriever(hash_index)
    limited = Limited(inner, 5)
    groups = _groups(world, n_questions=16, samples=2)
    results, stats = BatchedSearch(limited, topk=3).run(groups)
    unique = len({q for g in groups for q in g})
    assert stats.calls == len(limited.calls) == -(-unique // 5)
    assert [len(a) for a in limited.calls] == [5] * (unique // 5) + (
        [unique % 5] if unique % 5 else []
    )
    assert results == [inner.search(g, 3) for g in groups]


def test_batched_search_over_http_splits_by_the_servers_limits(hash_index, world):
    from aworld_rl_rag_r1.client import HttpRetriever
    from aworld_rl_rag_r1.server import ServerConfig, serve

    inner = load_retriever(hash_index)
    server = serve(inner, ServerConfig(port=0, max_queries=100, max_results=12))
    try:
        remote = HttpRetriever(f"http://127.0.0.1:{server.bound_port}", retries=0)
        assert remote.max_request_queries(3) == 4  # 12 passages / topk 3
        groups = [[q["question"]] for q in world[1][:10]]
        results, stats = BatchedSearch(remote, topk=3).run(groups)
        assert stats.calls == remote.calls == 3  # 4 + 4 + 2 queries
        assert results == [inner.search(g, 3) for g in groups]
        remote.close()
    finally:
        server.should_exit = True
        server.thread.join(10)


def test_http_client_halves_a_request_whose_response_is_too_big(hash_index, world):
    from aworld_rl_rag_r1.client import HttpRetriever
    from aworld_rl_rag_r1.server import ServerConfig, serve

    inner = load_retriever(hash_index)
    queries = [q["question"] for q in world[1][:8]]
    server = serve(inner, ServerConfig(port=0, max_response_bytes=3000))
    try:
        remote = HttpRetriever(f"http://127.0.0.1:{server.bound_port}", retries=0)
        assert remote.search(queries, 3) == inner.search(queries, 3)
        assert remote.calls > 1
        remote.close()
    finally:
        server.should_exit = True
        server.thread.join(10)
