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

from typing import Any

from aworld_rl_core.environment import Message, Step
from aworld_rl_core.tooluse.bfcl.episode import MultiTurnEpisode
from aworld_rl_core.tooluse.bfcl.loader import BfclEntry
from aworld_rl_core.tooluse.bfcl.prompts import opening_messages
from aworld_rl_core.tooluse.calls import (
    Call,
    ToolCallParseError,
    bind_positional,
    format_python_call,
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


class BfclEnv:
    """One episode of a BFCL multi-turn entry in BFCL's prompting protocol (module docstring).

    ``info`` of every step carries ``result``: per turn, per reply, the text BFCL's scorer
    decodes (the executed calls as a call list, the reply itself otherwise), which is what a
    BFCL result file holds; the last step's info adds the calls, per-turn scores and progress.
    """

    think_tag = None
    """A server's separate reasoning stays out of the decoded text, as BFCL's handlers keep
    ``reasoning_content`` apart (the episode engine reads this)."""

    def __init__(self, entry: BfclEntry, *, max_steps_per_turn: int = MAXIMUM_STEP_LIMIT) -> None:
        if entry.is_agentic:
            pass  # judged on its answer (agentic.judge_agentic), not turn by turn
        elif not entry.is_multi_turn or entry.ground_truth is None:
            raise ValueError(f"{entry.id}: BfclEnv needs a multi-turn entry with ground truth")
        if max_steps_per_turn < 1:
            raise ValueError(f"max_steps_per_turn must be >= 1, got {max_steps_per_turn}")
        self.entry = entry
        self.max_steps_per_turn = max_steps_per_turn
        self._episode: MultiTurnEpisode | None = None
        self.result: list[list[str]] = []
        self.calls_per_turn: list[list[list[str]]] = []
        self.turn_scores: list[float] = []
        self.force_quit = False
        self._call_steps = 0
        self._done = False

    def reset(self) -> list[Message]:
        """BFCL's system prompt and the first user turn."""
        self.close()
        agentic = self.entry.is_agentic
        self._episode = MultiTurnEpisode(self.entry, irrelevance_check=False, judge=not agentic)
        self.result, self.calls_per_turn, self.turn_scores = [[]], [[]], []
        self.force_quit = self._done = False
        self._call_steps = 0
        if self.entry.category.startswith("memory_"):
            return self._memory_opening()
        return opening_messages(self.entry)

    def _memory_opening(self) -> list[Message]:
        """BFCL's memory episodes: the memory instruction (scenario, core memory now) goes first
        in the first turn's system message, then BFCL's prompting system prompt before it."""
        from aworld_rl_core.tooluse.bfcl.agentic_backends import memory_system_prompt
        from aworld_rl_core.tooluse.bfcl.prompts import docs_as_shown, with_system_prompt

        (instance,) = self._live().instances.values()
        first = [dict(m) for m in self.entry.turns[0]]
        memory = memory_system_prompt(self.entry, instance)
        if first and first[0].get("role") == "system":
            first[0]["content"] = memory + "\n\n" + first[0]["content"]
        else:
            first.insert(0, {"role": "system", "content": memory})
        return with_system_prompt(first, docs_as_shown(self.entry.functions, self.entry.category))

    def step(self, model_text: str) -> Step:
        """One reply: execute its calls, or end the user turn. Never raises on model text."""
        episode = self._live()
        if self._done:
            raise RuntimeError(f"episode {self.entry.id} is over; start a new environment")
        text = model_text if isinstance(model_text, str) else ""
        try:
            calls = decode_calls(text)
        except ToolCallParseError:
            calls = []
        if not calls:
            self.result[-1].append(text)
            return self._end_turn()
        results = episode.execute(calls)
        rendered = [format_python_call(c) for c in calls]
        self.result[-1].append(format_python_calls(calls))
        self.calls_per_turn[-1].append(rendered)
        observation = [
            {"role": "tool", "name": name, "content": content}
            for name, content in zip(rendered, results, strict=True)
        ]
        self._call_steps += 1
        if self._call_steps > self.max_steps_per_turn:
            self.force_quit = True
            return self._finish()
        return Step(observation=observation, info=self._info())

    def close(self) -> None:
        if self._episode is not None:
            self._episode.close()
            self._episode = None

    # -- internals -----------------------------------------------------------------------------

    def _live(self) -> MultiTurnEpisode:
        if self._episode is None:
            raise RuntimeError("call reset() before step()")
        return self._episode

    def _end_turn(self) -> Step:
        episode = self._live()
        self.turn_scores.append(episode.end_turn().score)
        self._call_steps = 0
        if episode.done:
            return self._finish()
        self.result.append([])
        self.calls_per_turn.append([])
        return Step(observation=episode.user_messages(), info=self._info(turn_ended=True))

    def _finish(self) -> Step:
        self._done = True
        if self.entry.category.endswith("_prereq"):  # BFCL: the conversation's memory is saved
            (instance,) = self._live().instances.values()
            instance._flush_memory_to_local_file()  # type: ignore[attr-defined]
        return Step(observation=[], done=True, info=self.final_info())

    def _info(self, **extra: Any) -> dict[str, Any]:
        return {"turn": self._live().turn, "result": self.result, **extra}

    def final_info(self) -> dict[str, Any]:
        """What the episode did: BFCL's result, the calls per turn, per-turn scores, progress."""
        expected = 0 if self.entry.is_agentic else len(self.entry.ground_truth or [])
        return {
            "entry_id": self.entry.id,
            "result": [list(turn) for turn in self.result],
            "calls_per_turn": [list(turn) for turn in self.calls_per_turn],
            "turn_scores": list(self.turn_scores),
            "progress": sum(self.turn_scores) / expected if expected else 0.0,
            "force_quit": self.force_quit,
            "steps": sum(len(turn) for turn in self.result),
        }


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
