"""The episode spec each verl parquet row carries, so verl's Ray workers can rebuild the episode.

verl runs rollouts and rewards in other processes (often other nodes), so a ``TrainJob``'s
environment and rewards travel as references (``aworld_rl_core.refs.Ref``: a registry name such
as ``envtuning.bfcl`` or an import path, plus JSON options). Each row's *episode spec* (a JSON
string in ``extra_info["aworld"]``) holds the environment reference, the reward references and
weights, the task row and the per-turn token cap.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aworld_rl_core.errors import ConfigError
from aworld_rl_core.refs import Ref, to_jsonable

SPEC_KEY = "aworld"
"""The ``extra_info`` key holding the episode spec (a JSON string)."""


@dataclass(frozen=True)
class EpisodeSpec:
    """What one row needs in a verl worker: environment, rewards, the task row, limits."""

    task: dict[str, Any]
    env: Ref | None = None
    rewards: tuple[Ref, ...] = ()
    weights: tuple[float, ...] = ()
    max_new_tokens: int | None = None
    step_window_s: float = 0.01

    def __post_init__(self) -> None:
        if self.weights and len(self.weights) != len(self.rewards):
            raise ConfigError(
                f"{len(self.weights)} reward weights for {len(self.rewards)} rewards: give one "
                "weight per reward (or none for equal weights of 1.0)"
            )

    def reward_weights(self) -> tuple[float, ...]:
        return self.weights or (1.0,) * len(self.rewards)

    def dumps(self) -> str:
        data = {
            "task": to_jsonable(self.task, "row"),
            "env": self.env.to_json() if self.env else None,
            "rewards": [r.to_json() for r in self.rewards],
            "weights": [float(w) for w in self.weights],
            "max_new_tokens": self.max_new_tokens,
            "step_window_s": self.step_window_s,
        }
        return json.dumps(data, ensure_ascii=False, sort_keys=True)

    @classmethod
    def loads(cls, text: str) -> EpisodeSpec:
        data = json.loads(text)
        env = data.get("env")
        return cls(
            task=dict(data.get("task") or {}),
            env=Ref.from_json(env) if env else None,
            rewards=tuple(Ref.from_json(r) for r in data.get("rewards") or ()),
            weights=tuple(float(w) for w in data.get("weights") or ()),
            max_new_tokens=data.get("max_new_tokens"),
            step_window_s=float(data.get("step_window_s", 0.01)),
        )

    @classmethod
    def from_extra_info(cls, extra_info: Mapping[str, Any] | None) -> EpisodeSpec | None:
        """The spec a row carries, or None for rows written by someone else."""
        text = (extra_info or {}).get(SPEC_KEY)
        return cls.loads(text) if text else None

    def build_env(self) -> Any:
        """A fresh environment for this episode: ``factory(row, **options)``."""
        if self.env is None:
            raise ConfigError("this row has no environment: set TrainJob.env")
        return self.env.load("environments")(self.task)


def reward_refs(rewards: Sequence[Any]) -> tuple[Ref, ...]:
    """References for a job's reward callables (or names / paths)."""
    return tuple(Ref.of(fn, f"reward {getattr(fn, '__name__', fn)!r}") for fn in rewards)
