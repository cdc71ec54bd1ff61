"""``rag_r1.train``'s warm start and held-out points (a tiny model learning to search).

With ``warm_start.steps > 0`` the scripted searcher (a labelled test double) plays the training
questions against the index; its correct trajectories train the model with hf-sft, the
retrieved ``<information>`` blocks masked out of the loss (``learning.information_masked_ce``),
and RL starts from the result (``warm_start.from_run``: from a finished run's, no SFT). With
``warm_start.world_tokenizer`` a tiny ``vocab=N`` model first gets a BPE trained on the
synthetic world's text. With ``data.heldout`` (and ``data.validation``)
questions, every point (``random``: the start, ``warm_start``, ``final``: after RL) plays them
greedily; ``heldout/<metric>/<point>`` and ``val/<metric>/<point>`` go to the metrics and the
held-out table opens the report.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from aworld_rl_core.atomic import write_atomic

if TYPE_CHECKING:
    from aworld_rl_core.runs import Run

TrainConfig = Any  # ``recipes.train.TrainConfig``: train imports this module, not the reverse
Splits = Any  # ``recipes.train.Splits``

RESULT_FILE = "heldout_points.json"
METRICS = ("em", "f1", "searches_per_question", "queries_per_search")


WARM_DONE = "warm-start.json"
"""Written once the start model and the warm start are made and logged: a resumed run reuses
them instead of training and logging them again."""


def learn(
    cfg: TrainConfig,
    run: Run,
    split: Splits,
    env_options: Callable[[TrainConfig], dict[str, Any]],
) -> tuple[str, str, Callable[[str, str, str | None], dict[str, float]]]:
    """(start model, warm-started model, ``points(start, warm, final) -> metrics``);
    ``env_options(cfg)``: the search environment's options for a config."""

    ws = cfg.warm_start
    marker = run.dir / WARM_DONE
    if ws.from_run:
        start, warm = reused(cfg)
    elif run.resume and marker.is_file():  # resumed after it: neither redone nor logged again
        done = json.loads(marker.read_text(encoding="utf-8"))
        start, warm = done["start"], done["warm"]
    else:
        start, warm = _start_and_warm(cfg, run, split, env_options)
        write_atomic(marker, json.dumps({"start": start, "warm": warm}))
    started = replace(cfg, model=replace(cfg.model, name_or_path=start, tokenizer=None))
    warmed = bool(ws.from_run) or ws.steps > 0
    return start, warm, _points(started, run, split, env_options(started), warm_start=warmed)


def _start_and_warm(
    cfg: TrainConfig,
    run: Run,
    split: Splits,
    env_options: Callable[[TrainConfig], dict[str, Any]],
) -> tuple[str, str]:
    """(start model, warm-started model) made here: the world tokenizer's model, then the
    warm start (both the start model when ``warm_start.steps`` is 0)."""
    from aworld_rl_rag_r1 import learning

    ws = cfg.warm_start
    start = cfg.model.name_or_path
    if ws.world_tokenizer:
        from aworld_rl_rag_r1.recipes.common import synthetic_world

        corpus = synthetic_world(cfg.world).corpus
        words = {**env_options(cfg), "obs_tokenizer": None, "obs_budget_tokens": 0}
        rows, _ = learning.scripted_trajectories(split.warm, words)
        texts = learning.world_texts(corpus, [r["question"] for r in split.warm], rows)
        start = str(learning.world_model_dir(start, texts, run.dir / "init", seed=cfg.trainer.seed))
        run.log({"warm_start/tokenizer_texts": float(len(texts))}, step=0)
    if ws.steps == 0:
        return start, start
    started = replace(cfg, model=replace(cfg.model, name_or_path=start, tokenizer=None))
    return start, _warm_start(started, run, split, env_options(started))


def reused(cfg: TrainConfig) -> tuple[str, str]:
    """(start, warm-started model) of the finished run ``warm_start.from_run``."""
    from pathlib import Path

    source = Path(cfg.warm_start.from_run)
    warm = source / "warm-start" / "model"
    start = source / "init" if cfg.warm_start.world_tokenizer else None
    for path in (warm, start):
        if path is not None and not (path / "config.json").is_file():
            raise ValueError(
                f"warm_start.from_run={str(source)!r} holds no {path.relative_to(source)}/ "
                "model: name the output directory of a finished rag_r1.train run that "
                "warm-started (warm_start.steps > 0)"
            )
    return (cfg.model.name_or_path if start is None else str(start)), str(warm)


def _points(
    cfg: TrainConfig,
    run: Run,
    split: Splits,
    options: dict[str, Any],
    *,
    warm_start: bool,
) -> Callable[[str, str, str | None], dict[str, float]]:
    """``points(start, warm, final) -> metrics``: every point played on the held-out and
    validation questions (``options``: the search environment's)."""
    from aworld_rl_core.engine import Limits
    from aworld_rl_rag_r1 import learning

    rl = cfg.trainer.rl
    limits = Limits(
        max_turns=cfg.env.max_search_turns + 1,
        max_new_tokens=rl.max_new_tokens,
        max_response_tokens=rl.max_response_tokens,
    )

    def points(start: str, warm: str, final: str | None) -> dict[str, float]:
        named = [("random", start)]
        if warm_start:
            named.append(("warm_start", warm))
        if final is not None:
            named.append(("final", final))
        results: dict[str, dict[str, dict[str, float]]] = {}
        for part, rows in (("heldout", split.heldout), ("val", split.validation)):
            if not rows:
                continue
            for point, path in run.progress(named, desc=f"{part} points"):
                scores = learning.evaluate(path, rows, options, limits)
                results.setdefault(part, {})[point] = scores
        metrics = {
            f"{part}/{key}/{point}": value
            for part, by_point in results.items()
            for point, scores in by_point.items()
            for key, value in scores.items()
        }
        run.log(metrics)
        (run.dir / RESULT_FILE).write_text(
            json.dumps({"questions": len(split.heldout), "points": results}, indent=1),
            encoding="utf-8",
        )
        if "heldout" in results:
            run.sections.insert(0, ("Held-out questions", table(results["heldout"], split)))
        return metrics

    return points


def _warm_start(cfg: TrainConfig, run: Run, split: Splits, options: dict[str, Any]) -> str:
    from aworld_rl_core.backends.base import TrainJob
    from aworld_rl_core.backends.config import SFTConfig, TrainerConfig
    from aworld_rl_core.registry import get_trainer
    from aworld_rl_core.runs import Run
    from aworld_rl_core.segments import THINK_TAGS
    from aworld_rl_rag_r1 import learning

    ws = cfg.warm_start
    rows, counts = learning.scripted_trajectories(split.warm, options)
    if not rows:
        raise ValueError(
            "warm start: the scripted searcher answered none of the training questions "
            "correctly (is the index the synthetic world's?); set warm_start.steps=0"
        )
    trainer = TrainerConfig(
        backend="hf-sft",
        learning_rate=ws.learning_rate,
        max_steps=ws.steps,
        batch_size=ws.batch_size,
        micro_batch_size=ws.batch_size,
        seed=cfg.trainer.seed,
        save_steps=0,
        sft=SFTConfig(
            max_length=ws.max_length,
            per_turn=False,
            lr_scheduler="constant",
            segments={"think": THINK_TAGS, "information": learning.INFORMATION},
        ),
    )
    sub = Run(run.dir / "warm-start", name="warm start", resume=run.resume, quiet=True)
    try:
        result = get_trainer("hf-sft")().train(
            TrainJob(
                model=cfg.model,
                trainer=trainer,
                run=sub,
                train_rows=rows,
                loss=learning.information_masked_ce,
            )
        )
    finally:
        sub.close()
    sft = {k: float(v) for k, v in result.metrics.items() if isinstance(v, (int, float))}
    run.log(
        {
            "warm_start/trajectories": counts["correct"],
            "warm_start/scripted_episodes": counts["episodes"],
            "warm_start/scripted_searches_per_question": counts["searches_per_question"],
            **{f"warm_start/{k}": v for k, v in sft.items()},
        },
        step=0,
    )
    run.add_section(
        "Warm start",
        f"{ws.steps} hf-sft steps on {int(counts['correct'])} correct trajectories of the "
        f"scripted searcher (a test double; {int(counts['episodes'])} training questions played, "
        f"{counts['searches_per_question']:.2f} searches per question), `<information>` masked "
        f"out of the loss; final loss {sft.get('final_loss', float('nan')):.3f}.\n",
    )
    return str(result.outputs["model"])


def table(results: dict[str, dict[str, float]], split: Splits) -> str:
    """The report's first table: held-out EM, F1, searches and queries per point."""
    names = list(results)
    lines = [
        f"{len(split.heldout)} held-out questions (never trained on, never used to choose the "
        f"preset; {len(split.validation)} validation questions were), greedy:\n",
        "| | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    labels = {
        "em": "EM",
        "f1": "F1",
        "searches_per_question": "searches / question",
        "queries_per_search": "queries / search",
    }
    for key in METRICS:
        cells = " | ".join(f"{results[p][key]:.3f}" for p in names)
        lines.append(f"| {labels[key]} | {cells} |")
    return "\n".join(lines) + "\n"
