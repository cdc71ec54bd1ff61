"""A BFCL-shaped multi-turn entry's ground truth as the replies a model writes, step by step.

Per user turn, the turn's ground-truth calls are grouped into replies in order: a call whose
argument values all appear in the user's words so far (this turn's and earlier turns') joins
the current reply; a call that needs a value the user never wrote (it comes from an earlier
call's result: a balance read first, a number written in a file) starts a new reply, written
once those results are shown. Every argument says where its value comes from: ``"user"`` or
``"result"``. A turn without ground truth is one where the right move is to call nothing.

Written for SFT data with per-reply reasoning and for scripted agents; core's BFCL adapter
judges what the replies do (a turn's state and results), not how calls are grouped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from aworld_rl_core.tooluse.calls import (
    Call,
    bind_positional,
    parse_python_calls,
    signatures_from_tools,
)

USER, RESULT = "user", "result"


@dataclass(frozen=True)
class PlannedCall:
    """One ground-truth call and where each argument's value comes from (``user`` /
    ``result``), in the call's argument order."""

    call: Call
    sources: tuple[tuple[str, str], ...]

    @property
    def needs_result(self) -> bool:
        return any(source == RESULT for _, source in self.sources)


@dataclass(frozen=True)
class GroundTruthTurn:
    """One user turn: its request text and the replies with calls (none: call nothing)."""

    request: str
    replies: tuple[tuple[PlannedCall, ...], ...]

    @property
    def abstain(self) -> bool:
        return not self.replies


def value_in_text(value: Any, text: str) -> bool:
    """Whether ``value`` is written in ``text`` as a whole word or number (``5`` is not in
    ``25`` nor in ``5.5``, ``plan.txt`` is in ``plan.txt.``)."""
    if isinstance(value, bool) or value is None:
        return False
    written = str(value)
    if not written:
        return False
    return re.search(rf"(?<![\w.]){re.escape(written)}(?!\w|\.\w)", text) is not None


def ground_truth_steps(entry: Any) -> list[GroundTruthTurn]:
    """The replies of each user turn of ``entry`` (core's ``BfclEntry``, multi-turn, with
    ground truth); positional arguments are bound to their names (BFCL's decoder drops them)."""
    if not entry.is_multi_turn or entry.ground_truth is None:
        raise ValueError(
            f"{entry.id}: ground_truth_steps needs a multi-turn entry with ground truth"
        )
    if len(entry.ground_truth) != len(entry.turns):
        raise ValueError(
            f"{entry.id}: {len(entry.turns)} user turns but {len(entry.ground_truth)} "
            "ground-truth turns"
        )
    docs = [*entry.functions, *(d for ds in entry.missed_functions.values() for d in ds)]
    signatures = signatures_from_tools(docs)
    said = ""
    out = []
    for messages, calls in zip(entry.turns, entry.ground_truth, strict=True):
        request = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "user")
        said = f"{said}\n{request}"
        replies: list[list[PlannedCall]] = []
        for text in calls:
            for call in parse_python_calls(text):
                bound = bind_positional(call, signatures.get(call.name, []))
                sources = tuple(
                    (name, USER if value_in_text(value, said) else RESULT)
                    for name, value in bound.arguments.items()
                )
                planned = PlannedCall(bound, sources)
                if not replies or planned.needs_result:
                    replies.append([])
                replies[-1].append(planned)
        out.append(GroundTruthTurn(request, tuple(tuple(r) for r in replies)))
    return out
