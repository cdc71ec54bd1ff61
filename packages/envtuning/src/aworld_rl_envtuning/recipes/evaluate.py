"""Recipe ``envtuning.eval``: BFCL multi-turn accuracy of an agent in EnvTuning's protocol.

The agent is any core LLM client: a local transformers model (``llm.provider=local``), a vLLM /
SGLang server or any OpenAI-compatible endpoint (``llm.provider=openai``). Entries are the
held-out part of the split (default) or whole categories; verdicts come from core's BFCL judge.
Outputs: BFCL-format result files, ``outcomes.jsonl`` (one line per entry) and a report with the
accuracy table and a per-category plot.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from aworld_rl_core.config import option
from aworld_rl_core.llm import LLMConfig
from aworld_rl_core.runs import Run, RunResult
from aworld_rl_envtuning.data import CATEGORIES, SplitConfig

if TYPE_CHECKING:
    from aworld_rl_envtuning.data import Split
    from aworld_rl_envtuning.recipes.common import EnvConfig, ValidationConfig


@dataclass(frozen=True, kw_only=True)
class EvalEnvConfig:
    """The evaluation environment (no augmentation: BFCL's own error messages)."""

    max_steps_per_turn: int = option(20, help="model steps per user turn")
    prompt_style: Literal["basic", "resourceful"] = option(
        "resourceful", help="system prompt of stages 1-2 or 3-4"
    )
    tool_docs: Literal["json", "compact"] = option(
        "json", help="tool list: BFCL JSON docs or one line per function"
    )
    think_tag: str = option("think", help="reasoning tag name")


@dataclass(frozen=True, kw_only=True)
class EvalConfig:
    """BFCL multi-turn evaluation."""

    agent: Literal["llm", "ground_truth"] = option(
        "llm", help="llm: the model in `llm`; ground_truth: BFCL's answers (a 100% check)"
    )
    llm: LLMConfig = option(
        factory=lambda: LLMConfig(temperature=0.0, max_tokens=4096),
        help="the agent (tiny:<arch> as a local model name builds core's tiny model)",
    )
    entries: Literal["held_out", "validation", "train", "all"] = option(
        "held_out", help="which part of the split (all: whole categories)"
    )
    categories: tuple[str, ...] = option(CATEGORIES, help="BFCL multi-turn categories")
    entries_per_category: int = option(0, help="first N entries per category (0 = all)")
    split: SplitConfig = option(factory=SplitConfig, help="the data split")
    env: EvalEnvConfig = option(factory=EvalEnvConfig, help="environment")
    concurrency: int = option(16, help="episodes in flight")


def _entry_ids(cfg: EvalConfig) -> list[str]:
    from aworld_rl_envtuning.data import bfcl_split
    from aworld_rl_envtuning.recipes.common import check_categories

    categories = check_categories(cfg.categories)
    if cfg.entries == "all":
        from aworld_rl_core.tooluse.bfcl import load_category

        by_category = {c: [e.id for e in load_category(c)] for c in categories}
    else:
        split = bfcl_split(cfg.split)
        by_category = {c: split.of(cfg.entries, [c]) for c in categories}
    n = cfg.entries_per_category
    return [i for c in categories for i in (by_category[c][:n] if n > 0 else by_category[c])]


def run_evaluation(
    llm: LLMConfig,
    entry_ids: list[str],
    env_options: dict[str, Any],
    *,
    concurrency: int,
    out_dir: Path,
    run: Run,
    ground_truth: bool = False,
) -> tuple[dict[str, float], dict[str, Path]]:
    """Evaluate, write result files and the report sections; (metrics, output files)."""
    from aworld_rl_core.llm import make_client
    from aworld_rl_envtuning.env import get_entry
    from aworld_rl_envtuning.evaluate import (
        accuracy_table,
        evaluate,
        plot_accuracy,
        summarize,
        write_bfcl_results,
    )
    from aworld_rl_envtuning.recipes.training import local_model_path

    if ground_truth:
        from aworld_rl_envtuning.evaluate import GroundTruthAgent

        client: Any = GroundTruthAgent(env_options.get("think_tag", "think"))
        label = "ground-truth"
    else:
        if llm.provider == "local":
            llm = replace(llm, model=local_model_path(llm.model))
        client, label = make_client(llm), Path(llm.model).name or "model"
    entries = [get_entry(i) for i in entry_ids]
    bar = iter(run.progress(range(len(entries)), total=len(entries), desc="BFCL episodes"))
    outcomes = evaluate(
        client,
        entries,
        env_options=env_options,
        concurrency=concurrency,
        on_done=lambda _: next(bar, None),
    )
    for _ in bar:
        pass
    metrics = summarize(outcomes)
    out_dir.mkdir(parents=True, exist_ok=True)
    files = write_bfcl_results(outcomes, out_dir / "result", label)
    detail = out_dir / "outcomes.jsonl"
    with detail.open("w", encoding="utf-8") as handle:
        for o in outcomes:
            record = {
                "id": o.entry_id,
                "category": o.category,
                "valid": o.valid,
                "progress": o.progress,
                "error_type": o.error_type,
                "turn_scores": o.info["turn_scores"],
                "format_errors": o.info["format_errors"],
                "tool_calls": o.info["tool_calls"],
                "tool_errors": o.info["tool_errors"],
            }
            handle.write(json.dumps(record) + "\n")
    outputs = {"outcomes": detail, **{f"bfcl_{p.stem}": p for p in files}}
    plot = plot_accuracy(metrics, out_dir / "accuracy.png")
    section = accuracy_table(metrics)
    if plot is not None:
        outputs["accuracy_plot"] = plot
        section += f"\n![accuracy]({plot.relative_to(run.dir).as_posix()})\n"
    run.add_section("BFCL multi-turn", section)
    run.log({k: v for k, v in metrics.items() if k != "entries"})
    return metrics, outputs


def evaluate_held_out(
    model_path: str,
    split: Split,
    per_category: int,
    validation: ValidationConfig,
    env: EnvConfig,
    *,
    style: str,
    out_dir: Path,
    run: Run,
) -> tuple[dict[str, float], dict[str, Path]]:
    """The curriculum's final evaluation of a local checkpoint on held-out entries."""
    ids = [
        i
        for c in CATEGORIES
        for i in (
            split.of("held_out", [c])[:per_category]
            if per_category > 0
            else split.of("held_out", [c])
        )
    ]
    llm = LLMConfig(
        provider="local",
        model=model_path,
        temperature=validation.temperature,
        max_tokens=validation.max_tokens,
        max_batch_size=validation.max_batch_size,
        device=validation.device,
    )
    options = {
        "augmentation": False,
        "max_steps_per_turn": validation.max_steps_per_turn,
        "prompt_style": style,
        "tool_docs": env.tool_docs,
        "think_tag": env.think_tag,
    }
    return run_evaluation(
        llm, ids, options, concurrency=validation.concurrency, out_dir=out_dir, run=run
    )


def run(cfg: EvalConfig, run: Run) -> RunResult:
    ids = _entry_ids(cfg)
    if not ids:
        raise ValueError("no entries to evaluate: check categories and entries_per_category")
    (run.dir / "entries.json").write_text(json.dumps(ids), encoding="utf-8")
    options = {
        "augmentation": False,
        "max_steps_per_turn": cfg.env.max_steps_per_turn,
        "prompt_style": cfg.env.prompt_style,
        "tool_docs": cfg.env.tool_docs,
        "think_tag": cfg.env.think_tag,
    }
    metrics, outputs = run_evaluation(
        cfg.llm,
        ids,
        options,
        concurrency=cfg.concurrency,
        out_dir=run.dir,
        run=run,
        ground_truth=cfg.agent == "ground_truth",
    )
    return RunResult(metrics=metrics, outputs=outputs)
