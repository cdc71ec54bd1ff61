"""Scoring a model on BFCL multi-turn entries (BFCL's own, or held-out synthesized ones).

Everything here is core's: episodes are played by core's engine (``engine.play``) in core's
environments and judged by core's ``judge_multi_turn`` (bfcl-eval's verdicts); BFCL's result
files come from core's ``results`` module. Two protocols:

- ``bfcl`` (default): BFCL's prompting protocol as the leaderboard plays it (core's ``BfclEnv``:
  BFCL's system prompt, python call lists, 20 replies per turn before a force quit), judged as
  bfcl-eval's eval runner judges (no irrelevance check);
- ``funreason_mt``: the format the data teaches (core's ``BfclMultiTurnEnv`` with the package's
  system prompt: ``<think>``, ``<tool_call>[...]``, ``<answer>``), valid when every turn passes.

A held-out split of synthesized data (:func:`split_entries`) is a stable hash split of entry
ids, so synthesis, RL validation and evaluation agree on which entries are held out.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from aworld_rl_core.llm.wrappers import MeteredClient, ScriptClient

Protocol = Literal["bfcl", "funreason_mt"]
PROTOCOLS: dict[str, str] = {
    "bfcl": "BFCL's prompting protocol (the leaderboard's: its prompts, call lists, greedy)",
    "funreason_mt": "the FunReason-MT format the data teaches (<think>, <tool_call>, <answer>)",
}


def split_entries(
    entries: Sequence[Mapping[str, Any]], held_out: float, *, seed: int = 0
) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    """``(train, held_out)``: an entry is held out when the hash of ``seed`` and its id falls
    below ``held_out`` (stable across runs and orders; at least one held out when there are two
    or more entries and ``held_out > 0``)."""
    if not 0.0 <= held_out < 1.0:
        raise ValueError(f"held_out must be in [0, 1), got {held_out}")

    def point(entry: Mapping[str, Any]) -> float:
        digest = hashlib.sha256(f"{seed}:{entry['id']}".encode()).hexdigest()
        return int(digest[:12], 16) / 16**12

    held = [e for e in entries if point(e) < held_out]
    if held_out > 0 and not held and len(entries) >= 2:
        held = [min(entries, key=point)]
    keep = {id(e) for e in held}
    return [e for e in entries if id(e) not in keep], held


@dataclass
class Outcome:
    """One evaluated entry; ``usage`` is (input tokens, output tokens, seconds) per reply."""

    entry_id: str
    category: str
    valid: bool
    progress: float
    error_type: str
    info: dict[str, Any] = field(repr=False)
    usage: list[tuple[int, int, float]] = field(repr=False, default_factory=list)

    @property
    def prereq(self) -> bool:
        """A memory category's prerequisite conversation: played, written, never judged."""
        return self.category.endswith("_prereq")


class GroundTruthAgent:
    """Writes each entry's ground truth in the protocol (a pipeline check: every entry scores
    100%); ``for_entry`` gives the per-episode script."""

    def __init__(self, protocol: Protocol = "bfcl") -> None:
        self.protocol = protocol
        self._agentic: dict[str, list[list[str]]] = {}

    def prepare(self, entries: Sequence[Any]) -> None:
        """The agentic entries' reference behaviour (core's ``reference_replies``: memory
        conversations store the answers' sources, questions recall and answer)."""
        from aworld_rl_core.tooluse.bfcl.agentic import reference_replies

        agentic = [e for e in entries if e.is_agentic]
        if agentic:
            self._agentic.update(reference_replies(agentic))

    def for_entry(self, entry: Any) -> ScriptClient:
        from aworld_rl_core.tooluse.bfcl import ground_truth_replies

        if entry.is_agentic:
            return ScriptClient([text for turn in self._agentic[entry.id] for text in turn])
        turns = ground_truth_replies(entry)
        if self.protocol == "funreason_mt":
            turns = [
                [
                    f"<think>Step {k + 1}.</think><tool_call>{text}</tool_call>"
                    if k < len(turn) - 1
                    else f"<think>Done.</think><answer>{text}</answer>"
                    for k, text in enumerate(turn)
                ]
                for turn in turns
            ]
        return ScriptClient([text for turn in turns for text in turn])


class NoToolsAgent:
    """A control that never calls a tool: every reply is BFCL's "I do not know" answer."""

    REPLY = "{'answer': 'I do not know', 'context': 'I do not know'}"

    def for_entry(self, entry: Any) -> ScriptClient:
        turns = len(entry.turns)
        return ScriptClient([self.REPLY] * turns)


def make_env(entry: Any, protocol: Protocol, *, max_steps_per_turn: int = 20) -> Any:
    """Core's environment of ``protocol`` for one entry."""
    if protocol == "bfcl":
        from aworld_rl_core.tooluse.bfcl import BfclEnv

        return BfclEnv(entry, max_steps_per_turn=max_steps_per_turn)
    if protocol == "funreason_mt":
        from aworld_rl_core.tooluse.bfcl.environment import BfclMultiTurnEnv
        from aworld_rl_funreason_mt.round_env import system_prompt

        opening = [
            {"role": "system", "content": system_prompt(entry.functions)},
            *[dict(m) for m in entry.turns[0]],
        ]
        return BfclMultiTurnEnv(entry, max_steps_per_turn=max_steps_per_turn, opening=opening)
    raise ValueError(f"unknown protocol {protocol!r}; use one of {', '.join(PROTOCOLS)}")


def _verdict(entry: Any, info: Mapping[str, Any], protocol: Protocol) -> tuple[bool, str, float]:
    from aworld_rl_core.tooluse.bfcl import judge_multi_turn
    from aworld_rl_core.tooluse.bfcl.agentic import judge_agentic

    if entry.is_agentic:
        if entry.category.endswith("_prereq"):
            return False, "", 0.0
        agentic = judge_agentic(entry, info.get("result", []))
        return agentic.valid, agentic.error_type, float(agentic.valid)

    verdict = judge_multi_turn(
        entry, info["calls_per_turn"], irrelevance_check=protocol == "funreason_mt"
    )
    turns = len(entry.ground_truth or []) or 1
    return verdict.valid, verdict.error_type, sum(verdict.turn_scores) / turns


async def evaluate_async(
    client: Any,
    entries: Sequence[Any],
    *,
    protocol: Protocol = "bfcl",
    max_steps_per_turn: int = 20,
    concurrency: int = 8,
    on_done: Any = None,
) -> list[Outcome]:
    """Play and judge every entry, ``concurrency`` episodes at a time; memory entries in
    BFCL's order (each prerequisite conversation after the one whose memory it loads, the
    questions last)."""
    from aworld_rl_core.engine import play
    from aworld_rl_core.llm import LLMError
    from aworld_rl_core.tooluse.bfcl.agentic import phases

    if hasattr(client, "prepare"):
        client.prepare(entries)

    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(entry: Any) -> Outcome:
        agent = MeteredClient(client.for_entry(entry) if hasattr(client, "for_entry") else client)
        env = make_env(entry, protocol, max_steps_per_turn=max_steps_per_turn)
        try:
            async with gate:
                episode = await play(agent, env)
            info = dict(episode.info)
            if "calls_per_turn" not in info:  # an episode cut short: what the env recorded
                info = dict(env.final_info())
            valid, error_type, progress = _verdict(entry, info, protocol)
        except LLMError as exc:  # the entry fails, as a model that gave no answer does in BFCL
            info, valid, progress = dict(env.final_info()), False, 0.0
            error_type = f"llm_error: {type(exc).__name__}: {exc}"[:300]
        outcome = Outcome(entry.id, entry.category, valid, progress, error_type, info, agent.usage)
        if on_done is not None:
            on_done(outcome)
        return outcome

    memory = [e for e in entries if e.category.startswith("memory_")]
    others = [e for e in entries if not e.category.startswith("memory_")]
    done = list(await asyncio.gather(*(one(e) for e in others)))
    for wave in phases(memory):
        done += await asyncio.gather(*(one(e) for e in wave))
    order = {e.id: k for k, e in enumerate(entries)}
    return sorted(done, key=lambda o: order[o.entry_id])


def summarize(outcomes: Sequence[Outcome], *, prefix: str = "") -> dict[str, float]:
    """``accuracy/<group>`` and ``progress/<group>`` per category plus ``average``."""
    by: dict[str, list[Outcome]] = {}
    for o in outcomes:
        by.setdefault(o.category, []).append(o)
    out: dict[str, float] = {}
    for category, items in sorted(by.items()):
        out[f"{prefix}accuracy/{category}"] = sum(o.valid for o in items) / len(items)
        out[f"{prefix}progress/{category}"] = sum(o.progress for o in items) / len(items)
    if by:
        out[f"{prefix}accuracy/average"] = sum(out[f"{prefix}accuracy/{c}"] for c in by) / len(by)
    return out


def result_rows(outcomes: Sequence[Outcome]) -> list[dict[str, Any]]:
    """BFCL result rows (``id``, ``result`` per turn per reply, BFCL's per-reply metadata);
    only the ``bfcl`` protocol's episodes record ``result``."""
    rows = []
    for o in outcomes:
        result = o.info.get("result", [])
        usage = iter(o.usage)
        shaped = [[next(usage, (0, 0, 0.0)) for _ in turn] for turn in result]
        row: dict[str, Any] = {"id": o.entry_id, "result": result}
        for index, key in enumerate(("input_token_count", "output_token_count", "latency")):
            row[key] = [[reply[index] for reply in turn] for turn in shaped]
        rows.append(row)
    return rows
