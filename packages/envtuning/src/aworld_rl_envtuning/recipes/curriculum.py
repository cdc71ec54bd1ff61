"""Recipes ``envtuning.curriculum`` (all four stages, then a held-out evaluation) and
``envtuning.stage`` (one stage), on core's training backends (``trainer.backend``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aworld_rl_core.backends.config import ModelConfig, RLConfig, TrainerConfig
from aworld_rl_core.config import option
from aworld_rl_core.runs import Run, RunResult
from aworld_rl_core.tracking import TrackingConfig
from aworld_rl_envtuning.curriculum import (
    CurriculumState,
    StageConfig,
    TransitionConfig,
    paper_stages,
)
from aworld_rl_envtuning.data import bfcl_split, read_split, write_split
from aworld_rl_envtuning.recipes.common import DataConfig, EnvConfig, ValidationConfig


def paper_trainer() -> TrainerConfig:
    """The paper's GRPO settings (App. D.2 and the released scripts)."""
    return TrainerConfig(
        learning_rate=1e-6,
        batch_size=32,
        max_grad_norm=1.0,
        rl=RLConfig(
            group_size=16,
            kl_coef=0.1,
            kl_estimator="low_var_kl",
            clip_low=0.2,
            clip_high=0.28,
            dual_clip=10.0,
            entropy_coef=0.001,
            max_turns=100,
            max_new_tokens=4096,
            max_response_tokens=10_000,
            temperature=1.0,
        ),
    )


@dataclass(frozen=True, kw_only=True)
class EvaluationConfig:
    """The evaluation after the last stage (held-out entries, augmentation off)."""

    entries_per_category: int = option(
        0, help="held-out entries per category (0 = all 300; -1 = skip)"
    )


@dataclass(frozen=True, kw_only=True)
class _Common:
    model: ModelConfig = option(
        factory=lambda: ModelConfig(name_or_path="Qwen/Qwen2.5-7B-Instruct"), help="policy model"
    )
    trainer: TrainerConfig = option(factory=paper_trainer, help="training")
    env: EnvConfig = option(factory=EnvConfig, help="environment")
    data: DataConfig = option(factory=DataConfig, help="BFCL split")
    validation: ValidationConfig = option(
        factory=ValidationConfig, help="validation between rounds"
    )
    transition: TransitionConfig = option(factory=TransitionConfig, help="when a stage ends")
    tracking: TrackingConfig = option(factory=TrackingConfig, help="experiment trackers")


@dataclass(frozen=True, kw_only=True)
class CurriculumConfig(_Common):
    """EnvTuning's four-stage curriculum, each stage from the previous stage's checkpoint."""

    stages: tuple[StageConfig, ...] = option(
        factory=paper_stages, help="the stages, in order (paper: four)"
    )
    evaluation: EvaluationConfig = option(
        factory=EvaluationConfig, help="final held-out evaluation"
    )


@dataclass(frozen=True, kw_only=True)
class StageRecipeConfig(_Common):
    """One curriculum stage (``model.name_or_path``: the previous stage's checkpoint)."""

    stage: StageConfig = option(factory=lambda: paper_stages()[1], help="the stage to train")


def _split(cfg: _Common, run: Run) -> Any:
    from aworld_rl_envtuning.data import SPLIT_FILE

    path = run.dir / SPLIT_FILE
    if run.resume and path.is_file():
        return read_split(path)
    split = bfcl_split(cfg.data)
    write_split(split, run.dir)
    return split


def _state(cfg: _Common, run: Run) -> CurriculumState:
    from aworld_rl_envtuning.recipes.training import local_model_path

    state = CurriculumState.load(run.dir) if run.resume else None
    # a saved directory even for tiny:<arch>, so the backend can build a reference model from it
    return state or CurriculumState(model=local_model_path(cfg.model.name_or_path))


def _train_stages(cfg: _Common, stages: tuple[StageConfig, ...], run: Run) -> CurriculumState:
    from aworld_rl_envtuning.recipes.training import run_stage

    names = [s.name for s in stages]
    if len(set(names)) != len(names):
        raise ValueError(f"stage names must differ, got {names}")
    split = _split(cfg, run)
    state = _state(cfg, run)
    for index, stage in enumerate(stages):
        if stage.name in state.finished:
            continue
        run_stage(
            index=index,
            stage=stage,
            split=split,
            state=state,
            model=cfg.model,
            trainer=cfg.trainer,
            env=cfg.env,
            data=cfg.data,
            validation=cfg.validation,
            transition=cfg.transition,
            run=run,
        )
        state.finish_stage(stage)
        state.save(run.dir)
    _stage_table(run, state, stages)
    return state


def _stage_table(run: Run, state: CurriculumState, stages: tuple[StageConfig, ...]) -> None:
    lines = [
        "| stage | data | reward | augmentation | rounds | last val accuracy (%) |",
        "|---|---|---|---|---|---|",
    ]
    for stage in stages:
        rounds = state.rounds.get(stage.name, [])
        acc = f"{100 * rounds[-1]['val_accuracy']:.2f}" if rounds else "-"
        lines.append(
            f"| {stage.name} | {stage.data} | {stage.reward} | "
            f"{'on' if stage.augmentation else 'off'} | {len(rounds)} | {acc} |"
        )
    run.add_section("Curriculum", "\n".join(lines) + "\n")


def _stage_metrics(state: CurriculumState) -> dict[str, float]:
    metrics: dict[str, float] = {"stages_finished": float(len(state.finished))}
    for name, rounds in state.rounds.items():
        if rounds:
            metrics[f"{name}/val_accuracy"] = float(rounds[-1]["val_accuracy"])
            metrics[f"{name}/rounds"] = float(len(rounds))
    return metrics


def run_curriculum(cfg: CurriculumConfig, run: Run) -> RunResult:
    """All stages in order (resumable), then the held-out evaluation of the final model."""
    from pathlib import Path

    from aworld_rl_envtuning.recipes.evaluate import evaluate_held_out

    state = _train_stages(cfg, cfg.stages, run)
    metrics = _stage_metrics(state)
    outputs = {"model": Path(state.model), "state": run.dir / "curriculum_state.json"}
    if cfg.evaluation.entries_per_category >= 0:
        split = read_split(run.dir / "split.json")
        scores, files = evaluate_held_out(
            state.model,
            split,
            cfg.evaluation.entries_per_category,
            cfg.validation,
            cfg.env,
            style=cfg.stages[-1].prompt_style,
            out_dir=run.dir / "eval",
            run=run,
        )
        metrics.update({f"eval/{k}": v for k, v in scores.items()})
        outputs.update(files)
    return RunResult(metrics=metrics, outputs=outputs, checkpoints=[Path(state.model)])


def run_single_stage(cfg: StageRecipeConfig, run: Run) -> RunResult:
    """One stage, from ``model.name_or_path``."""
    from pathlib import Path

    state = _train_stages(cfg, (cfg.stage,), run)
    return RunResult(
        metrics=_stage_metrics(state),
        outputs={"model": Path(state.model)},
        checkpoints=[Path(state.model)],
    )
