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


def verl_loader_steps(cfg: Any, n_rows: int, monkeypatch: Any) -> tuple[int, int, int]:
    """(steps per epoch, total_training_steps, steps run) for the composed verl config ``cfg``
    over ``n_rows`` prompts, by verl's own code: its V1 trainer's ``_init_dataloader``
    (``drop_last=True``) and the condition of its training loop (``fit``)."""
    import inspect

    from verl.trainer.ppo.v1 import trainer_base

    monkeypatch.setattr(
        trainer_base,
        "create_rl_dataset",
        lambda files, data, tok, proc, is_train, max_samples: list(
            range(n_rows if is_train else 2)
        ),
    )
    monkeypatch.setattr(trainer_base, "create_rl_sampler", lambda data, dataset: None)
    bare = type("Bare", (trainer_base.PPOTrainer,), {})
    bare.__abstractmethods__ = frozenset()  # only the loader set-up is called
    obj = object.__new__(bare)
    obj.config, obj.tokenizer, obj.processor = cfg, None, None
    obj.trainer_mode = cfg.trainer.v1.trainer_mode
    obj.parameter_sync_step = 1
    obj._init_dataloader()
    assert obj.steps_per_epoch == len(obj.train_dataloader)  # drop_last: full batches only
    if obj.steps_per_epoch == 0:  # no full batch: the loader yields nothing to train on
        return 0, obj.total_training_steps, 0
    # verl's V1 loop (fit): epoch = (step - 1) // steps_per_epoch, and
    fit = inspect.getsource(trainer_base.PPOTrainer.fit)
    assert (
        "while current_epoch < self.config.trainer.total_epochs and "
        "self.global_steps <= self.total_training_steps" in fit
    )
    assert "current_epoch = (self.global_steps - 1) // self.steps_per_epoch" in fit
    step, epoch, ran = 1, 0, 0
    while epoch < cfg.trainer.total_epochs and step <= obj.total_training_steps:
        ran += 1
        step += 1
        epoch = (step - 1) // obj.steps_per_epoch
    return obj.steps_per_epoch, obj.total_training_steps, ran
