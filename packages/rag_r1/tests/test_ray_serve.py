"""The retrieval app on Ray Serve with two replicas, on a local Ray (CPU; ~30 s to start)."""

import socket

import pytest

from aworld_rl_rag_r1.retrievers import load_retriever
from aworld_rl_rag_r1.server import ServerConfig

pytestmark = pytest.mark.slow


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_replicas_answer_like_the_in_process_retriever(hash_index, world):
    pytest.importorskip("ray.serve")
    import httpx

    from aworld_rl_rag_r1.serve_ray import serve_ray, shutdown

    spec = {"backend": "local", "index": str(hash_index), "device": "cpu"}
    url = serve_ray(spec, ServerConfig(replicas=2, port=_free_port()))
    try:
        direct = load_retriever(hash_index)
        questions = [q["question"] for q in world[1][:6]]
        for question in questions:
            got = httpx.post(url + "/retrieve", json={"queries": [question], "topk": 3}, timeout=60)
            assert got.status_code == 200
            assert got.json()["manifest"] == direct.manifest_hash
            assert [d["id"] for d in got.json()["result"][0]] == [
                h.id for h in direct.search([question], 3)[0]
            ]
        bad = httpx.post(url + "/retrieve", json={"queries": []}, timeout=60)
        assert bad.status_code == 422 and "empty" in bad.json()["error"]
    finally:
        shutdown()
