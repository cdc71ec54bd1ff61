"""Synthesized trajectories, their BFCL-shaped entries and the replay gate.

A :class:`Trajectory` is N rounds in one continuing environment: each round keeps its target,
the executed trace (the ground truth), the advanced tool, the hard query and the reasoning
agent's kept attempt (its real tool responses). :meth:`Trajectory.bfcl_entry` writes it the way
BFCL writes a multi-turn test entry (``id``, ``question`` as per-turn message lists,
``initial_config``, ``involved_classes``, ``function`` docs, per-turn ``ground_truth`` call
strings) plus the results the ground truth returned, so any BFCL multi-turn executor can replay
and judge it. :func:`replay` is the gate: a fresh core episode must replay the ground truth to
exactly those results, and core's multi-turn judge must pass the ground truth against itself.

:func:`check_conversation` is the gate on what is kept: the calls the assistant messages make,
every round in order and replayed in a fresh episode from the trajectory's initial state, must
pass BFCL's state and response checks against the ground truth (core's ``judge_multi_turn``,
which gives bfcl-eval's verdicts). :func:`conversation_session` is the live state those calls
leave, where the next round starts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aworld_rl_funreason_mt.round_env import system_prompt
from aworld_rl_funreason_mt.sampler import Trace
from aworld_rl_funreason_mt.space import Session
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

    def conversation_calls(self) -> list[list[str]]:
        """Per round, the calls its assistant messages make (what a model replaying the
        conversation issues, injected error responses included)."""
        return [round_calls(r.messages, self.function_docs) for r in self.rounds]

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


def round_calls(
    messages: Sequence[Mapping[str, Any]], function_docs: Sequence[Mapping[str, Any]]
) -> list[str]:
    """The calls the assistant messages of one round make, in order, as BFCL call strings (read
    with the same parser as the round and the RL environment; a malformed message makes none)."""
    from aworld_rl_core.tooluse import format_python_call, get_parser, signatures_from_tools

    parse = get_parser(
        "think_tool_python",
        allow_both=False,
        signatures=signatures_from_tools([dict(d) for d in function_docs]),
    )
    calls: list[str] = []
    for message in messages:
        if message.get("role") != "assistant":
            continue
        parsed = parse(str(message.get("content") or ""))
        if parsed.ok:
            calls += [format_python_call(c) for c in parsed.calls]
    return calls


def check_conversation(trajectory: Trajectory) -> Replay:
    """BFCL's verdict on the kept conversation (module docstring): its calls, round by round in
    one fresh episode, against the per-round ground truth."""
    from aworld_rl_core.tooluse.bfcl import entry_from_raw, judge_multi_turn

    if not trajectory.rounds:
        return Replay(True)
    for calls in trajectory.conversation_calls():
        omitted = shared_defaults_left_out(calls, trajectory.classes)
        if omitted:
            return Replay(
                False,
                f"{omitted} leaves out a list argument whose default BFCL's executor shares "
                "between calls: its result depends on the process's history; give the argument",
            )
    bfcl = entry_from_raw(trajectory.bfcl_entry())
    verdict = judge_multi_turn(bfcl, trajectory.conversation_calls())
    if not verdict.valid:
        return Replay(False, f"BFCL's check of the conversation: {verdict.reason}")
    return Replay(True)


def shared_defaults_left_out(calls: Sequence[str], classes: Sequence[str]) -> str:
    """The first call that leaves out a parameter whose default is a mutable list or dict (BFCL's
    ``post_tweet(tags=[], mentions=[])``: bfcl-eval's executor shares that object between every
    call in its process, core's copies it, so only a call that gives it is judged alike), or
    ""."""
    from aworld_rl_core.tooluse import parse_python_calls
    from aworld_rl_core.tooluse.bfcl.apis import api_class
    from aworld_rl_funreason_mt.space import mutable_defaults

    owners = [api_class(c) for c in classes]
    for text in calls:
        try:
            parsed = parse_python_calls(text)
        except ValueError:
            continue
        for call in parsed:
            method = next((getattr(o, call.name) for o in owners if hasattr(o, call.name)), None)
            shared = mutable_defaults(method)
            if set(shared) - set(call.arguments) and not call.positional:
                return text
    return ""


def conversation_session(trajectory: Trajectory, *, entry_id: str | None = None) -> Session:
    """A live session in the state the kept conversation left: its calls executed in order from
    the initial state (failures kept in the history, as BFCL keeps them)."""
    from aworld_rl_core.tooluse import parse_python_calls, signatures_from_tools

    signatures = signatures_from_tools([dict(d) for d in trajectory.function_docs])
    session = Session(
        trajectory.classes, trajectory.initial_config, entry_id=entry_id or trajectory.entry_id
    )
    for calls in trajectory.conversation_calls():
        for text in calls:
            for call in parse_python_calls(text, signatures=signatures):
                session.run(call)
    return session
