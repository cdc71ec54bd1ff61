"""A BFCL multi-turn entry as an environment (core's Environment protocol), for RL and evals.

One episode plays every user turn of one entry. Each model response is read with a named
tool-call protocol (``funreason_mt`` by default: ``<think>`` then ``<tool_call>[f(a=1)]``
``</tool_call>`` or ``<answer>``). Calls run in the entry's :class:`MultiTurnEpisode` and their
results come back as one ``tool`` message (a JSON list of ``{call: result}``); an answer (a
response without calls) ends the user turn, which is judged as BFCL judges it, and the next
turn's user messages follow; a response that breaks the format gets a corrective user message.
``max_steps_per_turn`` responses (BFCL: 20) force the turn to end.

Rewards come at the end. ``binary`` (FunReason-MT's FunRL): 1.0 when every response followed the
format and every turn passed BFCL's checks, else 0.0. ``progress``: the share of turns that
passed. A driver that cuts the episode short gives 0.

Rows name the entry by ``bfcl_entry`` (a BFCL-shaped dict or its JSON, e.g. synthesized data;
see :func:`~aworld_rl_core.tooluse.bfcl.loader.entry_from_raw`) or by ``entry_id`` (an entry of
the installed BFCL multi-turn categories); a row's ``prompt`` is used as the opening messages,
else BFCL's prompting system prompt with the first turn's docs.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from aworld_rl_core.environment import Message, Step
from aworld_rl_core.tooluse.bfcl.episode import MultiTurnEpisode
from aworld_rl_core.tooluse.bfcl.loader import (
    MULTI_TURN_CATEGORIES,
    BfclEntry,
    entry_from_raw,
    load_category,
)
from aworld_rl_core.tooluse.bfcl.prompts import with_system_prompt
from aworld_rl_core.tooluse.calls import format_python_call, signatures_from_tools
from aworld_rl_core.tooluse.parsers import get_parser

Reward = Literal["binary", "progress"]
BFCL_STEP_LIMIT = 20
"""BFCL's own limit of model steps per user turn."""


def tool_message(pairs: Sequence[tuple[str, str]]) -> Message:
    """The results of one step: a ``tool`` message holding a JSON list of ``{call: result}``."""
    content = json.dumps([{call: result} for call, result in pairs], ensure_ascii=False)
    return {"role": "tool", "content": content}


class BfclMultiTurnEnv:
    """One episode of one BFCL multi-turn entry (see the module docstring)."""

    def __init__(
        self,
        entry: BfclEntry,
        *,
        protocol: str = "think_tool_python",
        reward: Reward = "binary",
        max_steps_per_turn: int = BFCL_STEP_LIMIT,
        opening: Sequence[Message] | None = None,
    ) -> None:
        if not entry.is_multi_turn or entry.ground_truth is None:
            raise ValueError(f"{entry.id}: a BFCL multi-turn entry with ground truth is needed")
        if reward not in ("binary", "progress"):
            raise ValueError(f"reward must be 'binary' or 'progress', got {reward!r}")
        if max_steps_per_turn < 1:
            raise ValueError(f"max_steps_per_turn must be >= 1, got {max_steps_per_turn}")
        self.entry = entry
        self._expected_turns = len(entry.ground_truth)
        self.reward_kind = reward
        self.max_steps_per_turn = max_steps_per_turn
        self.opening = [dict(m) for m in opening] if opening else None
        options: dict[str, Any] = {}
        if protocol == "think_tool_python":
            options = {"allow_both": False}
        if protocol in ("think_python", "think_tool_python"):
            docs = [*entry.functions, *(d for ds in entry.missed_functions.values() for d in ds)]
            options["signatures"] = signatures_from_tools(docs)
        self._parse = get_parser(protocol, **options)
        self._episode: MultiTurnEpisode | None = None
        self.calls_per_turn: list[list[str]] = []
        self.turn_scores: list[float] = []
        self.format_errors = 0
        self._steps_in_turn = 0
        self._done = False

    @classmethod
    def from_row(cls, row: Mapping[str, Any], **options: Any) -> BfclMultiTurnEnv:
        """The registered factory: the row's ``bfcl_entry`` or ``entry_id`` (module docstring)."""
        if not isinstance(row, Mapping):
            raise ValueError(f"a BFCL row must be a mapping, got {type(row).__name__}")
        if row.get("bfcl_entry") is not None:
            raw = row["bfcl_entry"]
            entry = _entry_from_json(raw if isinstance(raw, str) else json.dumps(raw))
        elif row.get("entry_id"):
            entry = entry_by_id(str(row["entry_id"]))
        else:
            raise ValueError(
                f"a BFCL row needs 'bfcl_entry' (an entry or its JSON) or 'entry_id'; got keys "
                f"{sorted(row)}"
            )
        prompt = row.get("prompt")
        opening = prompt if isinstance(prompt, list) and prompt else None
        return cls(entry, opening=opening, **options)

    # -- protocol ------------------------------------------------------------------------------

    def reset(self) -> list[Message]:
        """Fresh API instances; the opening messages."""
        self.close()
        self._episode = MultiTurnEpisode(self.entry)
        self.calls_per_turn, self.turn_scores = [[]], []
        self.format_errors = self._steps_in_turn = 0
        self._done = False
        if self.opening is not None:
            return [dict(m) for m in self.opening]
        first = self._episode.user_messages(0)
        return with_system_prompt(first, self._episode.function_docs(0))

    def step(self, model_text: str) -> Step:
        """Consume one response; never raises on model text."""
        if self._episode is None:
            raise RuntimeError("call reset() before step()")
        if self._done:
            raise RuntimeError(f"episode {self.entry.id} is over; start a new environment")
        self._steps_in_turn += 1
        parsed = self._parse(model_text)
        if not parsed.ok:
            self.format_errors += 1
            problems = "; ".join(parsed.errors[:3])
            note = (
                f"Your response does not follow the required format ({problems}). Reason "
                "first, then either call tools or give the answer."
            )
            return self._continue([{"role": "user", "content": note}])
        if not parsed.calls:
            return self._end_turn()
        results = self._episode.dispatch(parsed.calls)
        calls = [format_python_call(c) for c in parsed.calls]
        self.calls_per_turn[-1] += calls
        return self._continue(
            [tool_message([(c, r.text) for c, r in zip(calls, results, strict=True)])]
        )

    def close(self) -> None:
        if self._episode is not None:
            self._episode.close()
            self._episode = None

    # -- internals -----------------------------------------------------------------------------

    def _continue(self, observation: list[Message]) -> Step:
        if self._steps_in_turn >= self.max_steps_per_turn:
            return self._end_turn()
        return Step(observation=observation, info=self._info())

    def _end_turn(self) -> Step:
        assert self._episode is not None
        self.turn_scores.append(self._episode.end_turn().score)
        self._steps_in_turn = 0
        if self._episode.done:
            self._done = True
            return Step(observation=[], reward=self.reward(), done=True, info=self.final_info())
        self.calls_per_turn.append([])
        return Step(observation=self._episode.user_messages(), info=self._info())

    def reward(self) -> float:
        passed = sum(self.turn_scores) / self._expected_turns
        if self.reward_kind == "progress":
            return float(passed)
        return float(passed == 1.0 and self.format_errors == 0)

    def _info(self) -> dict[str, Any]:
        return {"turn": len(self.turn_scores), "format_errors": self.format_errors}

    def final_info(self) -> dict[str, Any]:
        return {
            "entry_id": self.entry.id,
            "valid": all(s == 1.0 for s in self.turn_scores),
            "turn_scores": list(self.turn_scores),
            "format_errors": self.format_errors,
            "calls_per_turn": [list(t) for t in self.calls_per_turn],
        }


@functools.lru_cache(maxsize=64)
def _entry_from_json(text: str) -> BfclEntry:
    return entry_from_raw(json.loads(text))


@functools.lru_cache(maxsize=1)
def _bfcl_entries() -> dict[str, BfclEntry]:
    return {e.id: e for category in MULTI_TURN_CATEGORIES for e in load_category(category)}


def entry_by_id(entry_id: str) -> BfclEntry:
    """An entry of the installed BFCL multi-turn categories (``multi_turn_base_0``)."""
    entries = _bfcl_entries()
    if entry_id not in entries:
        raise KeyError(f"no BFCL multi-turn entry {entry_id!r} (ids look like multi_turn_base_0)")
    return entries[entry_id]


def env_from_row(row: Mapping[str, Any], **options: Any) -> BfclMultiTurnEnv:
    """``core.bfcl-multi-turn``: ``factory(row, protocol=, reward=, max_steps_per_turn=)``."""
    return BfclMultiTurnEnv.from_row(row, **options)
