"""LLMConfig: help texts, loading from a dict with the core loader, the factory's choices."""

from __future__ import annotations

import dataclasses

import pytest

from aworld_rl_core.config import ConfigError, from_dict
from aworld_rl_core.llm import LLMConfig, OpenAIClient, make_client, make_sync_client
from aworld_rl_core.testing.contracts import heavy_modules_after


def test_every_field_has_help():
    for f in dataclasses.fields(LLMConfig):
        assert f.metadata.get("help"), f"LLMConfig.{f.name} has no help text"


def test_loads_with_the_core_loader():
    cfg = from_dict(
        LLMConfig,
        {
            "base_url": "http://10.0.0.5:30000/v1",
            "concurrency": "64",
            "seed": 7,
            "extra_body": {"chat_template_kwargs": {"enable_thinking": False}},
        },
    )
    assert cfg.concurrency == 64 and cfg.seed == 7
    assert cfg.sampling() == {"temperature": 0.7, "top_p": 1.0, "max_tokens": 4096, "seed": 7}
    with pytest.raises(ConfigError, match="provider"):
        from_dict(LLMConfig, {"provider": "vllm"})


def test_factory_builds_the_openai_client(monkeypatch):
    monkeypatch.setenv("JUDGE_KEY", "sk-judge")
    cfg = LLMConfig(
        base_url="http://127.0.0.1:9/v1/",
        model="judge",
        api_key_env="JUDGE_KEY",
        max_retries=2,
        concurrency=3,
        extra_body={"top_k": 20},
    )
    guard = make_client(cfg)
    assert guard.max_error_rate == 0.01 and guard.preflight_enabled  # the config's defaults
    client = guard.client
    assert isinstance(client, OpenAIClient)
    assert client.endpoint == "http://127.0.0.1:9/v1/chat/completions"
    assert client.retry.max_retries == 2 and client.concurrency == 3
    assert client._headers["Authorization"] == "Bearer sk-judge"
    assert client.extra_body == {"top_k": 20}
    assert make_sync_client(cfg).model == "judge"


def test_importing_the_package_loads_no_heavy_library():
    code = "import aworld_rl_core.llm, aworld_rl_core.llm.scripted_server"
    assert heavy_modules_after(code, ("httpx", "torch", "transformers")) == []
