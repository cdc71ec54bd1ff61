"""``core.grpo``: GRPO on the toy multi-turn environment, to check a backend end to end.

A tiny model plays the lowercase game (``aworld_rl_core.envs.toy``) for ``env.turns`` turns per
episode and is trained with GRPO through ``trainer.backend`` (default ``trl``) on the episode
return, plus any registered rewards named in ``reward.names``. The report compares the mean
reward of the first and the last logged step.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from aworld_rl_core.backends.base import TrainJob
from aworld_rl_core.config import option
from aworld_rl_core.envs.toy import LowercaseEnv
from aworld_rl_core.models.config import ModelConfig
from aworld_rl_core.refs import Ref
from aworld_rl_core.runs import Run, RunResult
from aworld_rl_core.tracking import TrackingConfig
from aworld_rl_core.trainer_config import RLConfig, TrainerConfig


def _toy_trainer() -> TrainerConfig:
    """Settings under which the tiny random model visibly learns the toy game."""
    return TrainerConfig(
        learning_rate=0.1,  # high for a random model: it must move off a uniform 151k softmax
        max_steps=15,
        batch_size=4,
        micro_batch_size=16,
        seed=0,
        rl=RLConfig(group_size=4, max_turns=2, max_new_tokens=8, max_response_tokens=96),
    )


@dataclass(frozen=True, kw_only=True)
class ToyEnvConfig:
    """The lowercase game."""

    turns: int = option(2, help="model turns per episode", ge=1)


@dataclass(frozen=True, kw_only=True)
class ToyDataConfig:
    """Task rows for training and evaluation (the registered dataset ``core.toy-tasks``)."""

    num_tasks: int = option(64, help="number of task rows", ge=1)
    seed: int = option(0, help="seed of the topic draw", ge=0)
    eval_tasks: int = option(0, help="held-out task rows evaluated after training (0 = none)", ge=0)


@dataclass(frozen=True, kw_only=True)
class RewardConfig:
    """Rewards besides the environment's episode return (always used)."""

    names: tuple[str, ...] = option(
        (), help="registered reward functions to add, e.g. core.toy-lowercase"
    )
    weights: tuple[float, ...] = option(
        (), help="one weight per name (the episode return weighs 1.0); empty = all 1.0"
    )


@dataclass(frozen=True, kw_only=True)
class GrpoRecipeConfig:
    """GRPO on the toy multi-turn environment (checks a training backend end to end)."""

    model: ModelConfig = option(factory=ModelConfig, help="policy model")
    trainer: TrainerConfig = option(factory=_toy_trainer, help="training")
    env: ToyEnvConfig = option(factory=ToyEnvConfig, help="environment")
    data: ToyDataConfig = option(factory=ToyDataConfig, help="task rows")
    reward: RewardConfig = option(factory=RewardConfig, help="extra rewards")
    tracking: TrackingConfig = option(factory=TrackingConfig, help="experiment trackers")


def build_job(cfg: GrpoRecipeConfig, run: Run) -> TrainJob:
    """The backend job: toy task rows, one LowercaseEnv per episode, the named rewards (all by
    registered name)."""
    from aworld_rl_core.registry import get_dataset, get_reward

    tasks = get_dataset("core.toy-tasks")
    for name in cfg.reward.names:
        get_reward(name)  # an unknown name fails now, with the known ones listed
    if cfg.reward.weights and len(cfg.reward.weights) != len(cfg.reward.names):
        raise ValueError(
            f"reward.weights has {len(cfg.reward.weights)} values for "
            f"{len(cfg.reward.names)} reward.names: give one per name or none"
        )
    turns = cfg.env.turns
    LowercaseEnv(turns=turns)  # fail now, not inside the first rollout, on a bad env.turns
    eval_rows: list[dict[str, Any]] = []
    if cfg.data.eval_tasks > 0:
        eval_rows = list(tasks(num_tasks=cfg.data.eval_tasks, seed=cfg.data.seed + 1))
    return TrainJob(
        model=cfg.model,
        trainer=cfg.trainer,
        run=run,
        train_rows=list(tasks(num_tasks=cfg.data.num_tasks, seed=cfg.data.seed)),
        eval_rows=eval_rows,
        env=Ref.named("core.toy-lowercase", {"turns": turns}),
        rewards=[Ref(name) for name in cfg.reward.names],
        reward_weights=list(cfg.reward.weights) if cfg.reward.weights else None,
    )


def reward_curve(run: Run) -> list[tuple[int, float]]:
    """(step, reward_mean) pairs logged by the backend, in order."""
    path = run.dir / "metrics.jsonl"
    if not path.is_file():
        return []
    curve = []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if "reward_mean" in record and "step" in record:
            curve.append((int(record["step"]), float(record["reward_mean"])))
    return curve


def run(cfg: GrpoRecipeConfig, run: Run) -> RunResult:
    """Train with ``cfg.trainer.backend`` and report the reward curve."""
    from aworld_rl_core.registry import get_trainer

    backend = get_trainer(cfg.trainer.backend)()
    result = backend.train(build_job(cfg, run))
    curve = reward_curve(run)
    metrics = dict(result.metrics)
    if curve:
        metrics["reward_first"], metrics["reward_last"] = curve[0][1], curve[-1][1]
        rows = "\n".join(f"| {step} | {reward:.3f} |" for step, reward in curve)
        run.add_section(
            "Reward",
            "Mean episode reward per logged step (random model ~0.65, perfect play 1.0).\n\n"
            f"| step | reward_mean |\n|---|---|\n{rows}\n",
        )
    return RunResult(metrics=metrics, outputs=result.outputs, checkpoints=result.checkpoints)
