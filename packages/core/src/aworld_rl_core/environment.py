"""The environment protocol every multi-turn task implements.

One instance per episode, no module-level state. Model text is never trusted: malformed text
gives an error observation and a format penalty, never an exception out of ``step``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

Message = dict[str, Any]


@dataclass(frozen=True)
class Step:
    """What the environment answers to one model turn.

    ``observation`` holds the chat messages to append before the model speaks again (tool
    results, the next user turn, a corrective hint); it is empty when ``done``.
    """

    observation: list[Message]
    reward: float = 0.0
    done: bool = False
    info: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Environment(Protocol):
    """``reset`` opens the episode with chat messages; ``step`` consumes one model completion."""

    def reset(self, task: Mapping[str, Any] | None = None) -> list[Message]: ...

    def step(self, model_text: str) -> Step: ...

    def close(self) -> None: ...
