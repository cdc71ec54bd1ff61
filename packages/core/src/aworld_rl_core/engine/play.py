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
import contextlib
import json
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


def hermes_calls(tool_calls: Sequence[Mapping[str, Any]]) -> str:
    """OpenAI tool calls as Qwen / hermes call text, as Qwen's chat template writes them (what
    vLLM's ``hermes`` tool parser takes out of the text)."""
    blocks = []
    for call in tool_calls:
        function = call.get("function") or {}
        arguments: Any = function.get("arguments", {})
        if isinstance(arguments, str):
            with contextlib.suppress(ValueError):  # else kept as sent: the environment judges it
                arguments = json.loads(arguments)
        payload = json.dumps({"name": function.get("name"), "arguments": arguments})
        blocks.append(f"<tool_call>\n{payload}\n</tool_call>")
    return "\n".join(blocks)


def reply_text(completion: Any, env: Any = None) -> str:
    """The model's whole turn as the protocol writes it: the server's separate ``reasoning``
    back inside the environment's think block (``env.think_tag``, default ``think``; None: the
    protocol keeps reasoning out of the text, as BFCL's handlers do), then the content, then the
    server's parsed ``tool_calls`` back as call text (``env.render_tool_calls(calls)``, default
    :func:`hermes_calls`). vLLM's qwen3 reasoning parser splits ``<think>R</think>C`` into R
    and C, so this gives back the text a server without the parser returns."""
    text = completion.text or ""
    reasoning = getattr(completion, "reasoning", None)
    tag = getattr(env, "think_tag", "think") if env is not None else "think"
    if reasoning is not None and tag:
        text = f"<{tag}>{reasoning}</{tag}>{text}"
    calls = getattr(completion, "tool_calls", None)
    if calls:
        render = getattr(env, "render_tool_calls", None) or hermes_calls
        rendered = render(calls)
        text = f"{text}\n{rendered}" if text and not text.endswith("\n") else text + rendered
    return text


def reply_output(
    completion: Any, stops: Sequence[str], env: Any = None, *, structured: bool = True
) -> Output:
    """A client's :class:`Completion` as engine output, the matched stop string put back; with
    ``structured`` the server's reasoning and tool calls go back into the text
    (:func:`reply_text`), else only ``completion.text`` is read (the text-only behaviour)."""
    text = reply_text(completion, env) if structured else completion.text or ""
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
    structured: bool = True,
) -> list[Episode]:
    """Play one episode per environment, turn-synchronously (``step_many`` batches each turn).

    The client bounds its own concurrency; environments are reset and stepped in the event
    loop's thread (their tools may touch process-global state). ``errors="end"`` ends an
    episode whose chat call raised (``Episode.error`` says why) and goes on with the others;
    ``"raise"`` propagates the first error. The environments are closed at the end.
    ``structured=False`` reads only each reply's text (see :func:`reply_output`). A client with
    a ``preflight`` method (core's guarded clients) is handed the first turn's requests before
    any is sent; its :class:`~aworld_rl_core.llm.guard.LLMPreflightError` always propagates.
    """
    if errors not in ("raise", "end"):
        raise ValueError(f"errors must be 'raise' or 'end', got {errors!r}")
    rollout = Rollout(envs, limits, codec=codec)
    try:
        preflight = getattr(client, "preflight", None)
        if callable(preflight) and not rollout.finished:
            requests = [
                {"messages": t.messages, **turn_request(t, sampling)} for t in rollout.pending()
            ]
            await preflight(requests)
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
                    env = rollout.envs[turn.index]
                    outputs[turn.index] = reply_output(reply, turn.stop, env, structured=structured)
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
    structured: bool = True,
) -> Episode:
    """Play one episode of ``env`` with ``client``; the environment is closed at the end."""
    [episode] = await play_many(
        client, [env], sampling=sampling, limits=limits, codec=codec, structured=structured
    )
    return episode
