"""A BFCL multi-turn entry played as the leaderboard plays it with a prompting model.

What bfcl-eval's prompting handlers do (``inference_multi_turn_prompting``, 2026.3.23), as an
environment for core's LLM loop: the opening is BFCL's system prompt (function docs with their
language note) and the first user turn; each reply is decoded as a python call list; calls are
executed and their results come back as ``tool`` messages (``name``: the call, ``content``: the
result); a reply that holds no call (or does not decode) ends the user turn, and the next one
opens (BFCL's "new functions" message on a held-out function's turn). Calls in a turn where the
model should abstain are executed too: BFCL's eval runner only judges the API state and results
of the turns that have ground truth. After more than ``max_steps_per_turn`` replies with calls in
one turn (BFCL: 20), the episode is force-quit: the result lacks the remaining turns and BFCL's
scorer fails it (``multi_turn:force_terminated``), unless it was the last turn.

Decoding never evaluates text (core's literal-only reader): arguments that are not literals
(``city=London``, ``n=2*3``) make the reply a non-call here, where BFCL's decoder reads them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aworld_rl_core.environment import Message
from aworld_rl_core.tooluse.bfcl.episode import MultiTurnEpisode
from aworld_rl_core.tooluse.bfcl.loader import BfclEntry
from aworld_rl_core.tooluse.bfcl.prompts import opening_messages
from aworld_rl_core.tooluse.bfcl.turns import BfclTurnEnv, Protocol, Reply, Reward, TurnPolicy
from aworld_rl_core.tooluse.calls import (
    Call,
    ToolCallParseError,
    bind_positional,
    format_python_calls,
    parse_python_calls,
    signatures_from_tools,
)

MAXIMUM_STEP_LIMIT = 20
"""bfcl-eval's ``MAXIMUM_STEP_LIMIT``: replies with calls per user turn before a force quit."""


def decode_calls(text: str) -> list[Call]:
    """BFCL's prompting decoder, literal values only: strip backticks, newlines and spaces, add
    missing brackets, read the call list; positional arguments dropped, as BFCL's decoder drops
    them. Raises ToolCallParseError."""
    from aworld_rl_core.tooluse.bfcl.framing import decode_single_turn

    return [Call(c.name, c.arguments) for c in decode_single_turn(text)]


class PromptingProtocol(Protocol):
    """BFCL's prompting protocol: its opening (the memory instruction first in memory
    episodes), replies decoded by :func:`decode_calls` (a reply that does not decode holds no
    call), and one ``tool`` message per call (``name``: the call)."""

    def read(self, text: str) -> Reply:
        try:
            calls = decode_calls(text if isinstance(text, str) else "")
        except ToolCallParseError as exc:
            return Reply(False, errors=(str(exc),))
        return Reply(True, tuple(calls))

    def opening(self, env: BfclTurnEnv) -> list[Message]:
        if env.entry.category.startswith("memory_"):
            return _memory_opening(env)
        return opening_messages(env.entry)

    def render(self, env: BfclTurnEnv, calls: Sequence[str], texts: Sequence[str]) -> list[Message]:
        return [
            {"role": "tool", "name": name, "content": content}
            for name, content in zip(calls, texts, strict=True)
        ]


class PromptingRecord(Reward):
    """No reward (an evaluation protocol); each step's info carries BFCL's ``result`` so far
    and the last one the calls, per-turn scores, progress and whether it force-quit."""

    def info(self, env: BfclTurnEnv, **extra: Any) -> dict[str, Any]:
        ended = {"turn_ended": True} if extra.get("turn_ended") else {}
        return {"turn": env.episode.turn, "result": env.state.result, **ended}

    def final_info(self, env: BfclTurnEnv) -> dict[str, Any]:
        state, entry = env.state, env.entry
        expected = 0 if entry.is_agentic else len(entry.ground_truth or [])
        return {
            "entry_id": entry.id,
            "result": [list(turn) for turn in state.result],
            "calls_per_turn": [list(turn) for turn in state.calls_per_turn],
            "turn_scores": list(state.turn_scores),
            "progress": sum(state.turn_scores) / expected if expected else 0.0,
            "force_quit": state.force_quit,
            "steps": sum(len(turn) for turn in state.result),
        }


def _memory_opening(env: BfclTurnEnv) -> list[Message]:
    """BFCL's memory episodes: the memory instruction (scenario, core memory now) goes first in
    the first turn's system message, then BFCL's prompting system prompt before it."""
    from aworld_rl_core.tooluse.bfcl.agentic_backends import memory_system_prompt
    from aworld_rl_core.tooluse.bfcl.prompts import docs_as_shown, with_system_prompt

    (instance,) = env.episode.instances.values()
    first = [dict(m) for m in env.entry.turns[0]]
    memory = memory_system_prompt(env.entry, instance)
    if first and first[0].get("role") == "system":
        first[0]["content"] = memory + "\n\n" + first[0]["content"]
    else:
        first.insert(0, {"role": "system", "content": memory})
    return with_system_prompt(first, docs_as_shown(env.entry.functions, env.entry.category))


def _prompting_episode(entry: BfclEntry) -> MultiTurnEpisode:
    """BFCL's eval runner: no irrelevance rule; agentic entries are judged on their answer."""
    return MultiTurnEpisode(entry, irrelevance_check=False, judge=not entry.is_agentic)


def _save_memory(env: BfclTurnEnv) -> None:
    """BFCL's memory prerequisite conversations save their memory when they end."""
    if env.entry.category.endswith("_prereq"):
        (instance,) = env.episode.instances.values()
        instance._flush_memory_to_local_file()  # type: ignore[attr-defined]


class BfclEnv(BfclTurnEnv):
    """One episode of a BFCL multi-turn entry in BFCL's prompting protocol (module docstring):
    :class:`PromptingProtocol`, a turn that ends on a reply without (decodable) calls, calls
    executed in every turn, a force quit after ``max_steps_per_turn`` replies with calls.

    ``info`` of every step carries ``result``: per turn, per reply, the text BFCL's scorer
    decodes (the executed calls as a call list, the reply itself otherwise), which is what a
    BFCL result file holds; the last step's info adds the calls, per-turn scores and progress.
    """

    think_tag = None
    """A server's separate reasoning stays out of the decoded text, as BFCL's handlers keep
    ``reasoning_content`` apart (the episode engine reads this)."""

    def __init__(self, entry: BfclEntry, *, max_steps_per_turn: int = MAXIMUM_STEP_LIMIT) -> None:
        if not entry.is_agentic and (not entry.is_multi_turn or entry.ground_truth is None):
            raise ValueError(f"{entry.id}: BfclEnv needs a multi-turn entry with ground truth")
        policy = TurnPolicy(
            max_steps_per_turn=max_steps_per_turn, on_cap="quit", broken_reply="end_turn"
        )
        super().__init__(
            entry,
            protocol=PromptingProtocol(),
            policy=policy,
            reward=PromptingRecord(),
            new_episode=_prompting_episode,
            on_finish=_save_memory,
        )
        self.max_steps_per_turn = max_steps_per_turn

    @property
    def result(self) -> list[list[str]]:
        return self.state.result

    @property
    def force_quit(self) -> bool:
        return self.state.force_quit

    def final_info(self) -> dict[str, Any]:
        return self.reward_part.final_info(self)


def prompting_protocol(entry: BfclEntry) -> PromptingProtocol:
    """``core.bfcl-prompting``."""
    return PromptingProtocol()


def prompting_record(entry: BfclEntry) -> PromptingRecord:
    """``core.prompting-record``."""
    return PromptingRecord()


def ground_truth_replies(entry: BfclEntry) -> list[list[str]]:
    """What a perfect prompting model writes, per user turn: the turn's ground-truth calls as
    one call list (positional arguments named, since BFCL's decoder drops them), then a reply
    without calls; only the reply in a turn where it must abstain."""
    docs = list(entry.functions) + [d for ds in entry.missed_functions.values() for d in ds]
    signatures = signatures_from_tools(docs)
    turns = []
    for calls in entry.ground_truth or []:
        parsed = [c for text in calls for c in parse_python_calls(text)]
        bound = [bind_positional(c, signatures.get(c.name, [])) for c in parsed]
        replies = [format_python_calls(bound)] if bound else []
        turns.append([*replies, "Done." if bound else "I cannot do that with these functions."])
    return turns
