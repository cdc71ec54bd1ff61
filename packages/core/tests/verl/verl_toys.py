"""Toy environments and rewards for the verl backend tests (no verl import): core's counter
game (``envs.toy.CounterEnv``) counting closed episodes, a service-backed environment."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aworld_rl_core import hookimpl
from aworld_rl_core.environment import Step
from aworld_rl_core.envs import toy


class CounterEnv(toy.CounterEnv):
    """Core's counter game, counting closed episodes (checked by the tests)."""

    closed_count = 0

    def close(self) -> None:
        CounterEnv.closed_count += 1


class ServiceEnv:
    """Three turns; every model text goes to a shared service, one request per ``step_many``."""

    requests: list[int] = []  # the size of each service request (checked by the tests)

    def __init__(self, row: Mapping[str, Any] | None = None) -> None:
        self.turn = 0

    def reset(self) -> list[dict[str, Any]]:
        return [{"role": "user", "content": "Say anything, three times."}]

    @classmethod
    def step_many(cls, envs: list[ServiceEnv], texts: list[str]) -> list[Step]:
        cls.requests.append(len(texts))
        return [env._after() for env in envs]

    def step(self, model_text: str) -> Step:
        raise AssertionError("the agent loop must step these environments together")

    def _after(self) -> Step:
        self.turn += 1
        if self.turn == 3:
            return Step(reward=1.0, done=True)
        return Step([{"role": "user", "content": "again"}])

    def close(self) -> None:
        pass


def counter_env(row: Mapping[str, Any]) -> CounterEnv:
    """A ``TrainJob.env`` given as a module-level function (an import path): one per row."""
    return CounterEnv(row)


def exact_answer(completions: list[Any], ground_truth: list[str], **_: Any) -> list[float]:
    """1.0 when the (last) assistant text equals the ground truth after stripping."""
    out = []
    for completion, truth in zip(completions, ground_truth, strict=True):
        text = completion if isinstance(completion, str) else completion[-1]["content"]
        out.append(float(text.strip() == str(truth).strip()))
    return out


def brevity(completions: list[Any], limit: list[int] | None = None, **_: Any) -> list[float]:
    """1.0 minus 0.1 per word over ``limit`` (default 3), floored at 0."""
    out = []
    for i, completion in enumerate(completions):
        text = completion if isinstance(completion, str) else completion[-1]["content"]
        cap = limit[i] if limit else 3
        out.append(max(0.0, 1.0 - 0.1 * max(0, len(text.split()) - cap)))
    return out


def episode_shape(completions: list[Any], env_return: list[float], **_: Any) -> list[float]:
    """``env_return + 10 * number of episode messages``: shows what a reward was given."""
    return [r + 10.0 * len(c) for c, r in zip(completions, env_return, strict=True)]


class ToyPlugin:
    """Registers the toys under ``toy.*`` for registry lookups by name."""

    @hookimpl
    def register_environments(self, register):
        register("toy.counter", CounterEnv, help="count to a target")

    @hookimpl
    def register_rewards(self, register):
        register("toy.exact", exact_answer, help="exact answer")
        register("toy.brevity", brevity, help="short answers")
