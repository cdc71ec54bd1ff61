"""RAG-R1's SFT samples: a correct search trajectory cut into one sample per model step.

A trajectory is the assistant text of one episode: model steps with the environment's inline
blocks (``<information>`` results, the invalid-action message) between them. Each step that
searches or answers becomes a sample whose target is that step; earlier steps and results are
its history. The four kinds of the paper's figure: the first step (no history) that answers or
searches, and a later step (with history) that answers or searches.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from aworld_rl_rag_r1.actions import parse_action
from aworld_rl_rag_r1.observations import INVALID_ACTION

_INLINE = re.compile(
    r"(\n<information>\n.*?\n</information>\n|" + re.escape(INVALID_ACTION) + ")", re.DOTALL
)
Kind = Literal["answer", "search", "history+answer", "history+search"]


@dataclass(frozen=True)
class StepSample:
    kind: Kind
    history: str
    target: str


def split_steps(text: str) -> list[tuple[str, str]]:
    """``(history, step)`` for every model step of an assistant text."""
    pieces = _INLINE.split(text)
    out, history = [], ""
    for i, piece in enumerate(pieces):
        if i % 2 == 0 and piece.strip():
            out.append((history, piece))
        history += piece
    return out


def step_samples(text: str) -> list[StepSample]:
    """The searching / answering steps of a trajectory as samples (invalid steps skipped)."""
    samples = []
    for history, step in split_steps(text):
        kind = parse_action(step).kind
        if kind == "invalid":
            continue
        full: Kind = f"history+{kind}" if history.strip() else kind  # type: ignore[assignment]
        samples.append(StepSample(full, history, step))
    return samples


def sample_messages(prompt: str, sample: StepSample) -> list[dict[str, str]]:
    """Chat messages of one sample: the instruction (with the history after it) -> the step."""
    user = prompt if not sample.history else f"{prompt}\n{sample.history}"
    return [{"role": "user", "content": user}, {"role": "assistant", "content": sample.target}]
