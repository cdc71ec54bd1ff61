"""One prompt for training and serving: vLLM's ``/tokenize`` of every message shape equals the
training chat template's tokens (``apply_chat_template`` on the same tokenizer files)."""

from __future__ import annotations

import httpx
import pytest

pytest.importorskip("vllm")

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two integers.",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            },
        },
    }
]
CALL = {
    "id": "c1",
    "type": "function",
    "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'},
}
SYSTEM = {"role": "system", "content": "Be brief."}
USER = {"role": "user", "content": "Add 1 and 2."}
TOOL = {"role": "tool", "tool_call_id": "c1", "content": "3"}

SHAPES = {
    "user": ([USER], None),
    "system and user": ([SYSTEM, USER], None),
    "tools in the system prompt": ([SYSTEM, USER], TOOLS),
    "assistant text": ([USER, {"role": "assistant", "content": "3"}, USER], None),
    "tool call, empty content": (
        [USER, {"role": "assistant", "content": "", "tool_calls": [CALL]}, TOOL],
        TOOLS,
    ),
    "tool call, no content": (
        [USER, {"role": "assistant", "content": None, "tool_calls": [CALL]}, TOOL],
        TOOLS,
    ),
    "tool call with text": (
        [USER, {"role": "assistant", "content": "Adding.", "tool_calls": [CALL]}, TOOL],
        TOOLS,
    ),
    "two calls, two results": (
        [
            USER,
            {"role": "assistant", "content": "", "tool_calls": [CALL, {**CALL, "id": "c2"}]},
            TOOL,
            {**TOOL, "tool_call_id": "c2"},
        ],
        TOOLS,
    ),
    "think block in the content": (
        [USER, {"role": "assistant", "content": "<think>add</think>\n\n3"}, USER],
        None,
    ),
    "list content": (
        [{"role": "user", "content": [{"type": "text", "text": "Add 1 and 2."}]}],
        None,
    ),
}


@pytest.fixture(scope="module")
def tokenizer(vllm_model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(vllm_model_dir)


@pytest.mark.parametrize("shape", list(SHAPES))
def test_served_prompt_is_the_training_prompt(vllm_server, tokenizer, shape):
    messages, tools = SHAPES[shape]
    body = {"model": vllm_server.model, "messages": messages, "add_generation_prompt": True}
    if tools:
        body["tools"] = tools
    served = httpx.post(f"{vllm_server.url}/tokenize", json=body, timeout=60).json()["tokens"]
    trained = tokenizer.apply_chat_template(
        messages, tools=tools, add_generation_prompt=True, tokenize=True
    )
    trained = trained["input_ids"] if hasattr(trained, "keys") else trained
    assert served == list(trained), tokenizer.decode(served)


def test_a_continued_assistant_turn_is_the_same_prefix(vllm_server, tokenizer):
    messages = [USER, {"role": "assistant", "content": "<search>one"}]
    body = {
        "model": vllm_server.model,
        "messages": messages,
        "add_generation_prompt": False,
        "continue_final_message": True,
    }
    served = httpx.post(f"{vllm_server.url}/tokenize", json=body, timeout=60).json()["tokens"]
    trained = tokenizer.apply_chat_template(
        messages, continue_final_message=True, add_generation_prompt=False, tokenize=True
    )
    trained = trained["input_ids"] if hasattr(trained, "keys") else trained
    assert served == list(trained)
