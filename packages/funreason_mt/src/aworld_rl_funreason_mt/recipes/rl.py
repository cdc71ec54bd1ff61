"""``funreason_mt.rl``: GRPO on the BFCL-shaped entries in core's multi-turn BFCL environment.

Each row is one synthesized entry; an episode plays all its user turns in core's
``core.bfcl-multi-turn`` environment (resolved through the registry), reading the policy's
responses in the FunReason-MT format. The reward is FunRL's binary reward: 1.0 when every
response followed the format and every turn passed BFCL's checks, else 0.0 (``env.reward``).
``trainer.backend=trl`` trains on a CPU or one GPU; the ``paper`` preset launches verl.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from aworld_rl_core.config import option
from aworld_rl_core.models.config import ModelConfig
from aworld_rl_core.runs import Run, RunResult
from aworld_rl_core.tracking import TrackingConfig
from aworld_rl_core.trainer_config import RLConfig, TrainerConfig
from aworld_rl_funreason_mt.data import read_entries
from aworld_rl_funreason_mt.evaluation import split_entries
from aworld_rl_funreason_mt.export import rl_rows
from aworld_rl_funreason_mt.recipes.common import TrajectoryData


@dataclass(frozen=True, kw_only=True)
class RlEnvConfig:
    """The environment every episode runs in."""

    name: str = option("core.bfcl-multi-turn", help="registered environment")
    protocol: str = option("think_tool_python", help="tool-call protocol the policy writes")
    reward: Literal["binary", "progress"] = option(
        "binary", help="binary: format and answer both right (FunRL); progress: share of turns"
    )
    max_steps_per_turn: int = option(
        20, help="policy responses per user turn before it is cut (BFCL: 20)", ge=1
    )


def paper_trainer() -> TrainerConfig:
    """FunReason-MT's RL stage (verl; the paper gives no RL hyperparameters: HardGen's and
    RLFC's GRPO defaults, see the README's fidelity table)."""
    return TrainerConfig(
        backend="verl",
        learning_rate=1e-6,
        batch_size=32,
        micro_batch_size=4,
        epochs=1.0,
        rl=RLConfig(
            group_size=8,
            kl_coef=0.001,
            max_turns=40,
            max_new_tokens=2048,
            max_response_tokens=16384,
        ),
    )


@dataclass(frozen=True, kw_only=True)
class RlRecipeConfig:
    """GRPO on synthesized BFCL-shaped entries."""

    data: TrajectoryData = option(factory=TrajectoryData, help="training entries")
    env: RlEnvConfig = option(factory=RlEnvConfig, help="environment and reward")
    model: ModelConfig = option(
        factory=lambda: ModelConfig(name_or_path="Qwen/Qwen3-4B-Instruct-2507"),
        help="policy (paper: Qwen3-4B-Instruct-2507 after SFT)",
    )
    trainer: TrainerConfig = option(factory=paper_trainer, help="backend and optimisation")
    tracking: TrackingConfig = option(factory=TrackingConfig, help="experiment trackers")


def run(cfg: RlRecipeConfig, run: Run) -> RunResult:
    """Rows from the entries, the registered environment, the chosen backend."""
    from aworld_rl_core.backends.base import TrainJob
    from aworld_rl_core.refs import Ref
    from aworld_rl_core.registry import get_trainer

    entries = read_entries(cfg.data.path)
    if cfg.data.drop_error_responses:
        entries = [e for e in entries if not e.get("error_tool_response")]
    if not entries:
        raise ValueError(f"no training entries in {cfg.data.path}")
    # held out first (a stable split of all the data), so a limit never trains on them
    train, held = split_entries(entries, cfg.data.held_out, seed=cfg.data.split_seed)
    if cfg.data.limit is not None:
        train = train[: cfg.data.limit]
    env = Ref.named(
        cfg.env.name,
        {
            "protocol": cfg.env.protocol,
            "reward": cfg.env.reward,
            "max_steps_per_turn": cfg.env.max_steps_per_turn,
        },
    )
    if not train:
        raise ValueError(f"data.held_out={cfg.data.held_out} leaves no training entries")
    rows = rl_rows(train, tool_docs=cfg.data.tool_docs)
    eval_rows = rl_rows(held, tool_docs=cfg.data.tool_docs)
    job = TrainJob(
        model=cfg.model,
        trainer=cfg.trainer,
        run=run,
        train_rows=rows,
        eval_rows=eval_rows,
        env=env,
    )
    result = get_trainer(cfg.trainer.backend)().train(job)
    metrics = {
        **result.metrics,
        "train_entries": float(len(rows)),
        "held_out_entries": float(len(eval_rows)),
    }
    return RunResult(
        metrics=metrics, outputs=dict(result.outputs), checkpoints=list(result.checkpoints)
    )
