"""Synthesized trajectories, their BFCL-shaped entries and the replay gate.

A :class:`Trajectory` is N rounds in one continuing environment: each round keeps its target,
the executed trace (the ground truth), the advanced tool, the hard query and the reasoning
agent's kept attempt (its real tool responses). :meth:`Trajectory.bfcl_entry` writes it the way
BFCL writes a multi-turn test entry (``id``, ``question`` as per-turn message lists,
``initial_config``, ``involved_classes``, ``function`` docs, per-turn ``ground_truth`` call
strings) plus the results the ground truth returned, so any BFCL multi-turn executor can replay
and judge it. :func:`replay` is the gate: a fresh core episode must replay the ground truth to
exactly those results, and core's multi-turn judge must pass the ground truth against itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aworld_rl_funreason_mt.round_env import system_prompt
from aworld_rl_funreason_mt.sampler import Trace
from aworld_rl_funreason_mt.tooling import AdvancedTool

ENTRY_PREFIX = "funreason_mt_"


@dataclass
class Round:
    """One synthesized turn (phases I-III)."""

    trace: Trace
    tool: AdvancedTool
    query: str
    messages: list[dict[str, Any]]
    attempts: int = 1
    hints: list[str] = field(default_factory=list)
    noise: str = ""
    error_injected: bool = False
    flags: list[dict[str, Any]] = field(default_factory=list)
    """Contamination flags (kept only with ``guard.action=flag``)."""

    @property
    def target(self) -> str:
        return self.trace.target

    def to_dict(self) -> dict[str, Any]:
        return {
            "trace": self.trace.to_dict(),
            "tool": self.tool.to_dict(),
            "query": self.query,
            "messages": self.messages,
            "attempts": self.attempts,
            "hints": list(self.hints),
            "noise": self.noise,
            "error_injected": self.error_injected,
            "flags": list(self.flags),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Round:
        return cls(
            Trace.from_dict(data["trace"]),
            AdvancedTool.from_dict(data["tool"]),
            data["query"],
            list(data["messages"]),
            int(data.get("attempts", 1)),
            list(data.get("hints", [])),
            data.get("noise", ""),
            bool(data.get("error_injected", False)),
            list(data.get("flags", [])),
        )


@dataclass
class Trajectory:
    """N rounds in one environment (see the module docstring)."""

    id: str
    classes: list[str]
    initial_config: dict[str, Any]
    function_docs: list[dict[str, Any]]
    rounds: list[Round] = field(default_factory=list)
    seed: str = ""

    @property
    def entry_id(self) -> str:
        return f"{ENTRY_PREFIX}{self.id}"

    @property
    def error_tool_response(self) -> bool:
        """The dataset card's flag: some tool response was a constructed error."""
        return any(r.error_injected for r in self.rounds)

    def system_prompt(self) -> str:
        return system_prompt(self.function_docs)

    def messages(self) -> list[dict[str, Any]]:
        """The whole conversation: the system prompt, then every round's messages."""
        out: list[dict[str, Any]] = [{"role": "system", "content": self.system_prompt()}]
        for round_ in self.rounds:
            out += [dict(m) for m in round_.messages]
        return out

    def ground_truth(self) -> list[list[str]]:
        return [r.trace.call_strings for r in self.rounds]

    def ground_truth_results(self) -> list[list[str]]:
        return [[c.result for c in r.trace.calls] for r in self.rounds]

    def bfcl_entry(self) -> dict[str, Any]:
        """The BFCL-shaped multi-turn entry (with the ground truth and its results inline)."""
        return {
            "id": self.entry_id,
            "question": [[{"role": "user", "content": r.query}] for r in self.rounds],
            "initial_config": self.initial_config,
            "involved_classes": list(self.classes),
            "function": [dict(d) for d in self.function_docs],
            "ground_truth": self.ground_truth(),
            "ground_truth_results": self.ground_truth_results(),
            "path": sorted({t for r in self.rounds for t in r.trace.tools}),
            "excluded_function": [],
            "error_tool_response": self.error_tool_response,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "classes": list(self.classes),
            "initial_config": self.initial_config,
            "function_docs": self.function_docs,
            "rounds": [r.to_dict() for r in self.rounds],
            "seed": self.seed,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Trajectory:
        return cls(
            str(data["id"]),
            list(data["classes"]),
            dict(data["initial_config"]),
            list(data["function_docs"]),
            [Round.from_dict(r) for r in data.get("rounds", [])],
            str(data.get("seed", "")),
        )


@dataclass(frozen=True)
class Replay:
    """The gate's verdict."""

    ok: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.ok


def replay(entry: Mapping[str, Any]) -> Replay:
    """Replay a BFCL-shaped entry's ground truth in a fresh core episode (module docstring)."""
    from aworld_rl_core.tooluse.bfcl import MultiTurnEpisode, entry_from_raw, judge_multi_turn

    recorded: Sequence[Sequence[str]] | None = entry.get("ground_truth_results")
    bfcl = entry_from_raw(entry)
    truth = bfcl.ground_truth or []
    if len(truth) != len(bfcl.turns):
        return Replay(False, f"{len(truth)} ground-truth turns for {len(bfcl.turns)} questions")
    with MultiTurnEpisode(bfcl) as episode:
        for turn, calls in enumerate(truth):
            results = episode.execute(list(calls))
            if recorded is not None:
                for call, got, want in zip(calls, results, recorded[turn], strict=False):
                    if got != want:
                        return Replay(
                            False, f"turn {turn}: {call} gave {got[:80]!r}, recorded {want[:80]!r}"
                        )
                if len(results) != len(recorded[turn]):
                    return Replay(
                        False,
                        f"turn {turn}: {len(results)} results, recorded {len(recorded[turn])}",
                    )
            result = episode.end_turn()
            if not result.passed:
                return Replay(False, f"turn {turn}: {result.reason}")
    verdict = judge_multi_turn(bfcl, truth)
    if not verdict.valid:
        return Replay(False, f"core's judge: {verdict.error_type}: {verdict.reason}")
    return Replay(True)
