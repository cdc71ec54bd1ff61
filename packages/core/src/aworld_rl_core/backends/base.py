"""The contract between a recipe and a training backend."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from aworld_rl_core.backends.config import ModelConfig, TrainerConfig
    from aworld_rl_core.environment import Environment
    from aworld_rl_core.runs import Run, RunResult

RewardFn = Callable[..., list[float]]
"""TRL's shape: ``fn(completions, **columns) -> list[float]``."""

LossFn = Callable[..., Any]
"""A token loss: ``fn(logits, labels, segments) -> scalar tensor``; ``segments`` maps a segment
name (``"think"``, ``"call"``...) to a bool mask aligned with ``labels``."""


@dataclass(frozen=True, kw_only=True)
class TrainJob:
    """Everything a recipe hands a backend.

    Rows are plain dicts: SFT rows carry ``messages`` (OpenAI chat, with ``tool_calls`` and
    ``tool`` messages) and ``tools``; RL rows carry ``prompt`` (opening messages) plus any
    columns the rewards or the environment need.
    """

    model: ModelConfig
    trainer: TrainerConfig
    run: Run
    train_rows: Sequence[Mapping[str, Any]]
    eval_rows: Sequence[Mapping[str, Any]] = ()
    env_factory: Callable[[Mapping[str, Any]], Environment] | None = None
    rewards: Sequence[RewardFn] = ()
    reward_weights: Sequence[float] | None = None
    loss: LossFn | None = None


class Backend(Protocol):
    """A training backend. ``train`` returns checkpoints and final metrics."""

    name: str

    def train(self, job: TrainJob) -> RunResult: ...
