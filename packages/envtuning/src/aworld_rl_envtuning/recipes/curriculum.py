"""Recipes ``envtuning.curriculum`` (all four stages, then a held-out evaluation) and
``envtuning.stage`` (one stage), on core's training backends (``trainer.backend``).

Each stage sets its batch size, response cap and length (``stages.N.batch_size``,
``stages.N.max_response_tokens``, ``stages.N.epochs``), so the trainer section has no
``batch_size``, ``max_steps``, ``epochs`` or ``rl.max_response_tokens``: setting one is an
error that names the stage field. Defaults are the paper's (``paper.yaml``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from aworld_rl_core.backends.plan import is_dry_run
from aworld_rl_core.config import from_dict, limit_option, option, without_keys
from aworld_rl_core.models.config import ModelConfig
from aworld_rl_core.runs import Run, RunResult
from aworld_rl_core.tracking import TrackingConfig
from aworld_rl_core.trainer_config import TrainerConfig
from aworld_rl_envtuning.curriculum import (
    CurriculumState,
    StageConfig,
    TransitionConfig,
    paper_settings,
    paper_stages,
)
from aworld_rl_envtuning.data import bfcl_split, read_split, write_split
from aworld_rl_envtuning.recipes.common import DataConfig, EnvConfig, ValidationConfig
from aworld_rl_envtuning.recipes.warm_start import WarmStartConfig

STAGE_KEYS = {
    "batch_size": "each stage sets it: stages.N.batch_size (envtuning.stage: stage.batch_size)",
    "max_steps": "each stage runs stages.N.epochs passes over its data (stage.epochs)",
    "epochs": "each stage sets it: stages.N.epochs (envtuning.stage: stage.epochs)",
    "rl.max_response_tokens": "each stage sets it: stages.N.max_response_tokens "
    "(envtuning.stage: stage.max_response_tokens)",
}
if TYPE_CHECKING:
    CurriculumTrainerConfig = TrainerConfig
else:
    CurriculumTrainerConfig = without_keys(
        TrainerConfig, STAGE_KEYS, name="CurriculumTrainerConfig"
    )


def paper_trainer() -> Any:
    """The paper's GRPO and verl settings (``paper.yaml``), on the default backend."""
    return from_dict(CurriculumTrainerConfig, paper_settings()["trainer"])


def paper_validation() -> ValidationConfig:
    return from_dict(ValidationConfig, paper_settings()["validation"])


@dataclass(frozen=True, kw_only=True)
class EvaluationConfig:
    """The evaluation after the last stage (held-out entries, augmentation off)."""

    __moved_keys__ = {
        "entries_per_category": "it is now 'evaluation.limit' (first N held-out entries per "
        "category; null: all) and 'evaluation.enabled' (entries_per_category=-1 -> "
        "evaluation.enabled=false; entries_per_category=0 -> evaluation.limit=null; "
        "entries_per_category=N -> evaluation.limit=N)"
    }

    enabled: bool = option(True, help="run the final evaluation (false: skip it)")
    limit: int | None = limit_option("held-out entries per category (the paper: all 300)")
    points_per_category: int = option(
        0,
        help="held-out entries per category played at every point (random start, warm start, "
        "each stage's end): the report's first table, heldout/accuracy/<point> (0 = off)",
        ge=0,
    )
    points_split: Literal["held_out", "validation"] = option(
        "held_out",
        help="the part of the split the points are played on: held_out (the report's table, "
        "heldout/<metric>/<point>), or validation to choose a preset without looking at "
        "held-out entries (validation/<metric>/<point>)",
    )


@dataclass(frozen=True, kw_only=True)
class _Common:
    model: ModelConfig = option(
        factory=lambda: ModelConfig(name_or_path="Qwen/Qwen2.5-7B-Instruct"), help="policy model"
    )
    trainer: CurriculumTrainerConfig = option(factory=paper_trainer, help="training")
    env: EnvConfig = option(factory=EnvConfig, help="environment")
    data: DataConfig = option(factory=DataConfig, help="BFCL split")
    validation: ValidationConfig = option(
        factory=paper_validation, help="validation inside each stage's run"
    )
    transition: TransitionConfig = option(factory=TransitionConfig, help="when a stage ends")
    warm_start: WarmStartConfig = option(
        factory=WarmStartConfig, help="SFT on ground-truth trajectories before stage 1"
    )
    tracking: TrackingConfig = option(factory=TrackingConfig, help="experiment trackers")


@dataclass(frozen=True, kw_only=True)
class CurriculumConfig(_Common):
    """EnvTuning's four-stage curriculum, each stage from the previous stage's final model."""

    stages: tuple[StageConfig, ...] = option(
        factory=paper_stages,
        help="the stages in order; each stage's fields are set as stages.N.<field> (below)",
    )
    evaluation: EvaluationConfig = option(
        factory=EvaluationConfig, help="final held-out evaluation"
    )


@dataclass(frozen=True, kw_only=True)
class StageRecipeConfig(_Common):
    """One curriculum stage (``model.name_or_path``: the previous stage's final model)."""

    stage: StageConfig = option(factory=lambda: paper_stages()[1], help="the stage to train")


def _split(cfg: _Common, run: Run) -> Any:
    from aworld_rl_envtuning.data import SPLIT_FILE

    path = run.dir / SPLIT_FILE
    if run.resume and path.is_file():
        return read_split(path)
    split = bfcl_split(cfg.data)
    write_split(split, run.dir)
    return split


def _train_stages(cfg: _Common, stages: tuple[StageConfig, ...], run: Run) -> CurriculumState:
    from aworld_rl_envtuning.recipes.training import local_model_path, run_stage
    from aworld_rl_envtuning.recipes.warm_start import warm_start

    names = [s.name for s in stages]
    if len(set(names)) != len(names):
        raise ValueError(f"stage names must differ, got {names}")
    split = _split(cfg, run)
    state = CurriculumState.load(run.dir) if run.resume else None
    if state is None:
        if run.resume:  # killed in the warm start: its step-0 rows are logged again
            run.rewind(-1)
        # a saved directory even for tiny:<arch>, so the backend can build a reference from it
        start = local_model_path(cfg.model.name_or_path)
        state = CurriculumState(model=warm_start(cfg, start, split, run))
        state.save(run.dir)
    dry = is_dry_run(cfg.trainer)
    for index, stage in enumerate(stages):
        if stage.name in state.finished:
            continue
        record = state.begin(stage)
        if not dry:
            state.save(run.dir)  # the stage's start (its KL reference) survives a kill
        done = sum(state.stages[n].get("steps", 0) for n in state.finished)
        if run.resume:  # what the stage forwarded before a kill is forwarded again
            run.rewind(done)
        outcome = run_stage(
            index, len(stages), stage, record["start"], split, cfg, run, first_step=done
        )
        state.finish(stage, outcome.pop("end"), **outcome)
        if not dry:
            state.save(run.dir)
    _stage_table(run, state, stages)
    return state


def _stage_table(run: Run, state: CurriculumState, stages: tuple[StageConfig, ...]) -> None:
    lines = [
        "| stage | data | reward | feedback | prompt | batch | steps | validations | "
        "last val accuracy (%) | ended by |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for i, stage in enumerate(stages):
        record = state.stages.get(stage.name, {})
        validations = record.get("validations", [])
        acc = f"{100 * validations[-1]['val/reward']:.2f}" if validations else "-"
        ended = "plateau" if record.get("stopped_early") else "epochs"
        lines.append(
            f"| {i + 1} {stage.name} | {stage.data} | {stage.reward} | {stage.feedback} | "
            f"{stage.prompt_style} | {stage.batch_size} | {record.get('steps', '-')} | "
            f"{len(validations)} | {acc} | {ended if 'end' in record else '-'} |"
        )
    run.add_section("Curriculum", "\n".join(lines) + "\n")


def _stage_results(state: CurriculumState, stages: tuple[StageConfig, ...], run: Run) -> Any:
    metrics: dict[str, float] = {"stages_finished": float(len(state.finished))}
    outputs: dict[str, Path] = {}
    for i, stage in enumerate(stages):
        record = state.stages.get(stage.name)
        if not record:
            continue
        outputs[f"stage {i + 1} {stage.name} ({record['feedback']})"] = Path(record["folder"])
        validations = record.get("validations") or []
        if validations:
            metrics[f"{stage.name}/val_accuracy"] = float(validations[-1]["val/reward"])
            metrics[f"{stage.name}/validations"] = float(len(validations))
    return metrics, outputs


def run_curriculum(cfg: CurriculumConfig, run: Run) -> RunResult:
    """All stages in order (resumable), then the held-out evaluation of the final model."""
    from aworld_rl_envtuning.recipes.evaluate import evaluate_held_out
    from aworld_rl_envtuning.recipes.training import describe_evaluation

    state = _train_stages(cfg, cfg.stages, run)
    metrics, outputs = _stage_results(state, cfg.stages, run)
    outputs.update(model=Path(state.model), state=run.dir / "curriculum_state.json")
    dry = is_dry_run(cfg.trainer)
    if cfg.evaluation.points_per_category > 0 and not dry:
        from aworld_rl_envtuning.recipes.heldout import evaluate_points
        from aworld_rl_envtuning.recipes.training import local_model_path

        start = local_model_path(cfg.model.name_or_path)
        split = read_split(run.dir / "split.json")
        metrics = {**evaluate_points(cfg, state, split, start, run), **metrics}  # first
    if cfg.evaluation.enabled:
        split = read_split(run.dir / "split.json")
        if is_dry_run(cfg.trainer):
            print(describe_evaluation(state.model, split, cfg))
            return RunResult(metrics=metrics, outputs=outputs)
        scores, files = evaluate_held_out(
            state.model,
            split,
            cfg.evaluation.limit,
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
    state = _train_stages(cfg, (cfg.stage,), run)
    metrics, outputs = _stage_results(state, (cfg.stage,), run)
    outputs["model"] = Path(state.model)
    return RunResult(metrics=metrics, outputs=outputs, checkpoints=[Path(state.model)])
