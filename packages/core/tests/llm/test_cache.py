"""The on-disk response cache: keys, hits, in-flight sharing, processes writing together."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from aworld_rl_core.llm import CachedClient, LLMConfig, ResponseCache, cache_key, make_client
from aworld_rl_core.llm.scripted_server import ScriptedLLMServer, ScriptedTransport

USER = [{"role": "user", "content": "hello"}]
SRC = str(Path(__import__("aworld_rl_core").__file__).parents[1])


def test_cache_key_is_canonical():
    a = cache_key("m", [{"role": "user", "content": "x"}], None, {"temperature": 0, "top_p": 1})
    b = cache_key("m", [{"content": "x", "role": "user"}], [], {"top_p": 1, "temperature": 0})
    assert a == b and len(a) == 64
    assert a != cache_key(
        "m2", [{"role": "user", "content": "x"}], None, {"temperature": 0, "top_p": 1}
    )
    assert a != cache_key(
        "m", [{"role": "user", "content": "x"}], None, {"temperature": 0.1, "top_p": 1}
    )
    tool = [{"type": "function", "function": {"name": "f"}}]
    assert a != cache_key(
        "m", [{"role": "user", "content": "x"}], tool, {"temperature": 0, "top_p": 1}
    )


def test_hits_skip_the_server_and_survive_restarts(make_openai, tmp_path):
    with ScriptedLLMServer(["one", "two", "three"]) as server:
        client = CachedClient(make_openai(server), ResponseCache(tmp_path))
        first = asyncio.run(client.chat(USER, temperature=0.0))
        again = asyncio.run(client.chat(USER, temperature=0.0))
        other = asyncio.run(client.chat(USER, temperature=0.0, seed=1))  # another sample
        assert (first.text, first.cached) == ("one", False)
        assert (again.text, again.cached) == ("one", True)
        assert other.text == "two"
        assert len(server.chat_bodies) == 2
        assert (client.hits, client.misses) == (1, 2)
        asyncio.run(client.aclose())
        reopened = CachedClient(make_openai(server), ResponseCache(tmp_path))
        assert asyncio.run(reopened.chat(USER, temperature=0.0)).text == "one"
        assert len(server.chat_bodies) == 2
    assert again.to_dict() == first.to_dict()


def test_identical_requests_in_flight_share_one_call(make_openai, tmp_path):
    with ScriptedLLMServer(lambda body: "shared", latency_s=0.1) as server:
        client = CachedClient(make_openai(server), ResponseCache(tmp_path))
        outs = asyncio.run(client.chat_many([USER] * 8, concurrency=8))
        assert [o.text for o in outs] == ["shared"] * 8
        assert len(server.chat_bodies) == 1
        assert sum(o.cached for o in outs) == 7


def test_errors_are_not_cached(make_openai, tmp_path):
    from aworld_rl_core.llm import LLMHTTPError
    from aworld_rl_core.llm.scripted_server import Fault

    with ScriptedLLMServer([Fault.error(400, "nope"), "fine"]) as server:
        client = CachedClient(make_openai(server), ResponseCache(tmp_path))
        with pytest.raises(LLMHTTPError, match="nope"):
            asyncio.run(client.chat(USER))
        assert asyncio.run(client.chat(USER)).text == "fine"
        assert len(client.cache) == 1


def test_make_client_wraps_the_cache(tmp_path):
    with ScriptedLLMServer() as server:
        cfg = LLMConfig(base_url=server.base_url, model="m", cache_dir=str(tmp_path / "c"))
        client = make_client(cfg)
        assert isinstance(client.client, CachedClient)  # under the error-counting guard
        asyncio.run(client.chat(USER))
        asyncio.run(client.chat(USER))
        assert len(server.chat_bodies) == 1
        assert server.chat_bodies[0]["temperature"] == 0.7  # the config's defaults
        assert server.chat_bodies[0]["max_tokens"] == 4096
        assert (tmp_path / "c" / "llm_cache.sqlite3").is_file()


WRITER = textwrap.dedent(
    """
    import sys
    from aworld_rl_core.llm.cache import ResponseCache
    cache = ResponseCache(sys.argv[1])
    for i in range(100):
        cache.put(f"{sys.argv[2]}-{i}", {"text": str(i)})
        cache.put("shared", {"text": sys.argv[2]})
    """
)


def test_processes_write_concurrently(tmp_path):
    env = {**os.environ, "PYTHONPATH": SRC}
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), name], env=env)
        for name in ("a", "b", "c")
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    cache = ResponseCache(tmp_path)
    assert len(cache) == 3 * 100 + 1
    assert cache.get("b-99") == {"text": "99"}
    assert cache.get("shared")["text"] in {"a", "b", "c"}


def test_a_lone_surrogate_is_cached_escaped(make_openai, tmp_path):
    server = ScriptedTransport(["half a pair: \ud83d", "unused"])
    client = CachedClient(make_openai(server), ResponseCache(tmp_path))
    prompt = [{"role": "user", "content": "and in the prompt \udc00"}]
    first = asyncio.run(client.chat(prompt))
    again = asyncio.run(client.chat(prompt))
    assert first.text == again.text == "half a pair: \ud83d"
    assert again.cached and len(server.chat_bodies) == 1
