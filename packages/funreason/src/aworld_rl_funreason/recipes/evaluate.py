"""``funreason.eval``: BFCL single-turn accuracy of a model (or of the ground truth itself).

Each entry is prompted with BFCL's prompting-mode system prompt; the reply loses everything
through ``</think>`` and is judged by core's AST judge. Outputs: ``outputs.jsonl`` (every sample,
resumable), BFCL result files under ``bfcl/result/<model>/`` (for ``bfcl evaluate``),
``scores.json`` and a report table.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Literal

from aworld_rl_core.config import option
from aworld_rl_core.llm import make_client
from aworld_rl_core.llm.config import LLMConfig
from aworld_rl_core.runs import Run, RunResult
from aworld_rl_funreason.evaluation import (
    LIVE,
    NON_LIVE,
    CategoryScore,
    aggregate,
    format_table,
    strip_reasoning,
    write_bfcl_results,
)

PYTHON_AST_CATEGORIES = ("simple_python", *NON_LIVE, *LIVE)


@dataclass(frozen=True, kw_only=True)
class EvalConfig:
    """BFCL single-turn evaluation as FunReason reports it."""

    categories: tuple[str, ...] = option(
        PYTHON_AST_CATEGORIES, help="BFCL single-turn categories to score"
    )
    limit: int | None = option(None, help="first N entries per category")
    source: Literal["model", "ground_truth"] = option(
        "model",
        help=(
            "model: generate with `generator`; ground_truth: score BFCL's answers rendered as "
            "model output (checks the pipeline: must give 100%)"
        ),
    )
    generator: LLMConfig = option(
        factory=lambda: LLMConfig(
            provider="openai", model="Bingguang/FunReason", temperature=0.7, max_tokens=4096
        ),
        help=(
            "the model under test: an OpenAI-compatible endpoint (vLLM, any API) or "
            "provider=local (a local path, or tiny:qwen3)"
        ),
    )
    num_samples: int = option(
        1,
        help="samples per entry; accuracy is their mean (v3 samples 3 at T=0.7)",
    )
    missing_categories: Literal["skip", "zero"] = option(
        "skip",
        help="aggregate over evaluated categories (skip) or count missing as 0 (BFCL)",
    )
    positional: Literal["drop", "bind", "reject"] = option(
        "drop", help="positional arguments: drop (BFCL's decoder), bind, reject"
    )
    result_model_name: str = option(
        "Qwen/Qwen3-8B",
        help="model folder of the BFCL result files (a name bfcl-eval has registered)",
    )
    concurrency: int = option(32, help="requests in flight")


def prompt_messages(entry: Any) -> list[dict[str, Any]]:
    """BFCL's system prompt (tool docs, python call-list format) plus the entry's messages."""
    from aworld_rl_core.tooluse.bfcl import with_system_prompt

    return with_system_prompt(entry.turns[0], entry.functions)


def ground_truth_text(entry: Any) -> str:
    """BFCL's first allowed answer written as a FunReason reply (reasoning, then the calls)."""
    from aworld_rl_core.tooluse.bfcl import ground_truth_calls
    from aworld_rl_funreason.data import render_target

    return render_target(
        "Reference answer rendered from BFCL's possible answers.", ground_truth_calls(entry)
    )


def _load_entries(cfg: EvalConfig) -> list[Any]:
    from aworld_rl_core.tooluse.bfcl import canonical_category, load_category

    entries = []
    for cat in cfg.categories:
        entries += load_category(canonical_category(cat), limit=cfg.limit)
    return entries


async def _generate(cfg: EvalConfig, entries: list[Any], run: Run) -> list[dict[str, Any]]:
    from aworld_rl_core.llm.jobs import run_jobs
    from aworld_rl_core.llm.jsonl_sink import JsonlSink
    from aworld_rl_core.tooluse.bfcl import judge_single_turn

    client = make_client(cfg.generator) if cfg.source == "model" else None
    jobs = [(e, k) for e in entries for k in range(cfg.num_samples)]

    async def job(item: tuple[Any, int]) -> dict[str, Any]:
        entry, k = item
        if client is None:
            text = ground_truth_text(entry)
        else:
            text = (await client.chat(prompt_messages(entry))).text
        answer = strip_reasoning(text)
        verdict = judge_single_turn(entry, answer, positional=cfg.positional)
        return {
            "key": f"{entry.id}#{k}",
            "id": entry.id,
            "category": entry.category,
            "sample": k,
            "output": text,
            "answer": answer,
            "valid": verdict.valid,
            "error_type": verdict.error_type,
            "reason": verdict.reason,
        }

    path = run.dir / "outputs.jsonl"
    try:
        with JsonlSink(path, key="key", fsync="close") as sink:
            items = run.progress(jobs, total=len(jobs), desc="BFCL")
            report = await run_jobs(
                items, job, sink, concurrency=cfg.concurrency, key=lambda j: f"{j[0].id}#{j[1]}"
            )
            if report.failed:
                raise RuntimeError(f"{len(report.failed)} generations failed: {report.failed}")
            done = {r["key"]: r for r in sink.records()}
            return [done[f"{e.id}#{k}"] for e, k in jobs]  # entry order, not finishing order
    finally:
        if client is not None:
            await client.aclose()


def score_records(
    records: list[dict[str, Any]], categories: tuple[str, ...]
) -> dict[str, CategoryScore]:
    """Per-category scores; each entry's credit is the mean validity over its samples."""
    per_entry: dict[tuple[str, str], list[bool]] = {}
    for r in records:
        per_entry.setdefault((r["category"], r["id"]), []).append(bool(r["valid"]))
    scores = {}
    for cat in categories:
        credits = [sum(v) / len(v) for (c, _), v in per_entry.items() if c == cat]
        scores[cat] = CategoryScore(cat, sum(credits), len(credits))
    return scores


def run(cfg: EvalConfig, run: Run) -> RunResult:
    """Generate (or render the ground truth), judge, aggregate, write BFCL result files."""
    from aworld_rl_core.tooluse.bfcl import canonical_category

    if cfg.num_samples < 1:
        raise ValueError(f"num_samples must be >= 1, got {cfg.num_samples}")
    categories = tuple(canonical_category(c) for c in cfg.categories)
    entries = _load_entries(dataclasses.replace(cfg, categories=categories))
    records = asyncio.run(_generate(cfg, entries, run))
    scores = score_records(records, categories)
    agg = aggregate(scores, missing=cfg.missing_categories)

    files = {}
    for cat in categories:
        rows = [
            (r["id"], r["answer"]) for r in records if r["category"] == cat and r["sample"] == 0
        ]
        files[f"bfcl_{cat}"] = write_bfcl_results(
            run.dir / "bfcl", cfg.result_model_name, cat, rows
        )
    metrics: dict[str, Any] = {f"acc/{c}": s.accuracy for c, s in scores.items()}
    metrics.update({f"acc/{k}": v for k, v in agg.items() if v is not None})
    (run.dir / "scores.json").write_text(json.dumps(metrics, indent=2), encoding="utf-8")
    run.log(metrics)
    run.add_section("BFCL single-turn", format_table(scores, agg))
    return RunResult(
        metrics=metrics,
        outputs={"outputs": run.dir / "outputs.jsonl", "scores": run.dir / "scores.json", **files},
    )
