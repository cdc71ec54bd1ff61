"""Reading the agents' replies: reasoning stripped, the JSON value found, never evaluated.

Agents are asked for one JSON object (in a ```json block or bare). A reply may open with a
``<think>`` block (reasoning models), wrap the object in prose or fences, or be garbage; every
failure is a :class:`ReplyError` whose message says what was wrong, so the pipeline can drop the
item with that reason or regenerate with it as feedback.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

MAX_REPLY_CHARS = 60_000
_THINK = re.compile(r"<think>.*?</think>|^.*?</think>", re.DOTALL)
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


class ReplyError(ValueError):
    """An agent's reply does not hold what was asked for (the message says why)."""


def strip_reasoning(text: str) -> str:
    """The reply without ``<think>...</think>`` (also when only ``</think>`` is present)."""
    return _THINK.sub("", text, count=1).strip()


def json_values(text: str, opener: str = "{", start: int = 0) -> Iterator[tuple[Any, int]]:
    """Every JSON value that opens with ``opener`` in ``text`` from ``start``, with the offset
    just past it, in order (text that does not decode is skipped). The one JSON scanner of the
    package: the agents' replies, the critic's, the demo oracle's prompts."""
    decoder = json.JSONDecoder()
    at = text.find(opener, start)
    while at != -1:
        try:
            value, end = decoder.raw_decode(text, at)
        except json.JSONDecodeError:
            at = text.find(opener, at + 1)
            continue
        yield value, end
        at = text.find(opener, end)


def json_after(text: str, label: str, opener: str = "{") -> Any:
    """The JSON value that follows ``label`` in ``text`` (None when there is none or it does
    not decode)."""
    at = text.find(label)
    begin = text.find(opener, at) if at >= 0 else -1
    if begin < 0:
        return None
    try:
        return json.JSONDecoder().raw_decode(text, begin)[0]
    except json.JSONDecodeError:
        return None


def extract_json(text: Any, *, expect: type = dict) -> Any:
    """The first JSON value of type ``expect`` in the reply (fenced blocks first)."""
    if not isinstance(text, str):
        raise ReplyError(f"the reply is a {type(text).__name__}, not text")
    if len(text) > MAX_REPLY_CHARS:
        raise ReplyError(f"the reply has {len(text)} characters, over {MAX_REPLY_CHARS}")
    body = strip_reasoning(text)
    if not body:
        raise ReplyError("the reply is empty (after removing the reasoning)")
    opener = "{" if expect is dict else "["
    for chunk in [*_FENCE.findall(body), body]:
        for value, _ in json_values(chunk, opener):
            if isinstance(value, expect):
                return value
    kind = "object" if expect is dict else "array"
    raise ReplyError(f"no JSON {kind} in the reply: {body[:120]!r}")
