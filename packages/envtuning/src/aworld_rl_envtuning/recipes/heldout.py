"""Held-out accuracy and progress at every point of the curriculum: the random start, the warm
start and the end of each stage (``evaluation.points_per_category``).

Each point's model plays the same held-out entries greedily, as the in-run validation plays its
entries (no hints, ``validation.max_steps_per_turn`` replies per turn, whole episodes when
``validation.whole_episodes``), in the prompt style it was trained with (the random start and
the warm start: stage 1's). ``accuracy`` is BFCL's verdict over the whole entry, ``progress``
the share of its user turns that passed. The table opens the report; the metrics are
``heldout/accuracy/<point>`` and ``heldout/progress/<point>`` with ``<point>`` in ``random``,
``warm_start``, ``stage1`` .. ``stageN``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aworld_rl_core.runs import Run
    from aworld_rl_envtuning.curriculum import CurriculumState
    from aworld_rl_envtuning.data import Split

RESULT_FILE = "heldout_points.json"


def heldout_ids(split: Split, per_category: int, part: str = "held_out") -> list[str]:
    from aworld_rl_envtuning.data import CATEGORIES

    return [i for c in CATEGORIES for i in split.of(part, [c])[:per_category]]


PREFIXES = {"held_out": "heldout", "validation": "validation"}
"""Metric prefix per ``evaluation.points_split``."""


def points(cfg: Any, state: CurriculumState, start: str) -> list[tuple[str, str, Any]]:
    """``(point, model path, stage whose prompt style and limits it is played with)``."""
    stages = cfg.stages
    out = [("random", start, stages[0])]
    if cfg.warm_start.steps > 0 and stages and stages[0].name in state.stages:
        out.append(("warm_start", state.stages[stages[0].name]["start"], stages[0]))
    for i, stage in enumerate(stages):
        record = state.stages.get(stage.name, {})
        if "end" in record:
            out.append((f"stage{i + 1}", record["end"], stage))
    return out


def evaluate_points(
    cfg: Any, state: CurriculumState, split: Split, start: str, run: Run
) -> dict[str, float]:
    """Play the held-out entries at every point; log, tabulate (first in the report), save."""
    from aworld_rl_core.config import rebuild
    from aworld_rl_core.trainer_config import TrainerConfig
    from aworld_rl_envtuning.recipes.training import (
        _validation_env,
        stage_rows,
        validation_limits,
    )
    from aworld_rl_envtuning.recipes.warm_start import greedy_validation

    part = cfg.evaluation.points_split
    ids = heldout_ids(split, cfg.evaluation.points_per_category, part)
    if not ids:
        raise ValueError(f"evaluation.points_per_category selects no {part} entry")
    results: dict[str, dict[str, float]] = {}
    for point, model, stage in run.progress(points(cfg, state, start), desc="held-out points"):
        trainer = rebuild(
            TrainerConfig,
            cfg.trainer,
            {"batch_size": stage.batch_size, "rl.max_response_tokens": stage.max_response_tokens},
        )
        env = cfg.env.factory(
            reward=stage.reward, augmentation=False, prompt_style=stage.prompt_style
        )
        rows = stage_rows(ids, part, cfg.env, stage, **_validation_env(cfg.validation))
        found = greedy_validation(
            model, rows, env, trainer, validation_limits(cfg.validation, trainer)
        )
        results[point] = {
            "accuracy": float(found.get("accuracy", found.get("reward", 0.0))),
            "progress": float(found.get("progress", 0.0)),
            "format_errors": float(found.get("format_errors", 0.0)),
            "tool_calls": float(found.get("tool_calls", 0.0)),
        }
    metrics = {
        f"{PREFIXES[part]}/{key}/{point}": value
        for point, scores in results.items()
        for key, value in scores.items()
        if key in ("accuracy", "progress")
    }
    run.log(metrics)
    name = RESULT_FILE if part == "held_out" else "validation_points.json"
    (run.dir / name).write_text(
        json.dumps({"entries": ids, "points": results}, indent=1), encoding="utf-8"
    )
    if part == "held_out":
        run.sections.insert(0, ("Held-out entries", table(results, len(ids))))
    else:
        text = table(results, len(ids)).replace(
            "held-out entries (held-out templates and held-out slot combinations of the "
            "training templates; none trained on, none used to choose the preset)",
            "validation entries (validation templates and slot combinations; for choosing "
            "a preset)",
        )
        run.sections.insert(0, ("Validation entries", text))
    return metrics


def table(results: dict[str, dict[str, float]], n: int) -> str:
    """The report's first table: accuracy and mean progress (%) per point."""
    names = list(results)
    lines = [
        f"{n} held-out entries (held-out templates and held-out slot combinations of the "
        "training templates; none trained on, none used to choose the preset), greedy, no "
        "hints:\n",
        "| | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for key, label in (
        ("accuracy", "accuracy (%)"),
        ("progress", "mean progress (%)"),
    ):
        lines.append(
            f"| {label} | " + " | ".join(f"{100 * results[p][key]:.1f}" for p in names) + " |"
        )
    lines.append(
        "| tool calls per entry | "
        + " | ".join(f"{results[p]['tool_calls']:.2f}" for p in names)
        + " |"
    )
    return "\n".join(lines) + "\n"
