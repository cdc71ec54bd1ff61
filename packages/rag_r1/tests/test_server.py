import json
import threading
import time

import httpx
import pytest
from fastapi.testclient import TestClient

from aworld_rl_rag_r1.client import HttpRetriever, RetrievalServerError
from aworld_rl_rag_r1.corpus import PassageStore
from aworld_rl_rag_r1.retrievers import OracleRetriever, load_retriever
from aworld_rl_rag_r1.server import (
    MANIFEST_HEADER,
    ServerConfig,
    create_app,
    histogram,
    percentile,
    serve,
)

CFG = ServerConfig(max_queries=8, max_topk=10, max_body_bytes=2000, max_query_chars=100)
STRICT = ServerConfig(
    max_queries=8, max_topk=10, max_body_bytes=2000, max_query_chars=100, strict=True
)


@pytest.fixture(scope="module")
def retriever(hash_index):
    return load_retriever(hash_index)


@pytest.fixture(scope="module")
def client(retriever):
    with TestClient(create_app(retriever, CFG)) as c:
        yield c


@pytest.fixture(scope="module")
def strict_client(retriever):
    with TestClient(create_app(retriever, STRICT)) as c:
        yield c


def test_search_r1_contract(client, retriever):
    body = {
        "queries": ["In which country was a painter born?", "Works"],
        "topk": 2,
        "return_scores": True,
    }
    response = client.post("/retrieve", json=body)
    assert response.status_code == 200
    assert response.headers[MANIFEST_HEADER] == retriever.manifest_hash
    data = response.json()
    assert data["manifest"] == retriever.manifest_hash
    direct = retriever.search(body["queries"], 2)
    assert data["result"] == [
        [
            {
                "document": {
                    "id": h.doc_id,
                    "title": h.title,
                    "contents": h.contents,
                    "passage": h.id,
                },
                "score": pytest.approx(h.score),
            }
            for h in row
        ]
        for row in direct
    ]
    plain = client.post("/retrieve", json={"queries": ["Works"]}).json()["result"]
    assert len(plain[0]) == 3  # default topk 3
    assert set(plain[0][0]) == {"id", "title", "contents", "passage"}


def test_documents_carry_the_corpus_id_and_title(client, world):
    """Each hit names its source document (the corpus id, not the store row) and its title."""
    docs = {d["id"]: d for d in world[0]}
    rows = client.post("/retrieve", json={"queries": ["Works", "a painter"], "topk": 4})
    for row in rows.json()["result"]:
        for item in row:
            source = docs[item["id"]]
            assert item["title"] == source["title"]
            assert item["contents"].startswith(source["title"] + "   ")
            assert item["passage"].isdigit()


@pytest.mark.parametrize(
    ("payload", "result"),
    [
        ({"queries": []}, []),  # a turn where nobody searched
        ({"queries": ["", "  "], "topk": 3}, [[], []]),  # <search> </search>
        ({"queries": ["Works"], "topk": 0}, [[]]),
        ({"queries": ["Works", ""], "topk": 0, "extra": 1, "return_scores": True}, [[], []]),
    ],
)
def test_lenient_default_answers_what_search_r1_sends(client, payload, result):
    response = client.post("/retrieve", json=payload)
    assert response.status_code == 200
    assert response.json()["result"] == result


def test_lenient_mixes_empty_and_real_queries_in_order(client, retriever):
    got = client.post("/retrieve", json={"queries": ["", "Works", " "], "topk": 2, "x": None})
    assert got.status_code == 200
    rows = got.json()["result"]
    assert rows[0] == [] and rows[2] == []
    assert [d["passage"] for d in rows[1]] == [h.id for h in retriever.search(["Works"], 2)[0]]


@pytest.mark.parametrize(
    ("payload", "status", "message"),
    [
        ({"queries": []}, 422, "'queries' is empty"),
        ({"queries": ["q"] * 9}, 413, "the limit is 8"),
        ({"queries": ["q"], "topk": 0}, 422, "between 1 and 10"),
        ({"queries": ["q"], "topk": -1}, 422, "between 1 and 10"),
        ({"queries": ["q"], "topk": 11}, 422, "between 1 and 10"),
        ({"queries": ["q"], "topk": "3"}, 422, "'topk' must be an integer"),
        ({"queries": ["q"], "topk": True}, 422, "'topk' must be an integer"),
        ({"queries": "q"}, 422, "'queries' must be a list of strings"),
        ({"queries": [1, 2]}, 422, "'queries' must be a list of strings"),
        ({"queries": ["q"], "return_scores": "yes"}, 422, "'return_scores' must be true or false"),
        ({"queries": ["q"], "extra": 1}, 422, "unknown field"),
        ({"queries": ["  "]}, 422, "query 0 is empty"),
        ({"queries": ["x" * 101]}, 422, "the limit is 100"),
        ({"queries": ["q"], "gold": [["a"], ["b"]]}, 422, "'gold' must hold one list"),
        (["q"], 422, "must be a JSON object"),
    ],
)
def test_strict_bad_requests_get_4xx_with_a_json_error(strict_client, payload, status, message):
    response = strict_client.post("/retrieve", json=payload)
    assert response.status_code == status
    assert message in response.json()["error"]
    assert response.headers[MANIFEST_HEADER]


@pytest.mark.parametrize(
    ("payload", "status", "message"),
    [
        ({"queries": ["q"] * 9}, 413, "the limit is 8"),
        ({"queries": ["q"], "topk": -1}, 422, "between 0 and 10"),
        ({"queries": ["q"], "topk": 11}, 422, "between 0 and 10"),
        ({"queries": ["q"], "topk": "3"}, 422, "'topk' must be an integer"),
        ({"queries": "q"}, 422, "'queries' must be a list of strings"),
        ({"topk": 3}, 422, "'queries' must be a list of strings"),
        ({"queries": ["q"], "return_scores": "yes"}, 422, "'return_scores' must be true or false"),
        ({"queries": ["x" * 101]}, 422, "the limit is 100"),
        (["q"], 422, "must be a JSON object"),
    ],
)
def test_lenient_still_rejects_malformed_bodies(client, payload, status, message):
    response = client.post("/retrieve", json=payload)
    assert response.status_code == status
    assert message in response.json()["error"]


def test_response_caps_are_413s_naming_the_limit(retriever):
    results = ServerConfig(max_results=10)
    with TestClient(create_app(retriever, results)) as c:
        over = c.post("/retrieve", json={"queries": ["a", "b", "c", "d"], "topk": 3})
        assert over.status_code == 413
        assert "server.max_results) is 10" in over.json()["error"]
        assert c.post("/retrieve", json={"queries": ["a", "b", "c"], "topk": 3}).status_code == 200
    size = ServerConfig(max_response_bytes=1500)
    with TestClient(create_app(retriever, size)) as c:
        small = c.post("/retrieve", json={"queries": ["a"], "topk": 1})
        assert small.status_code == 200 and len(small.content) <= 1500
        big = c.post("/retrieve", json={"queries": ["a", "b", "c", "d"], "topk": 5})
        assert big.status_code == 413
        assert "server.max_response_bytes) is 1500" in big.json()["error"]


def test_non_json_oversized_and_wrong_routes(client):
    bad = client.post(
        "/retrieve", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert bad.status_code == 400 and bad.json()["error"] == "the request body is not JSON"
    big = client.post("/retrieve", content=json.dumps({"queries": ["q" * 50] * 60}))
    assert big.status_code == 413 and "limit" in big.json()["error"]

    def chunks():  # no content-length: the stream itself is counted
        for _ in range(30):
            yield b" " * 100

    streamed = client.post("/retrieve", content=chunks())
    assert streamed.status_code == 413
    assert client.get("/retrieve").status_code == 405
    missing = client.get("/nope")
    assert missing.status_code == 404 and "endpoints" in missing.json()["detail"]


def test_health_and_metrics(client, retriever):
    health = client.get("/health").json()
    assert health["status"] == "ok" and health["manifest"] == retriever.manifest_hash
    assert health["limits"]["max_queries"] == 8 and health["limits"]["max_topk"] == 10
    client.post("/retrieve", json={"queries": ["a", "b"]})
    metrics = client.get("/metrics").json()
    assert metrics["requests"] >= 1 and metrics["queries"] >= 2 and metrics["errors"] >= 1
    assert set(metrics["latency_ms"]) == {"p50", "p99", "window"}
    assert metrics["queue_depth"] == 0 and metrics["batches"]["count"] >= 1


def test_percentiles_and_histogram_by_hand():
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50.0 and percentile(values, 99) == 99.0
    assert percentile([], 50) == 0.0 and percentile([7.0], 99) == 7.0
    assert histogram([1, 2, 3, 4, 9, 1]) == {"1": 2, "2-3": 2, "4-7": 1, "8-15": 1}


class SlowRetriever:
    """Wraps a retriever so each search takes a while (concurrent requests must queue)."""

    def __init__(self, inner, delay):
        self.inner, self.delay, self.calls = inner, delay, []
        self.manifest_hash = inner.manifest_hash

    def search(self, queries, topk, gold=None):
        self.calls.append(len(queries))
        time.sleep(self.delay)
        return self.inner.search(queries, topk, gold)


def test_64_concurrent_clients_no_errors_and_micro_batched(minilm_index, world):
    real = load_retriever(minilm_index)
    slow = SlowRetriever(real, 0.05)
    server = serve(slow, ServerConfig(port=0, batch_wait_ms=5))
    url = f"http://127.0.0.1:{server.bound_port}/retrieve"
    questions = [q["question"] for q in world[1]]
    expected = {
        q: [h.id for h in hits]
        for q, hits in zip(questions, real.search(questions, 3), strict=True)
    }
    errors, answers = [], []

    def client_thread(i):
        with httpx.Client(timeout=60) as http:
            for j in range(3):
                asked = [
                    questions[(i + j) % len(questions)],
                    questions[(i * 7 + j) % len(questions)],
                ]
                response = http.post(url, json={"queries": asked, "topk": 3, "return_scores": True})
                if response.status_code != 200:
                    errors.append(response.text)
                    continue
                rows = response.json()["result"]
                got = [[d["document"]["passage"] for d in row] for row in rows]
                answers.append(got == [expected[q] for q in asked])

    try:
        threads = [threading.Thread(target=client_thread, args=(i,)) for i in range(64)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        metrics = httpx.get(url.replace("/retrieve", "/metrics")).json()
    finally:
        server.should_exit = True
        server.thread.join(10)
    assert errors == [] and len(answers) == 192 and all(answers)
    assert metrics["requests"] == 192 and metrics["queries"] == 384
    assert len(slow.calls) < 192 and max(slow.calls) > 2  # requests were merged
    assert sum(slow.calls) == 384


def test_http_retriever_against_a_live_server(retriever, hash_index):
    server = serve(retriever, ServerConfig(port=0, max_topk=5))
    try:
        remote = HttpRetriever(f"http://127.0.0.1:{server.bound_port}", retries=0)
        assert remote.manifest_hash == retriever.manifest_hash
        assert remote.search(["a painter", "Works"], 3) == retriever.search(
            ["a painter", "Works"], 3
        )
        with pytest.raises(RetrievalServerError, match="answered 422: 'topk' must be between"):
            remote.search(["q"], 50)
        assert remote.metrics()["requests"] == 1
        remote.close()
    finally:
        server.should_exit = True
        server.thread.join(10)
    with pytest.raises(RetrievalServerError, match="not reachable"):
        HttpRetriever(f"http://127.0.0.1:{server.bound_port}", retries=1)


def test_oracle_through_the_server(hash_index, world, retriever):
    store = PassageStore(hash_index / "passages")
    oracle = OracleRetriever(store, retriever)
    q = world[1][0]
    with TestClient(create_app(oracle, CFG)) as c:
        got = c.post(
            "/retrieve", json={"queries": [q["question"]], "gold": [q["gold_docs"]], "topk": 3}
        )
        ids = [d["passage"] for d in got.json()["result"][0]]
        assert ids[:2] == [str(store.rows_of(d)[0]) for d in q["gold_docs"]]
        missing = c.post("/retrieve", json={"queries": ["q"]})
        assert missing.status_code == 422 and "needs the gold" in missing.json()["error"]


def test_server_threads_set_faiss_and_torch():
    import faiss
    import torch

    from aworld_rl_rag_r1.server import set_threads

    before = (faiss.omp_get_max_threads(), torch.get_num_threads())
    try:
        set_threads(1)
        assert (faiss.omp_get_max_threads(), torch.get_num_threads()) == (1, 1)
        set_threads(0)  # 0 leaves them alone
        assert (faiss.omp_get_max_threads(), torch.get_num_threads()) == (1, 1)
        with pytest.raises(ValueError, match="server.threads must be >= 0"):
            set_threads(-1)
    finally:
        faiss.omp_set_num_threads(before[0])
        torch.set_num_threads(before[1])


# ------------------------------------------------------------ hostile bodies, poisoned batches


@pytest.mark.parametrize(
    "body, message",
    [
        (b'{"queries": ["a"], "topk": ' + b"9" * 5000 + b"}", "not JSON"),
        (b"[" * 5000 + b"]" * 5000, "nested too deeply"),
        (b"[" * 100_000, "nested too deeply"),
    ],
)
def test_huge_ints_and_deep_nesting_are_json_400s(retriever, body, message):
    big = ServerConfig(max_queries=8, max_topk=10, max_body_bytes=200_000)
    with TestClient(create_app(retriever, big)) as c:
        response = c.post("/retrieve", content=body)
        assert response.status_code == 400
        assert message in response.json()["error"]
        assert c.get("/health").status_code == 200  # the server is still up


def test_lone_surrogate_query_is_a_422_naming_it(client):
    body = b'{"queries": ["fine", "a\\ud800b"], "topk": 1}'  # valid JSON, not valid Unicode
    response = client.post("/retrieve", content=body)
    assert response.status_code == 422 and "query 1" in response.json()["error"]


class Poisoned:
    """A retriever whose encoder raises on one query, as a tokenizer does on bad text."""

    def __init__(self, inner):
        self.inner, self.calls = inner, []
        self.manifest_hash = inner.manifest_hash

    def search(self, queries, topk, gold=None):
        self.calls.append(list(queries))
        if any("poison" in q for q in queries):
            raise TypeError("TextEncodeInput must be Union[...]")
        return self.inner.search(queries, topk, gold)


def test_one_bad_request_fails_alone_not_its_micro_batch(retriever):
    import asyncio

    from aworld_rl_rag_r1.server import Metrics, MicroBatcher

    poisoned = Poisoned(retriever)
    batcher = MicroBatcher(poisoned, ServerConfig(batch_wait_ms=200), Metrics())
    asked = [["alpha"], ["beta", "gamma"], ["poison"], ["delta"]]

    async def main():
        try:
            return await asyncio.gather(
                *(batcher.submit(q, 2, None) for q in asked), return_exceptions=True
            )
        finally:
            await batcher.stop()

    out = asyncio.run(main())
    assert poisoned.calls[0] == ["alpha", "beta", "gamma", "poison", "delta"]  # merged
    assert isinstance(out[2], TypeError)
    for i in (0, 1, 3):
        assert [[h.id for h in row] for row in out[i]] == [
            [h.id for h in row] for row in retriever.search(asked[i], 2)
        ]


def test_a_full_queue_sheds_load_with_429_and_retry_after(retriever):
    cfg = ServerConfig(max_queries=8, max_topk=10, max_queue_queries=4, retry_after_s=2)
    with TestClient(create_app(retriever, cfg)) as c:
        assert c.post("/retrieve", json={"queries": ["a", "b"], "topk": 1}).status_code == 200
        c.app.state.metrics.queue_depth = 3  # three queries already waiting
        shed = c.post("/retrieve", json={"queries": ["a", "b"], "topk": 1})
        assert shed.status_code == 429 and shed.headers["Retry-After"] == "2"
        assert "max_queue_queries" in shed.json()["error"]
        fits = c.post("/retrieve", json={"queries": ["a"], "topk": 1})
        assert fits.status_code == 200  # 3 + 1 is within the bound


def test_a_request_past_its_deadline_gets_a_503_and_its_work_is_dropped(retriever):
    """A request whose search is not done by server.request_timeout_s gets a 503 with
    Retry-After; the batcher drops its remaining chunks instead of finishing them."""
    slow = SlowRetriever(retriever, 0.2)
    cfg = ServerConfig(
        max_queries=64, request_timeout_s=0.5, search_chunk_queries=2, retry_after_s=3
    )
    with TestClient(create_app(slow, cfg)) as c:
        late = c.post("/retrieve", json={"queries": [f"q{i}" for i in range(40)], "topk": 1})
        assert late.status_code == 503 and late.headers["Retry-After"] == "3"
        assert "server.request_timeout_s" in late.json()["error"]
        time.sleep(0.5)  # the chunk running at the deadline ends
        metrics = c.get("/metrics").json()
        assert metrics["timeouts"] == 1 and metrics["dropped_queries"] > 0
        assert sum(slow.calls) < 40  # not every chunk was searched
        assert c.post("/retrieve", json={"queries": ["a"], "topk": 1}).status_code == 200


def test_chunked_search_equals_one_search(retriever):
    cfg = ServerConfig(max_queries=64, search_chunk_queries=3)
    queries = [f"who founded {i}" for i in range(11)]
    with TestClient(create_app(retriever, cfg)) as c:
        got = c.post("/retrieve", json={"queries": queries, "topk": 2}).json()["result"]
    assert [[d["passage"] for d in row] for row in got] == [
        [h.id for h in row] for row in retriever.search(queries, 2)
    ]
