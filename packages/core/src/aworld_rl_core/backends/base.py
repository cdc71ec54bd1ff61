"""The contract between a recipe and a training backend."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from aworld_rl_core.backends.plan import LaunchPlan
    from aworld_rl_core.backends.validation import InRunValidation
    from aworld_rl_core.environment import Environment
    from aworld_rl_core.losses import Loss
    from aworld_rl_core.models.config import ModelConfig
    from aworld_rl_core.refs import Ref
    from aworld_rl_core.runs import Run, RunResult
    from aworld_rl_core.trainer_config import TrainerConfig

RewardFn = Callable[..., list[float]]
"""TRL's shape: ``fn(completions, **columns) -> list[float]``."""

EnvFactory = Callable[..., "Environment"]
"""The one environment factory shape: ``factory(row, **options) -> Environment``."""

LossFn = Callable[..., Any]
"""A token loss: ``fn(logits, labels, segments) -> scalar tensor``; ``segments`` maps a segment
name (``"think"``, ``"call"``...) to a bool mask aligned with ``labels``."""


@dataclass(frozen=True, kw_only=True)
class TrainJob:
    """Everything a recipe hands a backend.

    Rows are plain dicts: SFT rows carry ``messages`` (OpenAI chat, with ``tool_calls`` and
    ``tool`` messages) and ``tools``; RL rows carry ``prompt`` (opening messages) plus any
    columns the rewards or the environment need.

    ``env`` and ``rewards`` are registered names with options (``Ref.named("core.toy-lowercase",
    {"turns": 2})``), import paths or module-level callables: the verl backend rebuilds them in
    its workers, so lambdas and closures only work on the in-process backends. ``loss`` (SFT
    backends) is a registered loss name, a ``Ref``, a ``losses.Loss`` or a token-loss callable;
    when None, ``trainer.loss`` names one (``losses.job_loss`` resolves it). hf-sft also takes
    ``model_factory(model_cfg) -> (model, processor or tokenizer)`` and ``model_setup(model) ->
    {parameter name: gradient mask}`` (import paths, Refs or callables).

    ``validation`` (``backends.validation.InRunValidation``): the run validates its policy on
    ``eval_rows`` every few steps and its stop rule may end it (trl and verl).
    """

    model: ModelConfig
    trainer: TrainerConfig
    run: Run
    train_rows: Sequence[Mapping[str, Any]]
    eval_rows: Sequence[Mapping[str, Any]] = ()
    env: Ref | str | EnvFactory | None = None
    rewards: Sequence[Ref | str | RewardFn] = ()
    reward_weights: Sequence[float] | None = None
    loss: Ref | str | Loss | LossFn | None = None
    model_factory: Ref | str | Callable[..., tuple[Any, Any]] | None = None
    model_setup: Ref | str | Callable[..., Mapping[str, Any] | None] | None = None
    validation: InRunValidation | None = None

    def env_factory(self) -> EnvFactory | None:
        """``factory(row) -> Environment`` for this job's ``env`` (None without one)."""
        from aworld_rl_core.refs import callable_of

        return None if self.env is None else callable_of(self.env, "environments")

    def reward_fns(self) -> list[RewardFn]:
        """The job's reward functions, resolved."""
        from aworld_rl_core.refs import callable_of

        return [callable_of(r, "rewards") for r in self.rewards]


class Backend(Protocol):
    """A training backend. ``train`` returns checkpoints and final metrics; ``plan`` says what
    ``train`` would start (``backends.plan.LaunchPlan``) and starts nothing. Inside
    ``backends.plan.planning()`` (``aworld-run ... --dry-run``) ``train`` returns
    ``plan.planned_result(self.plan(job), job)`` instead of training."""

    name: str

    def train(self, job: TrainJob) -> RunResult: ...

    def plan(self, job: TrainJob) -> LaunchPlan: ...
