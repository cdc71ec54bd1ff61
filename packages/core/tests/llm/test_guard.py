"""Loud failures: failed calls counted against a budget, and the server checked before a run."""

from __future__ import annotations

import asyncio
import contextlib
import socket

import pytest

from aworld_rl_core.engine import play, play_many
from aworld_rl_core.environment import Step
from aworld_rl_core.llm import (
    GuardedClient,
    LLMConfig,
    LLMErrorBudgetExceeded,
    LLMHTTPError,
    LLMPreflightError,
    account_llm_errors,
    make_client,
)
from aworld_rl_core.llm.scripted_server import Fault, ScriptedLLMServer
from aworld_rl_core.llm.types import Completion
from aworld_rl_core.llm.wrappers import MeteredClient


class OneTurnEnv:
    """Asks one question; any reply ends the episode."""

    def __init__(self, question: str = "what is two plus two", tools=None) -> None:
        self.question = question
        self.tools = tools

    def reset(self):
        return [{"role": "user", "content": self.question}]

    def step(self, model_text: str) -> Step:
        return Step(observation=[], reward=float(model_text == "4"), done=True)

    def close(self) -> None:
        pass


def _dead_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed again: nothing listens there


def test_a_dead_server_fails_the_preflight_before_any_episode():
    cfg = LLMConfig(base_url=f"http://127.0.0.1:{_dead_port()}/v1", max_retries=0)
    client = make_client(cfg)
    with pytest.raises(LLMPreflightError, match="cannot reach the model server") as err:
        asyncio.run(play_many(client, [OneTurnEnv(), OneTurnEnv()], errors="end"))
    assert "llm.base_url" in str(err.value)
    assert client.calls == 0  # no chat call was made
    # every later call fails the same way, without trying again, and counts as failed: a caller
    # that catches every error (a pipeline stage) still ends over the budget
    with pytest.raises(LLMPreflightError):
        asyncio.run(client.chat([{"role": "user", "content": "hi"}]))
    with pytest.raises(LLMErrorBudgetExceeded, match="1 of 1 calls.*LLMPreflightError x1"):
        account_llm_errors({}, client)


def test_a_dead_server_without_preflight_is_counted_and_fails_the_run():
    cfg = LLMConfig(base_url=f"http://127.0.0.1:{_dead_port()}/v1", max_retries=0, preflight=False)
    client = make_client(cfg)
    episodes = asyncio.run(play_many(client, [OneTurnEnv() for _ in range(3)], errors="end"))
    assert [e.error.split(":")[0] for e in episodes] == ["LLMConnectionError"] * 3
    metrics: dict = {"accuracy": 0.0}
    with pytest.raises(LLMErrorBudgetExceeded, match="3 of 3 calls") as err:
        account_llm_errors(metrics, client)
    assert "LLMConnectionError x3" in str(err.value)
    assert metrics == {"accuracy": 0.0, "llm_calls": 3, "llm_errors": 3}


def test_http_400s_from_the_server_fail_the_run():
    with ScriptedLLMServer(Fault.error(400, "maximum context length is 2048 tokens")) as server:
        client = make_client(LLMConfig(base_url=server.base_url, model=server.model))
        episodes = asyncio.run(play_many(client, [OneTurnEnv() for _ in range(4)], errors="end"))
    assert all("HTTP 400" in e.error for e in episodes)
    with pytest.raises(LLMErrorBudgetExceeded, match="4 of 4 calls") as err:
        account_llm_errors({}, MeteredClient(client))  # found under a meter too
    assert "maximum context length is 2048 tokens" in str(err.value)
    assert "max_error_rate=0.01" in str(err.value)


class Flaky:
    """Fails the calls whose number (from 0) is in ``failing``."""

    model = "flaky"

    def __init__(self, failing: set[int]) -> None:
        self.failing = failing
        self.n = 0

    async def chat(self, messages, **_):
        self.n += 1
        if self.n - 1 in self.failing:
            raise LLMHTTPError("HTTP 400 from x: bad", status=400, endpoint="x")
        return Completion(text="4")

    async def aclose(self) -> None:
        pass


@pytest.mark.parametrize(("failed", "fails"), [(0, False), (2, False), (3, True)])
def test_the_error_budget_is_a_share_of_the_calls(failed, fails):
    client = GuardedClient(Flaky(set(range(failed))), max_error_rate=0.01)

    async def go():
        for _ in range(200):
            with contextlib.suppress(LLMHTTPError):
                await client.chat([{"role": "user", "content": "q"}])

    asyncio.run(go())
    metrics: dict = {}
    if fails:  # 3 of 200 is 1.5% > 1%
        with pytest.raises(LLMErrorBudgetExceeded, match="3 of 200 calls"):
            account_llm_errors(metrics, client)
    else:  # 2 of 200 is exactly 1%: allowed
        account_llm_errors(metrics, client)
    assert metrics == {"llm_calls": 200, "llm_errors": failed}


def test_clients_without_a_guard_count_nothing():
    metrics: dict = {}
    account_llm_errors(metrics, None, Flaky(set()))
    assert metrics == {"llm_calls": 0, "llm_errors": 0}


def test_preflight_names_the_served_models_when_the_name_is_wrong():
    with ScriptedLLMServer("4", model="Qwen3-8B", max_model_len=4096) as server:
        cfg = LLMConfig(base_url=server.base_url, model="Qwen/Qwen3-8B")
        with pytest.raises(LLMPreflightError, match=r"serves \['Qwen3-8B'\], not 'Qwen/Qwen3-8B'"):
            asyncio.run(play(make_client(cfg), OneTurnEnv()))
        assert server.chat_bodies == []


def test_preflight_compares_the_longest_prompt_with_the_context():
    long_question = " ".join(["word"] * 300)  # 300 tokens by the scripted /tokenize
    with ScriptedLLMServer("4", max_model_len=1024) as server:
        cfg = LLMConfig(base_url=server.base_url, model=server.model, max_tokens=512)
        episodes = asyncio.run(
            play_many(make_client(cfg), [OneTurnEnv(), OneTurnEnv(long_question)])
        )
        assert [e.reward for e in episodes] == [1.0, 1.0]  # 300 + 512 <= 1024: fine
        tokenized = [r.body for r in server.requests if r.path == "/tokenize"]
        assert [len(b["messages"][0]["content"].split()) for b in tokenized] == [300]
        with pytest.raises(LLMPreflightError, match="context of 1024 tokens.*300 tokens"):
            short = LLMConfig(base_url=server.base_url, model=server.model, max_tokens=2048)
            asyncio.run(play_many(make_client(short), [OneTurnEnv(long_question)]))
    with ScriptedLLMServer("4", max_model_len=200) as server:
        cfg = LLMConfig(base_url=server.base_url, model=server.model, max_tokens=16)
        with pytest.raises(LLMPreflightError, match="larger --max-model-len"):
            asyncio.run(play(make_client(cfg), OneTurnEnv(long_question)))


TOOLS = [{"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}]


def _vllm_without_tool_parser(body):
    if body.get("tools"):
        return Fault.error(
            400, '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser'
        )
    return "4"


def test_preflight_asks_for_the_tool_parser_a_protocol_with_tools_needs():
    with ScriptedLLMServer(_vllm_without_tool_parser, max_model_len=4096) as server:
        cfg = LLMConfig(base_url=server.base_url, model=server.model, max_tokens=16)
        with pytest.raises(LLMPreflightError, match="--tool-call-parser hermes"):
            asyncio.run(play(make_client(cfg), OneTurnEnv(tools=TOOLS)))
        probe = server.chat_bodies[-1]
        assert probe["max_tokens"] == 1 and probe["tools"] == TOOLS
        # without tools the same server passes
        episode = asyncio.run(play(make_client(cfg), OneTurnEnv()))
        assert episode.reward == 1.0


def test_the_preflight_runs_once_for_calls_in_flight_together():
    with ScriptedLLMServer("4", max_model_len=4096) as server:
        client = make_client(LLMConfig(base_url=server.base_url, model=server.model))

        async def go():
            msgs = [{"role": "user", "content": "q"}]
            return await asyncio.gather(*(client.chat(msgs) for _ in range(5)))

        assert [c.text for c in asyncio.run(go())] == ["4"] * 5
        assert [r.path for r in server.requests].count("/v1/models") == 1
        assert client.preflight_report == {
            "models": ["scripted-model"],
            "max_model_len": 4096,
            "prompt_tokens": 1,
        }


def test_the_summary_always_shows_the_llm_error_count(capsys, tmp_path):
    from types import SimpleNamespace

    from aworld_rl_core.cli import _print_summary
    from aworld_rl_core.runs import RunResult

    result = RunResult(
        metrics={"accuracy": 0.5, "llm_calls": 40, "llm_errors": 0}, headline=["accuracy"]
    )
    _print_summary("x.eval", SimpleNamespace(dir=tmp_path, warnings=0), result)
    out = capsys.readouterr().out
    assert "llm_calls: 40" in out and "llm_errors: 0" in out, out
