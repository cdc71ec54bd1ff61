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
from dataclasses import dataclass
from typing import Any, Literal

from aworld_rl_core.environment import Message
from aworld_rl_core.tooluse.bfcl.loader import (
    MULTI_TURN_CATEGORIES,
    BfclEntry,
    entry_from_raw,
    load_category,
)
from aworld_rl_core.tooluse.bfcl.turns import BfclTurnEnv, ParserProtocol, TurnPolicy
from aworld_rl_core.tooluse.bfcl.turns import Reward as RewardPart
from aworld_rl_core.tooluse.calls import signatures_from_tools

RewardKind = Literal["binary", "progress"]
BFCL_STEP_LIMIT = 20
"""BFCL's own limit of model steps per user turn."""


class CoreReward(RewardPart):
    """``binary`` (FunRL): 1.0 when every reply followed the format and every turn passed, else
    0.0; ``progress``: the share of turns that passed. Paid at the end."""

    def __init__(self, kind: RewardKind = "binary") -> None:
        if kind not in ("binary", "progress"):
            raise ValueError(f"reward must be 'binary' or 'progress', got {kind!r}")
        self.kind = kind

    def total(self, env: BfclTurnEnv) -> float:
        assert env.entry.ground_truth is not None
        passed = sum(env.state.turn_scores) / len(env.entry.ground_truth)
        if self.kind == "progress":
            return float(passed)
        return float(passed == 1.0 and env.state.format_errors == 0)

    def info(self, env: BfclTurnEnv, **extra: Any) -> dict[str, Any]:
        return {"turn": len(env.state.turn_scores), "format_errors": env.state.format_errors}

    def final_info(self, env: BfclTurnEnv) -> dict[str, Any]:
        state = env.state
        return {
            "entry_id": env.entry.id,
            "valid": all(s == 1.0 for s in state.turn_scores),
            "turn_scores": list(state.turn_scores),
            "format_errors": state.format_errors,
            "calls_per_turn": [
                [c for reply in turn for c in reply] for turn in state.calls_per_turn
            ],
        }


@dataclass(frozen=True)
class OpeningProtocol(ParserProtocol):
    """A registered parser; the row's ``prompt`` as the opening when it has one."""

    opening_messages: tuple[Message, ...] = ()

    def opening(self, env: BfclTurnEnv) -> list[Message]:
        if self.opening_messages:
            return [dict(m) for m in self.opening_messages]
        return super().opening(env)


def parser_options(entry: BfclEntry, protocol: str) -> dict[str, Any]:
    """Core's options of a parser for an entry: python-call protocols check calls against the
    entry's functions (held-out ones included)."""
    options: dict[str, Any] = {}
    if protocol == "think_tool_python":
        options = {"allow_both": False}
    if protocol in ("think_python", "think_tool_python"):
        docs = [*entry.functions, *(d for ds in entry.missed_functions.values() for d in ds)]
        options["signatures"] = signatures_from_tools(docs)
    return options


class BfclMultiTurnEnv(BfclTurnEnv):
    """``core.bfcl-multi-turn`` (module docstring): a registered parser, core's feedback, the
    turn ending at its ``max_steps_per_turn``-th reply, calls executed in every turn, and the
    binary or progress reward at the end."""

    def __init__(
        self,
        entry: BfclEntry,
        *,
        protocol: str = "think_tool_python",
        reward: RewardKind = "binary",
        max_steps_per_turn: int = BFCL_STEP_LIMIT,
        opening: Sequence[Message] | None = None,
    ) -> None:
        if not entry.is_multi_turn or entry.ground_truth is None:
            raise ValueError(f"{entry.id}: a BFCL multi-turn entry with ground truth is needed")
        reward_part = CoreReward(reward)
        policy = TurnPolicy(max_steps_per_turn=max_steps_per_turn)
        parser = OpeningProtocol(
            protocol, parser_options(entry, protocol), tuple(dict(m) for m in opening or ())
        )
        super().__init__(entry, protocol=parser, policy=policy, reward=reward_part)
        self.reward_kind = reward
        self.max_steps_per_turn = max_steps_per_turn

    @classmethod
    def from_row(cls, row: Mapping[str, Any], **options: Any) -> BfclMultiTurnEnv:
        """The registered factory: the row's ``bfcl_entry`` or ``entry_id`` (module docstring)."""
        entry = _row_entry(row)
        prompt = row.get("prompt")
        opening = prompt if isinstance(prompt, list) and prompt else None
        return cls(entry, opening=opening, **options)

    def reward(self) -> float:
        return self.reward_part.total(self)

    def final_info(self) -> dict[str, Any]:
        return self.reward_part.final_info(self)


def _row_entry(row: Mapping[str, Any]) -> BfclEntry:
    """The row's ``bfcl_entry`` or ``entry_id`` (module docstring)."""
    if not isinstance(row, Mapping):
        raise ValueError(f"a BFCL row must be a mapping, got {type(row).__name__}")
    if row.get("bfcl_entry") is not None:
        raw = row["bfcl_entry"]
        return _entry_from_json(raw if isinstance(raw, str) else json.dumps(raw))
    if row.get("entry_id"):
        return entry_by_id(str(row["entry_id"]))
    raise ValueError(
        f"a BFCL row needs 'bfcl_entry' (an entry or its JSON) or 'entry_id'; got keys "
        f"{sorted(row)}"
    )


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


def parser_protocol(
    entry: BfclEntry, parser: str = "think_tool_python", **options: Any
) -> ParserProtocol:
    """``core.parser``: a registered parser with core's options for the entry (and ``options``)."""
    return ParserProtocol(parser, {**parser_options(entry, parser), **options})


def core_reward(entry: BfclEntry, kind: RewardKind = "binary") -> CoreReward:
    """``core.reward``: binary or progress, paid at the end."""
    return CoreReward(kind)


def env_from_parts(
    row: Mapping[str, Any],
    *,
    protocol: Any = "core.parser",
    turns: Any = "core.turns",
    feedback: Any = "core.feedback",
    reward: Any = "core.reward",
) -> BfclTurnEnv:
    """``core.bfcl-turns``: the row's entry (as for ``core.bfcl-multi-turn``) in an environment
    built from registered episode parts, each a name or ``{"name": ..., **options}``."""
    from aworld_rl_core.tooluse.bfcl.turns import build_part

    entry = _row_entry(row)
    return BfclTurnEnv(
        entry,
        protocol=build_part(protocol, entry, "protocol"),
        policy=build_part(turns, entry, "turns"),
        feedback=build_part(feedback, entry, "feedback"),
        reward=build_part(reward, entry, "reward"),
    )


def env_from_row(row: Mapping[str, Any], **options: Any) -> BfclMultiTurnEnv:
    """``core.bfcl-multi-turn``: ``factory(row, protocol=, reward=, max_steps_per_turn=)``."""
    return BfclMultiTurnEnv.from_row(row, **options)
