"""Sampling and the response cache against core's scripted OpenAI-compatible server: the k-th
of n samples carries its own seed, and a judge retry is a new request (the cache does not
answer it with the reply that had no verdict)."""

from __future__ import annotations

import asyncio

from aworld_rl_core.llm import make_client
from aworld_rl_core.llm.config import LLMConfig
from aworld_rl_core.llm.scripted_server import ScriptedLLMServer
from aworld_rl_funreason.data import FcSample
from aworld_rl_funreason.fcdr.stages import FcdrSettings, refine_sample
from aworld_rl_funreason.hdr import sample_candidates, sample_seed
from aworld_rl_funreason.testing import WEATHER_TOOL, scripted_reply

QUERY = FcSample(
    id="q1",
    query="Weather in Paris?",
    tools=[WEATHER_TOOL],
    answer="[get_weather(city='Paris')]",
    reasoning="Call get_weather for Paris.",
)


def _client(server, cache_dir, **extra):
    cfg = LLMConfig(
        provider="openai",
        model=server.model,
        base_url=server.base_url,
        cache_dir=str(cache_dir),
        max_retries=0,
        **extra,
    )
    return make_client(cfg)


async def _sample(server, cache_dir, n):
    client = _client(server, cache_dir, temperature=0.7)
    try:
        return await sample_candidates(client, [QUERY], n)
    finally:
        await client.aclose()


def test_sample_seed():
    assert sample_seed(0, 1) == {}
    assert [sample_seed(k, 3) for k in range(3)] == [{"seed": 0}, {"seed": 1}, {"seed": 2}]
    assert sample_seed(2, 3, base=10) == {"seed": 12}
    assert sample_seed(0, 1, base=7) == {"seed": 7}


def test_three_samples_are_three_requests_and_three_cached_replies(tmp_path):
    def reply(body):
        return f"<think>sample {body['seed']}</think>\n\n[get_weather(city='Paris')]"

    with ScriptedLLMServer(reply) as server:
        first = asyncio.run(_sample(server, tmp_path, 3))
        assert sorted(b["seed"] for b in server.chat_bodies) == [0, 1, 2]  # concurrent
        assert [c.text.split("</think>")[0] for c in first] == [
            "<think>sample 0",
            "<think>sample 1",
            "<think>sample 2",
        ]
        again = asyncio.run(_sample(server, tmp_path, 3))  # all three from the cache
        assert len(server.chat_bodies) == 3
        assert [c.text for c in again] == [c.text for c in first]


def test_a_judge_retry_bypasses_the_cache(tmp_path):
    calls = {"n": 0}
    judge = scripted_reply()

    def reply(body):
        calls["n"] += 1
        if calls["n"] == 1:
            return "<think>hmm</think> no verdict here"  # the retry must reach the server
        return judge(body)

    settings = FcdrSettings(stages=("query_tools",), generate_cot=False, judge_retries=1)

    async def refine():
        client = _client(server, tmp_path, temperature=0.6)
        try:
            return await refine_sample(QUERY, client, settings)
        finally:
            await client.aclose()

    with ScriptedLLMServer(reply) as server:
        out = asyncio.run(refine())
        assert out.status == "kept" and [r.by for r in out.trail] == ["judge"]
        assert len(server.chat_bodies) == 2  # one call, one retry
        assert "seed" not in server.chat_bodies[0] and "seed" in server.chat_bodies[1]
        again = asyncio.run(refine())  # a rerun: both replies come from the cache
        assert again.status == "kept" and len(server.chat_bodies) == 2
