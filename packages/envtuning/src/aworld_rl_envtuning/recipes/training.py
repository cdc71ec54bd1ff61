"""Training one curriculum stage: one backend run in ``stages/<n>-<stage>/``.

The run starts from the stage's start model, which stays its KL reference to the end (also
when a killed run resumes: the backend continues from its last checkpoint, optimizer included).
It validates itself every ``validation.every`` steps on the validation entries (no hints,
BFCL's step limit, BFCL's verdict as the episode reward) and the transition rule, applied
inside the run, may end it before ``epochs`` passes over the stage's data.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aworld_rl_core.atomic import write_atomic
from aworld_rl_core.backends.plan import is_dry_run
from aworld_rl_core.engine import Limits
from aworld_rl_envtuning.curriculum import StageConfig
from aworld_rl_envtuning.data import CATEGORIES, Split, easy_subset, records_for, training_rows

if TYPE_CHECKING:
    from aworld_rl_core.runs import Run
    from aworld_rl_envtuning.recipes.common import DataConfig, EnvConfig, ValidationConfig

STAGE_FILE = "stage.json"
FORWARDED = ("reward_mean", "grad_norm", "kl", "entropy", "episode/return")


def stage_entry_ids(stage: StageConfig, split: Split, data: DataConfig) -> list[str]:
    """Training entry ids of a stage: easy subset of base, base, or all four categories."""
    if stage.data == "all":
        ids = split.of("train")
        if data.balance_categories:
            ids = _balanced([split.of("train", [c]) for c in CATEGORIES])
    else:
        ids = split.of("train", ["multi_turn_base"])
        if stage.data == "easy":
            ids = easy_subset(ids, data.easy_size)
    if data.max_train_entries > 0:
        ids = _spread(ids, data.max_train_entries)
    return ids


def _balanced(groups: list[list[str]]) -> list[str]:
    """The non-empty groups, each repeated (cycled) to the largest one's length, dealt in
    turn: an equal share of every group."""
    groups = [g for g in groups if g]
    size = max((len(g) for g in groups), default=0)
    return [g[i % len(g)] for i in range(size) for g in groups]


def _spread(ids: list[str], n: int) -> list[str]:
    """``n`` ids taken evenly across the list (so a cap keeps every category)."""
    if n >= len(ids):
        return ids
    step = len(ids) / n
    return [ids[int(i * step)] for i in range(n)]


def validation_ids(split: Split, validation: ValidationConfig) -> list[str]:
    """The in-run validation entries: the first ``validation.limit`` of each category (none
    when ``validation.enabled`` is false)."""
    if not validation.enabled:
        return []
    return [i for c in CATEGORIES for i in split.of("validation", [c])[: validation.limit]]


def local_model_path(name_or_path: str) -> str:
    """A loadable directory: ``tiny:<arch>`` becomes core's saved tiny model."""
    from aworld_rl_core.models import model_dir
    from aworld_rl_core.models.config import ModelConfig

    return str(model_dir(ModelConfig(name_or_path=name_or_path)))


def stage_rows(
    ids: list[str], split_name: str, env: EnvConfig, stage: StageConfig, **env_options: Any
) -> list[dict[str, Any]]:
    """Backend rows of ``ids`` (their opening prompt in the stage's style); ``env_options``
    go into each row's ``env_options`` (the environment applies them over the stage's)."""
    options = {"tool_docs": env.tool_docs, "think_tag": env.think_tag}
    rows = training_rows(records_for(ids, split_name, prompt_style=stage.prompt_style, **options))
    if env_options:
        rows = [{**row, "env_options": env_options} for row in rows]
    return rows


def run_stage(
    index: int,
    count: int,
    stage: StageConfig,
    start: str,
    split: Split,
    cfg: Any,
    run: Run,
    *,
    first_step: int = 0,
) -> dict[str, Any]:
    """Train ``stage`` from ``start`` as one backend run; what the curriculum state records.
    The stage's metrics go into the main run after ``first_step``."""
    from aworld_rl_core.backends.base import TrainJob
    from aworld_rl_core.backends.validation import InRunValidation
    from aworld_rl_core.config import rebuild
    from aworld_rl_core.registry import get_trainer
    from aworld_rl_core.runs import Run
    from aworld_rl_core.trainer_config import TrainerConfig

    rows = stage_rows(stage_entry_ids(stage, split, cfg.data), "train", cfg.env, stage)
    validation = cfg.validation
    val_ids = validation_ids(split, validation)
    val_rows = stage_rows(val_ids, "validation", cfg.env, stage, **_validation_env(validation))
    if cfg.transition.rule == "plateau" and not val_rows:
        raise ValueError(
            "transition.rule=plateau needs validation entries: set validation.enabled=true "
            "(and data.validation_per_category > 0) or transition.rule=fixed"
        )
    steps = stage.total_steps(len(rows))
    trainer = rebuild(
        TrainerConfig,
        cfg.trainer,
        {
            "batch_size": stage.batch_size,
            "max_steps": steps,
            "epochs": stage.epochs,
            "rl.max_response_tokens": stage.max_response_tokens,
        },
    )
    folder = run.dir / "stages" / f"{index + 1}-{stage.name}"
    in_run = (
        InRunValidation(
            every=validation.every,
            stop=cfg.transition.stop_rule(),
            before_train=validation.before_train,
            limits=validation_limits(validation, trainer),
        )
        if val_rows
        else None
    )
    env = cfg.env.factory(
        reward=stage.reward, augmentation=stage.augmentation, prompt_style=stage.prompt_style
    )
    sub = Run(folder, name=f"stage {stage.name}", resume=run.resume, quiet=True)
    _write_stage_file(folder, stage, start, steps, len(rows), len(val_rows), in_run)
    dry = is_dry_run(trainer)
    if dry or not run.quiet:
        print(_stage_line(index, count, stage, start, steps, len(rows), len(val_rows), trainer))
    try:
        result = get_trainer(trainer.backend)().train(
            TrainJob(
                model=replace(cfg.model, name_or_path=start),
                trainer=trainer,
                run=sub,
                train_rows=rows,
                eval_rows=val_rows,
                env=env,
                validation=in_run,
            )
        )
    finally:
        sub.close()
    if dry:  # the model the plan ends with (verl: its last step's checkpoint)
        planned = folder / "checkpoints" / f"global_step_{steps}" / "actor" / "huggingface"
        end = str(result.outputs.get("model", planned))
        return {"end": end, "folder": str(folder), "steps": steps, "dry_run": True}
    if "model" not in result.outputs:
        raise RuntimeError(f"stage {stage.name}: the backend returned no model ({folder})")
    validations = _read_validations(result.outputs.get("validation"))
    _forward_curve(run, folder, stage.name, first_step)
    return {
        "end": str(result.outputs["model"]),
        "folder": str(folder),
        "steps": int(result.metrics.get("global_step", steps)),
        "validations": validations,
        "stopped_early": bool(result.metrics.get("stopped_early", 0.0)),
    }


def validation_limits(validation: ValidationConfig, trainer: Any) -> Limits | None:
    """Validation episodes' own limits: whole episodes (replies still capped at
    ``trainer.rl.max_new_tokens``), or None (the training episodes' limits)."""
    return Limits(max_new_tokens=trainer.rl.max_new_tokens) if validation.whole_episodes else None


def _validation_env(validation: ValidationConfig) -> dict[str, Any]:
    """What validation rows change in the stage's environment."""
    return {
        "augmentation": False,
        "max_steps_per_turn": validation.max_steps_per_turn,
        "reward": {"name": "accuracy"},
    }


def _write_stage_file(
    folder: Path,
    stage: StageConfig,
    start: str,
    steps: int,
    n_rows: int,
    n_val: int,
    validation: Any,
) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    record = {
        "stage": asdict(stage),
        "feedback": stage.feedback,
        "start": start,
        "kl_reference": start,
        "max_steps": steps,
        "training_entries": n_rows,
        "validation_entries": n_val,
        "validate_every": validation.every if validation else None,
        "stop_rule": validation.stop_ref().to_json() if validation and validation.stop else None,
    }
    write_atomic(folder / STAGE_FILE, json.dumps(record, indent=1))


def _stage_line(
    index: int,
    count: int,
    stage: StageConfig,
    start: str,
    steps: int,
    n_rows: int,
    n_val: int,
    trainer: Any,
) -> str:
    batch = f"batch {stage.batch_size} prompts x {trainer.rl.group_size} episodes"
    return (
        f"\n== stage {index + 1}/{count} {stage.name}: {stage.data} data ({n_rows} entries), "
        f"{stage.reward} reward, feedback: {stage.feedback}, {stage.prompt_style} prompt, "
        f"{batch}, response <= {stage.max_response_tokens} tokens, <= {steps} steps, "
        f"validation: {n_val} entries\n   starts from (and KL reference): {start}"
    )


def describe_evaluation(model: str, split: Split, cfg: Any) -> str:
    """What the curriculum's final evaluation would run (printed by a dry run)."""
    count = sum(len(split.of("held_out", [c])[: cfg.evaluation.limit]) for c in CATEGORIES)
    v = cfg.validation
    return (
        f"\n== final evaluation (not run in a dry run): {count} held-out entries of "
        f"{', '.join(CATEGORIES)}; agent {model} (local, {v.device}); no hints, "
        f"{v.max_steps_per_turn} steps per user turn, temperature {v.temperature}, "
        f"<= {v.max_tokens} new tokens per response, {cfg.stages[-1].prompt_style} prompt; "
        "BFCL's verdicts per category and their mean. At this scale, serve the model with "
        "vLLM and run `aworld-run envtuning.eval --preset paper`."
    )


def _read_validations(path: Any) -> list[dict[str, float]]:
    from aworld_rl_core.backends.validation import read_history

    return read_history(Path(path)) if path else []


def _forward_curve(run: Run, folder: Path, stage: str, offset: int) -> None:
    """Copy the stage's per-step training and validation metrics into the main run's metrics,
    after the ``offset`` steps of the stages before it."""
    path = folder / "metrics.jsonl"
    if not path.is_file():
        return
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        picked = {
            (key if key.startswith("val/") else f"train/{key}"): float(value)
            for key, value in record.items()
            if (key in FORWARDED or key.startswith("val/"))
            and isinstance(value, (int, float))
            and math.isfinite(value)
        }
        if picked and "step" in record:
            run.log({**picked, f"stage/{stage}": 1.0}, step=offset + int(record["step"]))
