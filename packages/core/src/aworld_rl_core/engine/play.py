"""The LLM-client driver: an agent (any ``aworld_rl_core.llm`` client) plays environments.

Evaluations and data synthesis use this. Each turn sends the conversation with the
environment's stop strings as OpenAI ``stop``; the stop string a server reports in
``Completion.stop_reason`` is re-appended (OpenAI-style servers strip it). After an inline
observation the open assistant message is continued (``continue_final_message``, vLLM's and
transformers' name). With a ``codec`` the episodes also carry tokens and the loss mask, as the
training drivers build them (SFT data from played episodes).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from aworld_rl_core.engine.codec import ChatCodec
from aworld_rl_core.engine.episode import Episode, Limits, Output, Rollout, Turn


def turn_request(turn: Turn, sampling: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``client.chat`` keyword arguments of one turn (besides the messages)."""
    params: dict[str, Any] = dict(sampling or {})
    if turn.max_new_tokens is not None:
        params["max_tokens"] = turn.max_new_tokens
    if turn.stop:
        params["stop"] = list(turn.stop)
    if turn.continuing:
        params.update(continue_final_message=True, add_generation_prompt=False)
    if turn.tools:
        params["tools"] = turn.tools
    return params


def reply_output(completion: Any, stops: Sequence[str]) -> Output:
    """A client's :class:`Completion` as engine output, the matched stop string put back."""
    text = completion.text or ""
    stop = getattr(completion, "stop_reason", None)
    if isinstance(stop, str) and stop in stops and not text.endswith(stop):
        text += stop
    return Output(text=text, finish=completion.finish_reason)


async def play_many(
    client: Any,
    envs: Sequence[Any],
    *,
    sampling: Mapping[str, Any] | None = None,
    limits: Limits | None = None,
    codec: ChatCodec | None = None,
    errors: Literal["raise", "end"] = "raise",
) -> list[Episode]:
    """Play one episode per environment, turn-synchronously (``step_many`` batches each turn).

    The client bounds its own concurrency; environments are reset and stepped in the event
    loop's thread (their tools may touch process-global state). ``errors="end"`` ends an
    episode whose chat call raised (``Episode.error`` says why) and goes on with the others;
    ``"raise"`` propagates the first error. The environments are closed at the end.
    """
    if errors not in ("raise", "end"):
        raise ValueError(f"errors must be 'raise' or 'end', got {errors!r}")
    rollout = Rollout(envs, limits, codec=codec)
    try:
        while not rollout.finished:
            turns = rollout.pending()
            replies = await asyncio.gather(
                *(client.chat(t.messages, **turn_request(t, sampling)) for t in turns),
                return_exceptions=errors == "end",
            )
            outputs = {}
            for turn, reply in zip(turns, replies, strict=True):
                if isinstance(reply, BaseException):
                    if not isinstance(reply, Exception):
                        raise reply
                    rollout.end(turn.index, f"{type(reply).__name__}: {reply}")
                else:
                    outputs[turn.index] = reply_output(reply, turn.stop)
            if outputs:
                rollout.advance(outputs)  # in the loop's thread: tools touch process state
    finally:
        rollout.close()
    return rollout.episodes


async def play(
    client: Any,
    env: Any,
    *,
    sampling: Mapping[str, Any] | None = None,
    limits: Limits | None = None,
    codec: ChatCodec | None = None,
) -> Episode:
    """Play one episode of ``env`` with ``client``; the environment is closed at the end."""
    [episode] = await play_many(client, [env], sampling=sampling, limits=limits, codec=codec)
    return episode
