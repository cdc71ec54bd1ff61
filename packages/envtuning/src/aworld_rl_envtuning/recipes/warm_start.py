"""An optional warm start before stage 1: supervised steps on ground-truth trajectories.

The paper starts RL from an instruct model that already writes tool calls (``steps: 0``, the
default). A tiny random model writes none, so RL has nothing to reinforce; the ``tiny-cpu``
preset first teaches it the protocol: each training entry's ground truth is played through the
stage-1 environment by core's episode engine (``engine.play``, a scripted agent), and the
resulting chats (the protocol's text: ``<think>``, ``<tool_call>`` JSON, ``<answer>``,
observations) train the model with core's ``hf-sft`` backend. The model is validated greedily
on the validation entries before and after, with the same episodes and metrics as the in-run
validation (``val/progress``, ``val/format_score``, ``val/stage1_reward``, ``val/reward`` =
BFCL's verdict), so the report shows the random start next to the warm start.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from aworld_rl_core.atomic import write_atomic
from aworld_rl_core.config import option

if TYPE_CHECKING:
    from aworld_rl_core.runs import Run
    from aworld_rl_envtuning.data import Split

FOLDER = "warm-start"
RESULT_FILE = "warm_start.json"


@dataclass(frozen=True, kw_only=True)
class WarmStartConfig:
    """Supervised steps on ground-truth trajectories before stage 1 (``hf-sft``)."""

    steps: int = option(0, help="SFT optimizer steps (0: no warm start, as in the paper)", ge=0)
    entries: int = option(
        0,
        help="training entries whose ground truth is replayed: the stages' own entries "
        "first, then entries spread over the rest of the split (0: the whole split)",
        ge=0,
    )
    batch_size: int = option(8, help="samples per optimizer step", ge=1)
    learning_rate: float = option(1e-3, help="constant learning rate", gt=0)
    max_length: int = option(2048, help="max tokens per sample (longer samples are cut)")
    per_turn: bool = option(
        False,
        help="one sample per assistant turn in its context (false: one per episode, every "
        "assistant turn supervised)",
    )
    call_per_step: bool = option(
        False,
        help="the ground truth one call per reply (a call needing an earlier call's result "
        "comes after it); false: a turn's calls in one reply",
    )
    skip_templates: tuple[str, ...] = option(
        (),
        help="micro-world only (data.source=microworld): training templates whose entries the "
        "warm start never replays, so it covers a slice of the training templates; RL still "
        "trains on every training template",
    )
    save_steps: int = option(
        100,
        help="checkpoint every N SFT steps (0: only at the end); a killed run resumed with "
        "--resume continues the warm start from its latest checkpoint (each one holds the "
        "weights and the optimizer state)",
        ge=0,
    )


def trajectories(
    ids: list[str], *, call_per_step: bool = False, **env_options: Any
) -> list[dict[str, Any]]:
    """SFT rows: each entry's ground truth played through its environment (``messages``)."""
    from aworld_rl_core.engine import play
    from aworld_rl_envtuning.env import EnvTuningEnv, get_entry
    from aworld_rl_envtuning.evaluate import GroundTruthAgent

    agent = GroundTruthAgent(
        env_options.get("think_tag", "think"), protocol="envtuning", call_per_step=call_per_step
    )

    async def one(entry_id: str) -> dict[str, Any]:
        entry = get_entry(entry_id)
        env = EnvTuningEnv(entry, **env_options)
        try:
            episode = await play(agent.for_entry(entry), env)
            progress = env.progress
        finally:
            env.close()
        if progress != 1.0:
            raise RuntimeError(
                f"warm start: the ground truth of {entry_id} scores progress {progress} in "
                "the environment (every turn should pass)"
            )
        return {"messages": episode.messages, "entry_id": entry_id}

    async def every() -> list[dict[str, Any]]:
        return [await one(i) for i in ids]

    return asyncio.run(every())


def warm_start_ids(
    stages: Any, split: Split, data: Any, entries: int, skip_templates: Sequence[str] = ()
) -> list[str]:
    """The entries a warm start replays: the stages' training entries (what RL will play),
    then entries spread over the rest of the training split, ``entries`` in all (0: all);
    none of a micro-world template in ``skip_templates``."""
    from aworld_rl_envtuning.recipes.training import _spread, stage_entry_ids

    own = list(dict.fromkeys(i for s in stages for i in stage_entry_ids(s, split, data)))
    rest = [i for i in split.of("train") if i not in own]
    if skip_templates:
        own, rest = (_without_templates(ids, skip_templates, split) for ids in (own, rest))
    if not entries:
        return own + rest
    if entries <= len(own):
        return own[:entries]
    return own + _spread(rest, entries - len(own))


def _without_templates(ids: list[str], skip: Sequence[str], split: Split) -> list[str]:
    from aworld_rl_core.tooluse import microworld as mw

    if not all(mw.is_micro_id(i) for i in split.of("train")):
        raise ValueError(
            "warm_start.skip_templates names micro-world templates, but the training split is "
            "not the micro-world's: set data.source=microworld or leave skip_templates empty"
        )
    trained = {mw.micro_entry(i).template for i in split.of("train")}
    unknown = sorted(set(skip) - trained)
    if unknown:
        raise ValueError(
            f"warm_start.skip_templates names {unknown}, which are not training templates of "
            f"the micro-world's split; training templates: {', '.join(sorted(trained))}"
        )
    return [i for i in ids if mw.micro_entry(i).template not in skip]


def sft_trainer(ws: WarmStartConfig, seed: int) -> Any:
    """The ``hf-sft`` trainer settings of a warm start (constant learning rate)."""
    from aworld_rl_core.trainer_config import SFTConfig, TrainerConfig

    return TrainerConfig(
        backend="hf-sft",
        learning_rate=ws.learning_rate,
        max_steps=ws.steps,
        batch_size=ws.batch_size,
        micro_batch_size=1,
        seed=seed,
        save_steps=ws.save_steps,
        sft=SFTConfig(max_length=ws.max_length, per_turn=ws.per_turn, lr_scheduler="constant"),
    )


def greedy_validation(
    model_path: str, rows: list[dict[str, Any]], env: Any, trainer: Any, limits: Any = None
) -> dict[str, float]:
    """The in-run validation's metrics for a saved model: greedy episodes of ``rows`` in the
    environment ``env`` (a reference), with ``limits`` (default: ``trainer.rl``'s)."""
    from aworld_rl_core.backends.trl_trainer import EpisodeRollout, env_return, validation_metrics
    from aworld_rl_core.engine import ChatCodec, Limits
    from aworld_rl_core.models import load_model_and_tokenizer
    from aworld_rl_core.models.config import ModelConfig
    from aworld_rl_core.refs import callable_of

    model, tokenizer = load_model_and_tokenizer(ModelConfig(name_or_path=model_path))
    rollout = EpisodeRollout(
        rows,
        callable_of(env, "environments"),
        ChatCodec(tokenizer),
        limits or Limits.of(trainer.rl),
        temperature=0.0,
        top_p=1.0,
        call_constraint=trainer.rl.call_constraint,
    )
    episodes = rollout.play(model, tokenizer, rows, temperature=0.0)
    return validation_metrics(episodes, list(range(len(rows))), [env_return], None)


def warm_start(cfg: Any, start: str, split: Split, run: Run) -> str:
    """The model stage 1 starts from: ``start``, or its warm start (see the module doc)."""
    from aworld_rl_core.backends.base import TrainJob
    from aworld_rl_core.config import rebuild
    from aworld_rl_core.registry import get_trainer
    from aworld_rl_core.runs import Run
    from aworld_rl_core.trainer_config import TrainerConfig
    from aworld_rl_envtuning.recipes.training import (
        stage_entry_ids,
        stage_rows,
        validation_ids,
        validation_limits,
    )

    ws = cfg.warm_start
    if ws.steps == 0:
        return start
    folder = run.dir / FOLDER
    stages = cfg.stages if hasattr(cfg, "stages") else (cfg.stage,)
    stage = stages[0]
    ids = warm_start_ids(stages, split, cfg.data, ws.entries, ws.skip_templates)
    env_options = {
        "augmentation": stage.augmentation,
        "prompt_style": stage.prompt_style,
        "tool_docs": cfg.env.tool_docs,
        "think_tag": cfg.env.think_tag,
        # BFCL's cap, so every ground-truth step fits (the training cap may be lower)
        "max_steps_per_turn": max(cfg.env.max_steps_per_turn, 20),
    }
    sft = sft_trainer(ws, cfg.trainer.seed)
    sub = Run(folder, name="warm start", resume=run.resume, quiet=True)
    try:
        result = get_trainer("hf-sft")().train(
            TrainJob(
                model=replace(cfg.model, name_or_path=start),
                trainer=sft,
                run=sub,
                train_rows=trajectories(ids, call_per_step=ws.call_per_step, **env_options),
            )
        )
    finally:
        sub.close()
    model = str(result.outputs["model"])
    from aworld_rl_core.backends.plan import planning_active

    if planning_active():  # a plan: the warm-started model does not exist to measure
        return model
    trainer = rebuild(
        TrainerConfig,
        cfg.trainer,
        {"batch_size": stage.batch_size, "rl.max_response_tokens": stage.max_response_tokens},
    )
    env = cfg.env.factory(
        reward=stage.reward, augmentation=stage.augmentation, prompt_style=stage.prompt_style
    )
    # stage 1's own entries as stage 1 plays them (its reward and limits), greedily
    rows = stage_rows(stage_entry_ids(stage, split, cfg.data), "train", cfg.env, stage)
    scores = {"stage 1's training entries": _before_after(start, model, rows, env, trainer)}
    val_ids = validation_ids(split, cfg.validation)
    if val_ids:
        from aworld_rl_envtuning.recipes.training import _validation_env

        rows = stage_rows(val_ids, "validation", cfg.env, stage, **_validation_env(cfg.validation))
        limits = validation_limits(cfg.validation, trainer)
        scores["validation"] = _before_after(start, model, rows, env, trainer, limits)
    _report(run, ws, len(ids), result.metrics, scores)
    return model


def _before_after(start: str, model: str, *args: Any) -> dict[str, dict[str, float]]:
    return {"before": greedy_validation(start, *args), "after": greedy_validation(model, *args)}


def _report(
    run: Run, ws: Any, n_entries: int, sft: dict[str, Any], scores: dict[str, dict]
) -> None:
    """The report's "Warm start" section, ``warm_start.json`` and ``warm_start/...`` metrics."""
    keys = ("reward", "progress", "format_score", "stage1_reward", "format_errors", "tool_calls")
    names = {"reward": "episode reward (validation: BFCL accuracy)"}
    lines = [
        f"{ws.steps} hf-sft steps on the ground truth of {n_entries} training entries "
        f"(final loss {sft.get('final_loss', float('nan')):.3f}); greedy episodes of the "
        "stage-1 environment without hints:\n",
        f"| metric | {' | '.join(f'{part}: random start | after' for part in scores)} |",
        "|---|" + "---|---|" * len(scores),
    ]
    for key in keys:
        cells = [f"{s[when].get(key, float('nan')):.3f}" for s in scores.values() for when in s]
        if any(key in s[when] for s in scores.values() for when in s):
            lines.append(f"| {names.get(key, key)} | {' | '.join(cells)} |")
    run.add_section("Warm start", "\n".join(lines) + "\n")
    record = {"sft": sft, **scores}
    write_atomic(run.dir / FOLDER / RESULT_FILE, json.dumps(record, indent=1))
    prefixes = {"stage 1's training entries": "train", "validation": "val"}
    run.log(
        {
            f"warm_start/{prefixes[part]}/{when}/{k}": float(v)
            for part, s in scores.items()
            for when, metrics in s.items()
            for k, v in metrics.items()
        },
        step=0,
    )
