"""Training one curriculum stage in rounds on core's backends, with validation between rounds.

Each round is one backend job (``rounds_steps`` optimizer steps) in its own folder
``stages/<n>-<stage>/round-<r>/``, starting from the checkpoint the previous round (or stage)
left; after it, the model is validated (BFCL accuracy on the validation entries) and the
curriculum state is saved, so a killed run resumes at the round it was in (the backend resumes
inside the round from its own checkpoints).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aworld_rl_envtuning.curriculum import CurriculumState, StageConfig, stage_finished
from aworld_rl_envtuning.data import Split, easy_subset, records_for, training_rows

if TYPE_CHECKING:
    from aworld_rl_core.backends.config import ModelConfig, TrainerConfig
    from aworld_rl_core.runs import Run
    from aworld_rl_envtuning.curriculum import TransitionConfig
    from aworld_rl_envtuning.recipes.common import DataConfig, EnvConfig, ValidationConfig


def stage_entry_ids(stage: StageConfig, split: Split, data: DataConfig) -> list[str]:
    """Training entry ids of a stage: easy subset of base, base, or all four categories."""
    if stage.data == "all":
        ids = split.of("train")
    else:
        ids = split.of("train", ["multi_turn_base"])
        if stage.data == "easy":
            ids = easy_subset(ids, data.easy_size)
    if data.max_train_entries > 0:
        ids = _spread(ids, data.max_train_entries)
    return ids


def _spread(ids: list[str], n: int) -> list[str]:
    """``n`` ids taken evenly across the list (so a cap keeps every category)."""
    if n >= len(ids):
        return ids
    step = len(ids) / n
    return [ids[int(i * step)] for i in range(n)]


def validation_ids(split: Split, per_category: int) -> list[str]:
    from aworld_rl_envtuning.data import CATEGORIES

    return [i for c in CATEGORIES for i in split.of("validation", [c])[:per_category]]


def local_model_path(name_or_path: str) -> str:
    """A loadable directory: ``tiny:<arch>`` becomes core's saved tiny model."""
    from aworld_rl_core.backends.config import ModelConfig
    from aworld_rl_core.models import model_dir

    return str(model_dir(ModelConfig(name_or_path=name_or_path)))


def validate_model(
    model_path: str, entry_ids: list[str], cfg: ValidationConfig, env: EnvConfig, *, style: str
) -> dict[str, float]:
    """BFCL accuracy of a local model on ``entry_ids`` (augmentation off)."""
    from aworld_rl_core.llm import LLMConfig, make_client
    from aworld_rl_envtuning.env import get_entry
    from aworld_rl_envtuning.evaluate import evaluate, summarize

    if not entry_ids:
        return {}
    llm = LLMConfig(
        provider="local",
        model=local_model_path(model_path),
        temperature=cfg.temperature,
        max_tokens=cfg.max_tokens,
        max_batch_size=cfg.max_batch_size,
        device=cfg.device,
    )
    options = env.options(
        reward="progress", augmentation=False, prompt_style=style, max_steps=cfg.max_steps_per_turn
    )
    for unused in ("hint_packs", "reward"):  # no hints; the default reward is not used here
        options.pop(unused)
    outcomes = evaluate(
        make_client(llm),
        [get_entry(i) for i in entry_ids],
        protocol="envtuning",
        env_options=options,
        concurrency=cfg.concurrency,
    )
    return summarize(outcomes)


def run_stage(
    *,
    index: int,
    stage: StageConfig,
    split: Split,
    state: CurriculumState,
    model: ModelConfig,
    trainer: TrainerConfig,
    env: EnvConfig,
    data: DataConfig,
    validation: ValidationConfig,
    transition: TransitionConfig,
    run: Run,
) -> list[dict[str, Any]]:
    """Train ``stage`` round by round until the transition rule ends it; its rounds' results."""
    from aworld_rl_core.backends.base import TrainJob
    from aworld_rl_core.registry import get_trainer
    from aworld_rl_core.runs import Run

    ids = stage_entry_ids(stage, split, data)
    rows = training_rows(records_for(ids, "train", **_record_options(env)))
    val_ids = validation_ids(split, validation.entries_per_category)
    max_rounds = stage.max_rounds(len(rows))
    rounds = state.rounds.setdefault(stage.name, [])
    backend = get_trainer(trainer.backend)()
    factory = env.factory(
        reward=stage.reward, augmentation=stage.augmentation, prompt_style=stage.prompt_style
    )
    while not stage_finished(rounds, max_rounds, transition):
        r = len(rounds)
        folder = run.dir / "stages" / f"{index + 1}-{stage.name}" / f"round-{r}"
        sub = Run(folder, name=f"{stage.name}/round-{r}", resume=run.resume, quiet=True)
        try:
            job = TrainJob(
                model=replace(model, name_or_path=state.model),
                trainer=_round_trainer(trainer, stage, index, r),
                run=sub,
                train_rows=rows,
                env=factory,
            )
            result = backend.train(job)
        finally:
            sub.close()
        if getattr(trainer, "backend", "") == "verl" and trainer.verl.dry_run:
            run.add_section(
                f"Stage {stage.name}: verl dry run",
                f"Launch written under `{folder}`; nothing trained (trainer.verl.dry_run).\n",
            )
            return rounds
        if not result.checkpoints:
            raise RuntimeError(f"stage {stage.name} round {r}: the backend saved no checkpoint")
        checkpoint = str(result.checkpoints[-1])
        scores = validate_model(checkpoint, val_ids, validation, env, style=stage.prompt_style)
        outcome = {
            "round": r,
            "val_accuracy": scores.get("accuracy/average", 0.0),
            "val_progress": scores.get("progress/average", 0.0),
            "grad_norm": float(result.metrics.get("grad_norm", float("nan"))),
            "reward_mean": float(result.metrics.get("reward_mean", float("nan"))),
            "checkpoint": checkpoint,
        }
        state.record_round(stage, outcome, checkpoint)
        state.save(run.dir)
        step = sum(len(v) for v in state.rounds.values())
        _forward_curve(run, folder, stage.name, step_offset=(step - 1) * stage.rounds_steps)
        run.log(
            {
                "stage": float(index + 1),
                "val_accuracy": outcome["val_accuracy"],
                "val_progress": outcome["val_progress"],
                "round_grad_norm": outcome["grad_norm"],
                "round_reward": outcome["reward_mean"],
            },
            step=step,
        )
    return rounds


def _record_options(env: EnvConfig) -> dict[str, Any]:
    """Options of the record's opening messages (the prompt the policy sees first)."""
    return {"tool_docs": env.tool_docs, "think_tag": env.think_tag}


def _round_trainer(trainer: TrainerConfig, stage: StageConfig, index: int, r: int) -> Any:
    """The stage's batch, response cap and round length; a fresh data order per round."""
    rl = replace(trainer.rl, max_response_tokens=stage.max_response_tokens)
    return replace(
        trainer,
        batch_size=stage.batch_size,
        max_steps=stage.rounds_steps,
        seed=trainer.seed + 1000 * index + r,
        rl=rl,
    )


def _forward_curve(run: Run, folder: Path, stage: str, *, step_offset: int) -> None:
    """Copy the round's per-step reward and gradient norm into the main run's metrics."""
    path = folder / "metrics.jsonl"
    if not path.is_file():
        return
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        picked = {
            key: float(record[key])
            for key in ("reward_mean", "grad_norm", "episode/return")
            if isinstance(record.get(key), (int, float))
        }
        if picked and "step" in record:
            run.log({f"train/{k}": v for k, v in picked.items()}, step=step_offset + record["step"])
