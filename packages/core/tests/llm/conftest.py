"""Fixtures for the LLM client tests: the scripted endpoint (a test double, in process) and fast
clients."""

from __future__ import annotations

import pytest

from aworld_rl_core.llm import OpenAIClient, RetryPolicy
from aworld_rl_core.llm.scripted_server import ScriptedLLM, ScriptedTransport


class SleepRecorder:
    """Stands in for ``asyncio.sleep`` between retries: records the waits, does not wait."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


@pytest.fixture
def llm_server():
    """The scripted endpoint, in process (``ScriptedLLMServer`` is the same on a socket)."""
    return ScriptedTransport()


@pytest.fixture
def make_openai():
    """``make_openai(server, **kwargs)``: an OpenAIClient on the scripted endpoint (in process or
    on a socket) with instant retries."""

    def factory(server: ScriptedLLM, **kwargs) -> OpenAIClient:
        if isinstance(server, ScriptedTransport):
            kwargs.setdefault("transport", server.transport)
        kwargs.setdefault("retry", RetryPolicy(max_retries=3, base_delay_s=0.5))
        kwargs.setdefault("timeout_s", 5.0)
        kwargs.setdefault("api_key_env", None)
        client = OpenAIClient(base_url=server.base_url, model=server.model, **kwargs)
        client.sleep = SleepRecorder()
        return client

    return factory
