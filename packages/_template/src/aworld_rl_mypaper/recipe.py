"""The ``mypaper.grpo`` recipe: GRPO on the package's toy game, through the registry.

The job names the environment and the reward by registered name (``Ref``), so the same recipe
runs on ``trainer.backend=trl`` (CPU) and ``verl`` (GPUs). The report shows the reward curve.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from aworld_rl_core.backends.base import TrainJob
from aworld_rl_core.config import option
from aworld_rl_core.models.config import ModelConfig
from aworld_rl_core.refs import Ref
from aworld_rl_core.registry import get_dataset, get_trainer
from aworld_rl_core.runs import Run, RunResult
from aworld_rl_core.trainer_config import TrainerConfig


@dataclass(frozen=True, kw_only=True)
class DataConfig:
    """Task rows (the registered dataset ``mypaper.topics``)."""

    num_rows: int = option(32, help="training rows", ge=1)
    seed: int = option(0, help="seed of the draw", ge=0)


@dataclass(frozen=True, kw_only=True)
class GrpoConfig:
    """GRPO on the toy game; every section has the paper's defaults in a real package."""

    model: ModelConfig = option(factory=ModelConfig, help="policy model")
    trainer: TrainerConfig = option(factory=TrainerConfig, help="training (trainer.backend)")
    data: DataConfig = option(factory=DataConfig, help="task rows")


def run(cfg: GrpoConfig, run: Run) -> RunResult:
    rows = list(get_dataset("mypaper.topics")(num_rows=cfg.data.num_rows, seed=cfg.data.seed))
    job = TrainJob(
        model=cfg.model,
        trainer=cfg.trainer,
        run=run,
        train_rows=rows,
        env=Ref.named("mypaper.describe"),
        rewards=[Ref("mypaper.lowercase")],
    )
    result = get_trainer(cfg.trainer.backend)().train(job)
    curve = [
        json.loads(line)["reward_mean"]
        for line in (run.dir / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
        if "reward_mean" in json.loads(line)
    ]
    metrics = dict(result.metrics)
    if curve:
        k = max(1, len(curve) // 4)  # first and last quarter of the logged steps
        metrics["reward_first"] = sum(curve[:k]) / k
        metrics["reward_last"] = sum(curve[-k:]) / k
        rows_md = "\n".join(f"| {i + 1} | {r:.3f} |" for i, r in enumerate(curve))
        run.add_section("Reward", f"| step | reward_mean |\n|---|---|\n{rows_md}\n")
    return RunResult(metrics=metrics, outputs=result.outputs, checkpoints=result.checkpoints)
