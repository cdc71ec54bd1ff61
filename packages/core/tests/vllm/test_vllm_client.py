"""Core's OpenAI client and episode engine against vLLM's own server (CPU, a random tiny Qwen3;
replies forced by regex where a shape is needed). Run by ``nox -s tests_vllm``."""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("vllm")

from aworld_rl_core.engine import play
from aworld_rl_core.environment import Step
from aworld_rl_core.llm import (
    LLMConfig,
    LLMHTTPError,
    LLMPreflightError,
    OpenAIClient,
    RetryPolicy,
    make_client,
)
from aworld_rl_core.testing.vllm_server import forced

USER = [{"role": "user", "content": "Add 1 and 2."}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two integers.",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
        },
    }
]
CALL_TEXT = '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>'


def _client(server, **kwargs):
    kwargs.setdefault("retry", RetryPolicy(max_retries=0))
    return OpenAIClient(base_url=server.base_url, model=server.model, api_key_env=None, **kwargs)


def _chat(client, messages, **kwargs):
    async def go():
        try:
            return await client.chat(messages, **kwargs)
        finally:
            await client.aclose()

    return asyncio.run(go())


def _regex(text: str) -> str:
    return "".join("\\" + c if c in "\\.^$*+?{}[]|()" else c for c in text)


def test_a_tool_call_round_trip(vllm_server):
    client = _client(vllm_server)
    first = _chat(client, USER, tools=TOOLS, temperature=0, **forced(_regex(CALL_TEXT)))
    assert first.text == "" and first.finish_reason == "tool_calls"
    [call] = first.tool_calls
    assert call["function"]["name"] == "add"
    assert json.loads(call["function"]["arguments"]) == {"a": 1, "b": 2}
    result = {"role": "tool", "tool_call_id": call["id"], "content": "3"}
    messages = [*USER, first.message(), result]
    second = _chat(client, messages, tools=TOOLS, temperature=0, **forced("The sum is 3\\."))
    assert second.text == "The sum is 3." and not second.tool_calls


def test_stop_strings_end_the_reply_and_are_reported(vllm_server):
    client = _client(vllm_server)
    reply = _chat(
        client, USER, temperature=0, stop=["</search>"], **forced("<search>one</search>two")
    )
    assert reply.text == "<search>one" and reply.stop_reason == "</search>"
    assert reply.finish_reason == "stop"


def test_seeds_reproduce_sampled_replies_and_greedy_is_deterministic(vllm_server):
    client = _client(vllm_server)
    sampled = [_chat(client, USER, temperature=1.0, seed=s, max_tokens=12).text for s in (7, 7, 8)]
    assert sampled[0] == sampled[1] and sampled[0] != sampled[2]
    greedy = {_chat(client, USER, temperature=0, max_tokens=12).text for _ in range(2)}
    assert len(greedy) == 1


def test_token_ids_and_logprobs_come_back_when_asked(vllm_server):
    client = _client(vllm_server)
    reply = _chat(client, USER, temperature=1.0, seed=1, max_tokens=6, logprobs=True,
                  return_token_ids=True)  # fmt: skip
    assert len(reply.token_ids) == len(reply.logprobs) == reply.usage["completion_tokens"] == 6
    assert all(lp <= 0.0 for lp in reply.logprobs)
    plain = _chat(client, USER, temperature=0, max_tokens=3)
    assert plain.token_ids is None and plain.logprobs is None


def test_400_and_404_are_the_clients_http_errors(vllm_server):
    client = _client(vllm_server)
    with pytest.raises(LLMHTTPError, match="HTTP 400") as err:
        _chat(client, USER, max_tokens=vllm_server.max_model_len + 1)
    assert err.value.status == 400 and "max_tokens" in str(err.value)
    wrong = OpenAIClient(base_url=vllm_server.base_url, model="no-such-model", api_key_env=None,
                         retry=RetryPolicy(max_retries=0))  # fmt: skip
    with pytest.raises(LLMHTTPError, match="HTTP 404.*no-such-model.*check base_url") as err:
        _chat(wrong, USER, max_tokens=2)
    assert err.value.status == 404


def test_the_preflight_reads_vllms_model_card_and_tokenizer(vllm_server):
    cfg = LLMConfig(base_url=vllm_server.base_url, model=vllm_server.model, max_tokens=64)
    client = make_client(cfg)
    asyncio.run(client.preflight([{"messages": USER, "tools": TOOLS}]))
    report = client.preflight_report
    assert report["models"] == [vllm_server.model]
    assert report["max_model_len"] == vllm_server.max_model_len
    assert report["prompt_tokens"] > 100  # the tools' system block is in the prompt
    wrong = make_client(LLMConfig(base_url=vllm_server.base_url, model="Qwen/Qwen3-8B"))
    with pytest.raises(LLMPreflightError, match=r"serves \['tiny-qwen3'\], not 'Qwen/Qwen3-8B'"):
        asyncio.run(wrong.chat(USER))


class ThinkThenAnswer:
    """One turn: records the text the engine hands the environment."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def reset(self):
        return [{"role": "user", "content": "What is 1 + 2?"}]

    def step(self, model_text: str) -> Step:
        self.seen.append(model_text)
        return Step(observation=[], done=True)

    def close(self) -> None:
        pass


REASONED = "<think>one plus two</think>\n\nThe answer is 3."


def test_a_reasoning_parser_server_gives_the_same_episode(vllm_server, vllm_reasoning_server):
    sampling = {"temperature": 0, **forced(_regex(REASONED))}
    episodes, seen = [], []
    for server in (vllm_server, vllm_reasoning_server):
        env = ThinkThenAnswer()
        client = _client(server)
        episodes.append(asyncio.run(play(client, env, sampling=sampling)))
        seen.append(env.seen)
    assert seen == [[REASONED], [REASONED]]
    assert episodes[0].messages == episodes[1].messages
    # the parser did split it: the text-only reading loses the think block
    split = _chat(_client(vllm_reasoning_server), ThinkThenAnswer().reset(), **sampling)
    assert (split.reasoning, split.text) == ("one plus two", "\n\nThe answer is 3.")
