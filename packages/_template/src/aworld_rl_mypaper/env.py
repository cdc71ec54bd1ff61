"""The package's environment: one episode per dataset row (replace with your paper's).

The toy game: the user names a topic and asks for a reply in lowercase words; one model turn.
The environment frames the episode; the reward (``reward.py``) scores it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aworld_rl_core.environment import Message, Step

INSTRUCTION = "Reply with lowercase english words only: no capitals, digits or punctuation."


class DescribeEnv:
    """Built as ``DescribeEnv(row, **options)``, the registered factory shape."""

    def __init__(self, row: Mapping[str, Any], *, instruction: str = INSTRUCTION) -> None:
        self.topic = str(row.get("topic") or "rain")
        self.instruction = instruction
        self.done = False

    def reset(self) -> list[Message]:
        self.done = False
        return [
            {"role": "system", "content": self.instruction},
            {"role": "user", "content": f"Say something about {self.topic}."},
        ]

    def step(self, model_text: str) -> Step:
        """One reply ends the episode (model text is never trusted: any text is a reply)."""
        if self.done:
            return Step(observation=[], done=True, info={"error": "episode already finished"})
        self.done = True
        return Step(observation=[], reward=0.0, done=True, info={"reply_chars": len(model_text)})

    def close(self) -> None:
        pass
