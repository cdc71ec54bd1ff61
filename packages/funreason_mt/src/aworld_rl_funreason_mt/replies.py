"""Reading the agents' replies: reasoning stripped, the JSON value found, never evaluated.

Agents are asked for one JSON object (in a ```json block or bare). A reply may open with a
``<think>`` block (reasoning models), wrap the object in prose or fences, or be garbage; every
failure is a :class:`ReplyError` whose message says what was wrong, so the pipeline can drop the
item with that reason or regenerate with it as feedback.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_REPLY_CHARS = 60_000
_THINK = re.compile(r"<think>.*?</think>|^.*?</think>", re.DOTALL)
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


class ReplyError(ValueError):
    """An agent's reply does not hold what was asked for (the message says why)."""


def strip_reasoning(text: str) -> str:
    """The reply without ``<think>...</think>`` (also when only ``</think>`` is present)."""
    return _THINK.sub("", text, count=1).strip()


def extract_json(text: Any, *, expect: type = dict) -> Any:
    """The first JSON value of type ``expect`` in the reply (fenced blocks first)."""
    if not isinstance(text, str):
        raise ReplyError(f"the reply is a {type(text).__name__}, not text")
    if len(text) > MAX_REPLY_CHARS:
        raise ReplyError(f"the reply has {len(text)} characters, over {MAX_REPLY_CHARS}")
    body = strip_reasoning(text)
    if not body:
        raise ReplyError("the reply is empty (after removing the reasoning)")
    decoder = json.JSONDecoder()
    for chunk in [*_FENCE.findall(body), body]:
        opener = "{" if expect is dict else "["
        start = chunk.find(opener)
        while start != -1:
            try:
                value, _ = decoder.raw_decode(chunk, start)
            except json.JSONDecodeError:
                start = chunk.find(opener, start + 1)
                continue
            if isinstance(value, expect):
                return value
            start = chunk.find(opener, start + 1)
    kind = "object" if expect is dict else "array"
    raise ReplyError(f"no JSON {kind} in the reply: {body[:120]!r}")
