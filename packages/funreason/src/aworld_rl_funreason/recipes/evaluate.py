"""``funreason.eval``: BFCL single-turn accuracy of a model (or of the ground truth itself).

``protocol=bfcl`` (default) is the leaderboard's: BFCL's prompting-mode messages byte for byte
(its system prompt over the docs with their language note; Java / JavaScript parameters as
strings), one greedy reply per entry, judged as written (a server's reasoning channel is set
aside). ``protocol=funreason`` is the paper's: the same prompts, everything through ``</think>``
stripped, ``num_samples`` samples at the generator's temperature. Categories: every single-turn
category, python, Java and JavaScript included; BFCL's aggregates beside FunReason's overall.
Outputs: ``outputs.jsonl`` (every sample, resumable), BFCL result files under
``bfcl/result/<model>/`` with ``bfcl/scores.json`` (what ``bfcl evaluate --partial-eval`` must
reproduce), ``scores.json`` and a report table.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from dataclasses import dataclass
from typing import Any, Literal

from aworld_rl_core.config import limit_option, option
from aworld_rl_core.llm import make_client
from aworld_rl_core.llm.config import LLMConfig
from aworld_rl_core.runs import Run, RunResult
from aworld_rl_core.tooluse.bfcl.loader import RELEVANCE_CATEGORIES, SINGLE_TURN_CATEGORIES
from aworld_rl_core.tooluse.bfcl.results import DEFAULT_MODEL
from aworld_rl_funreason.evaluation import CategoryScore, aggregate, format_table, strip_reasoning
from aworld_rl_funreason.hdr import sample_seed
from aworld_rl_funreason.paths import model_source

CATEGORIES = SINGLE_TURN_CATEGORIES + RELEVANCE_CATEGORIES
PROTOCOLS = {
    "bfcl": "BFCL's prompting protocol (the leaderboard's: BFCL prompts with the language note, "
    "one greedy reply judged as written)",
    "funreason": "FunReason's protocol (BFCL prompts, reasoning through </think> stripped, "
    "the generator's sampling)",
}


@dataclass(frozen=True, kw_only=True)
class EvalConfig:
    """BFCL single-turn evaluation."""

    protocol: Literal["bfcl", "funreason"] = option(
        "bfcl",
        help="bfcl: the leaderboard's (one greedy reply, judged as written); funreason: the "
        "paper's (strip through </think>, num_samples at the generator's temperature)",
    )
    categories: tuple[str, ...] = option(
        CATEGORIES, help="BFCL single-turn categories (AST in python/Java/JS, (ir)relevance)"
    )
    limit: int | None = limit_option("first N entries per category")
    source: Literal["model", "ground_truth"] = option(
        "model",
        help=(
            "model: generate with `generator`; ground_truth: score BFCL's answers rendered as "
            "model output (checks the pipeline: 100% but for unsatisfiable possible answers)"
        ),
    )
    generator: LLMConfig = option(
        factory=lambda: LLMConfig(
            provider="openai", model="Bingguang/FunReason", temperature=0.0, max_tokens=4096
        ),
        help=(
            "the model under test: an OpenAI-compatible endpoint (vLLM, any API) or "
            "provider=local (a local path, or tiny:qwen3)"
        ),
    )
    num_samples: int = option(
        1, help="samples per entry; accuracy is their mean (protocol=funreason; v3: 3 at T=0.7)"
    )
    missing_categories: Literal["skip", "zero"] = option(
        "skip",
        help="aggregate over evaluated categories (skip) or count missing as 0 (BFCL)",
    )
    positional: Literal["drop", "bind", "reject"] = option(
        "drop", help="positional arguments: drop (BFCL's decoder), bind, reject"
    )
    result_model: str = option(
        DEFAULT_MODEL,
        help="model folder of the BFCL result files (a prompting model bfcl-eval has registered)",
    )
    concurrency: int = option(32, help="requests in flight")


def prompt_messages(entry: Any) -> list[dict[str, Any]]:
    """What BFCL's prompting handlers send: its system prompt over the entry's docs (with their
    language note) plus the entry's messages."""
    from aworld_rl_core.tooluse.bfcl import opening_messages

    return opening_messages(entry)


def ground_truth_text(entry: Any, protocol: str = "bfcl") -> str:
    """BFCL's first allowed answer as a reply (FunReason's protocol: reasoning, then the calls)."""
    from aworld_rl_core.tooluse.bfcl import ground_truth_text as answer
    from aworld_rl_funreason.data import render_target

    if protocol == "bfcl":
        return answer(entry)
    return render_target("Reference answer rendered from BFCL's possible answers.", answer(entry))


def answer_of(text: str, protocol: str) -> str:
    """The part of a reply that is judged (and written to the result file)."""
    return text if protocol == "bfcl" else strip_reasoning(text)


def _load_entries(cfg: EvalConfig) -> list[Any]:
    from aworld_rl_core.tooluse.bfcl import canonical_category, load_category

    entries = []
    for cat in cfg.categories:
        entries += load_category(canonical_category(cat), limit=cfg.limit)
    return entries


def _check(cfg: EvalConfig) -> None:
    from aworld_rl_core.tooluse.bfcl.results import check_leaderboard_data, check_model

    check_model(cfg.result_model)
    if cfg.protocol == "bfcl":
        check_leaderboard_data()
    if cfg.num_samples < 1:
        raise ValueError(f"num_samples must be >= 1, got {cfg.num_samples}")
    sampled = cfg.generator.temperature != 0.0 or cfg.num_samples != 1
    if cfg.protocol == "bfcl" and cfg.source == "model" and sampled:
        raise ValueError(
            "protocol=bfcl takes one greedy reply per entry, as the leaderboard does; got "
            f"generator.temperature={cfg.generator.temperature}, num_samples="
            f"{cfg.num_samples}: set them to 0 and 1, or use protocol=funreason to sample"
        )


async def _generate(
    cfg: EvalConfig, entries: list[Any], run: Run, counts: dict[str, Any]
) -> list[dict[str, Any]]:
    """The records of every (entry, sample); ``counts`` gets ``llm_calls`` / ``llm_errors``."""
    from aworld_rl_core.llm import account_llm_errors
    from aworld_rl_core.llm.jobs import run_jobs
    from aworld_rl_core.llm.jsonl_sink import JsonlSink
    from aworld_rl_core.tooluse.bfcl import judge_single_turn

    generator = cfg.generator
    if generator.provider == "local":  # a funreason.sft run directory: the model it wrote
        generator = dataclasses.replace(generator, model=model_source(generator.model))
    client = make_client(generator) if cfg.source == "model" else None
    jobs = [(e, k) for e in entries for k in range(cfg.num_samples)]

    async def job(item: tuple[Any, int]) -> dict[str, Any]:
        entry, k = item
        start, usage = time.perf_counter(), dict[str, int]()
        if client is None:
            text = ground_truth_text(entry, cfg.protocol)
        else:
            seed = sample_seed(k, cfg.num_samples, cfg.generator.seed)  # n distinct requests
            completion = await client.chat(prompt_messages(entry), **seed)
            text, usage = completion.text or "", completion.usage or {}
        latency = time.perf_counter() - start
        answer = answer_of(text, cfg.protocol)
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
            "input_token_count": int(usage.get("prompt_tokens", 0)),
            "output_token_count": int(usage.get("completion_tokens", 0)),
            "latency": latency,
        }

    path = run.dir / "outputs.jsonl"
    try:
        with JsonlSink(path, key="key", fsync="close") as sink:
            items = run.progress(jobs, total=len(jobs), desc="BFCL")
            report = await run_jobs(
                items, job, sink, concurrency=cfg.concurrency, key=lambda j: f"{j[0].id}#{j[1]}"
            )
            account_llm_errors(counts, client, run=run)  # over llm.max_error_rate: fails
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
    from aworld_rl_core.tooluse.bfcl import canonical_category, version
    from aworld_rl_core.tooluse.bfcl.loader import file_prefix
    from aworld_rl_core.tooluse.bfcl.results import write_results, write_summary

    _check(cfg)
    categories = tuple(canonical_category(c) for c in cfg.categories)
    entries = _load_entries(dataclasses.replace(cfg, categories=categories))
    llm_counts: dict[str, Any] = {}
    records = asyncio.run(_generate(cfg, entries, run, llm_counts))
    scores = score_records(records, categories)
    agg = aggregate(scores, missing=cfg.missing_categories)

    first = [r for r in records if r["sample"] == 0]  # the result files hold the first sample
    fields = ("input_token_count", "output_token_count", "latency")
    rows = [{"id": r["id"], "result": r["answer"], **{k: r[k] for k in fields}} for r in first]
    bfcl_dir = run.dir / "bfcl"
    files = write_results(bfcl_dir / "result", cfg.result_model, rows)
    counts = {
        c: (sum(r["valid"] for r in first if r["category"] == c), scores[c].total) for c in files
    }
    n = cfg.limit
    summary = write_summary(
        bfcl_dir,
        model=cfg.result_model,
        protocol=cfg.protocol,
        counts=counts,
        entries=f"first {n} per category" if n else "all",
    )
    metrics: dict[str, Any] = {f"acc/{c}": s.accuracy for c, s in scores.items()}
    metrics.update({f"acc/{k}": v for k, v in agg.items() if v is not None})
    metrics.update(llm_counts)
    (run.dir / "scores.json").write_text(json.dumps(metrics, indent=2), encoding="utf-8")
    run.log(metrics)
    agent = "BFCL's ground truth" if cfg.source == "ground_truth" else cfg.generator.model
    samples = "" if cfg.num_samples == 1 else f", {cfg.num_samples} samples per entry (mean)"
    command = json.loads(summary.read_text(encoding="utf-8"))["command"]
    run.add_section(
        f"BFCL single-turn ({cfg.protocol} protocol)",
        f"Protocol: **{cfg.protocol}**, {PROTOCOLS[cfg.protocol]}. Agent: {agent}{samples}. "
        f"Data: bfcl-eval {version()} ({file_prefix()} files).\n\n"
        + format_table(scores, agg)
        + "\n\nOfficial scorer (in a venv with bfcl-eval and its dependencies; it scores the "
        f"first sample):\n\n```\n{command}\n```\n",
    )
    return RunResult(
        metrics=metrics,
        outputs={
            "outputs": run.dir / "outputs.jsonl",
            "scores": run.dir / "scores.json",
            "bfcl_scores": summary,
            **{f"bfcl_{c}_result": p for c, p in files.items()},
        },
    )
