"""Scripted agents for BFCL multi-turn entries: TEST DOUBLES of a model, served by
:class:`~aworld_rl_core.llm.scripted_server.ScriptedLLMServer`.

A script gives the replies of each user turn; the reply function finds a request's script by a
key (by default the conversation's opening: system prompt and first user message) and the
place in it by counting user turns and the replies since the last one::

    from aworld_rl_core.tooluse.bfcl import BfclEnv, ground_truth_replies

    scripts = {opening_key(BfclEnv(e).reset()): ground_truth_replies(e) for e in entries}
    with ScriptedLLMServer(scripted_replies(scripts), latency_s=0.2) as server: ...

Past the last reply of a turn the script repeats it (an agent that never ends a turn). BFCL's
800 multi-turn entries have only 484 distinct openings: to script all of them, tag requests
(e.g. the OpenAI ``user`` field) and key by the tag.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

Message = dict[str, Any]
Scripts = Mapping[Hashable, Sequence[Sequence[str]]]


def opening_key(messages: Sequence[Message]) -> tuple[str, str]:
    """A conversation's opening: the contents of its first two messages."""
    return str(messages[0]["content"]), str(messages[1]["content"])


def position(messages: Sequence[Message], observations: Sequence[str] = ()) -> tuple[int, int]:
    """(user turn, replies so far in it). User messages starting with one of ``observations``
    are environment feedback (EnvTuning's tool results), not a new user turn."""
    turn, since, previous = -1, 0, False
    prefixes = tuple(observations)
    for i, message in enumerate(messages):
        content = str(message.get("content") or "")
        opening = message["role"] == "user" and not (prefixes and content.startswith(prefixes))
        turn += opening and not previous
        since = i if opening else since
        previous = opening
    return turn, sum(m["role"] == "assistant" for m in messages[since:])


def scripted_replies(
    scripts: Scripts,
    *,
    key: Callable[[dict], Hashable] | None = None,
    observations: Sequence[str] = (),
) -> Callable[[dict], str]:
    """A reply function for the scripted server: ``scripts[key(body)]`` holds the replies per
    turn of the request's conversation (``key`` defaults to :func:`opening_key`)."""

    def reply(body: dict) -> str:
        messages = body["messages"]
        turns = scripts[key(body) if key else opening_key(messages)]
        turn, index = position(messages, observations)
        return turns[turn][min(index, len(turns[turn]) - 1)]

    return reply
