"""The server's structure carried through the LLM-client driver: reasoning back into the think
block, tool calls back into call text, token ids and logprobs on the Completion."""

from __future__ import annotations

import asyncio
import json

from aworld_rl_core.engine import play
from aworld_rl_core.engine.play import hermes_calls, reply_output
from aworld_rl_core.environment import Step
from aworld_rl_core.llm import OpenAIClient, RetryPolicy
from aworld_rl_core.llm.scripted_server import ScriptedTransport
from aworld_rl_core.llm.types import Completion


class EchoEnv:
    """Records the text it is stepped with; one turn."""

    def __init__(self, think_tag="think", render=None) -> None:
        self.seen: list[str] = []
        if think_tag != "think":
            self.think_tag = think_tag
        if render is not None:
            self.render_tool_calls = render

    def reset(self):
        return [{"role": "user", "content": "add 1 and 2"}]

    def step(self, model_text: str) -> Step:
        self.seen.append(model_text)
        return Step(observation=[], done=True)

    def close(self) -> None:
        pass


CALL = {
    "id": "call-1",
    "type": "function",
    "function": {"name": "add", "arguments": json.dumps({"a": 1, "b": 2})},
}


def _client(server: ScriptedTransport) -> OpenAIClient:
    return OpenAIClient(
        base_url=server.base_url,
        model=server.model,
        transport=server.transport,
        retry=RetryPolicy(max_retries=0),
        api_key_env=None,
    )


def _play(reply, env, **kwargs):
    server = ScriptedTransport([reply])
    episode = asyncio.run(play(_client(server), env, **kwargs))
    return episode, server


def test_reasoning_goes_back_into_the_think_block():
    # vLLM's qwen3 reasoning parser splits "<think>R</think>C" into reasoning R and content C
    env = EchoEnv()
    episode, _ = _play({"content": "\n\nThe sum is 3.", "reasoning_content": "1+2=3"}, env)
    assert env.seen == ["<think>1+2=3</think>\n\nThe sum is 3."]
    assert episode.messages[-1]["content"] == "<think>1+2=3</think>\n\nThe sum is 3."


def test_vllm_reasoning_field_and_the_protocols_own_tag():
    env = EchoEnv(think_tag="reason")
    _play({"content": "ok", "reasoning": "because"}, env)
    assert env.seen == ["<reason>because</reason>ok"]


def test_a_protocol_without_a_think_block_keeps_reasoning_out():
    env = EchoEnv(think_tag=None)  # BFCL's protocol
    _play({"content": "[add(a=1, b=2)]", "reasoning_content": "thinking"}, env)
    assert env.seen == ["[add(a=1, b=2)]"]


def test_tool_calls_go_back_as_hermes_call_text():
    env = EchoEnv()
    _play({"content": "", "tool_calls": [CALL, {**CALL, "id": "call-2"}]}, env)
    one = '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>'
    assert env.seen == [f"{one}\n{one}"]
    env = EchoEnv()
    _play({"content": "Let me add.", "tool_calls": [CALL], "reasoning_content": "r"}, env)
    assert env.seen == [f"<think>r</think>Let me add.\n{one}"]


def test_a_protocol_renders_tool_calls_its_own_way():
    def python_calls(calls):
        parts = []
        for call in calls:
            args = json.loads(call["function"]["arguments"])
            kwargs = ", ".join(f"{k}={v!r}" for k, v in args.items())
            parts.append(f"{call['function']['name']}({kwargs})")
        return "<tool_call>[" + ", ".join(parts) + "]</tool_call>"

    env = EchoEnv(render=python_calls)
    _play({"content": "", "tool_calls": [CALL]}, env)
    assert env.seen == ["<tool_call>[add(a=1, b=2)]</tool_call>"]


def test_the_text_only_flag_keeps_the_old_behaviour():
    env = EchoEnv()
    _play({"content": "x", "tool_calls": [CALL], "reasoning_content": "r"}, env, structured=False)
    assert env.seen == ["x"]


def test_hermes_calls_keep_unparsable_arguments_as_sent():
    bad = {"function": {"name": "f", "arguments": "{not json"}}
    assert (
        hermes_calls([bad]) == '<tool_call>\n{"name": "f", "arguments": "{not json"}\n</tool_call>'
    )


def test_the_stop_string_is_put_back_after_the_rebuilt_text():
    completion = Completion(text="query", reasoning="r", stop_reason="</search>")
    assert reply_output(completion, ("</search>",)).text == "<think>r</think>query</search>"


def test_completion_carries_token_ids_and_logprobs_when_the_server_sends_them():
    body = {
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "hi"},
                "finish_reason": "stop",
                "token_ids": [6023, 151645],
                "logprobs": {
                    "content": [
                        {"token": "hi", "logprob": -0.25, "bytes": [104, 105]},
                        {"token": "<|im_end|>", "logprob": -1.5, "bytes": []},
                    ]
                },
            }
        ],
        "model": "m",
    }
    server = ScriptedTransport([body])
    completion = asyncio.run(
        _client(server).chat([{"role": "user", "content": "q"}], logprobs=True)
    )
    assert completion.token_ids == [6023, 151645]
    assert completion.logprobs == [-0.25, -1.5]
    assert server.chat_bodies[0]["logprobs"] is True
    assert Completion.from_dict(completion.to_dict()) == completion  # the cache keeps them
    plain = asyncio.run(_client(ScriptedTransport(["hi"])).chat([{"role": "user", "content": "q"}]))
    assert plain.token_ids is None and plain.logprobs is None
