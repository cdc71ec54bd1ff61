"""``funreason.refine``: FCDR over a data file with an LLM judge (and teacher for missing CoT).

Runs FCDR on core's pipeline (``aworld_rl_core.pipeline``) and writes ``fcdr/results.jsonl``
(one record per sample, resumable: a rerun with ``--resume`` skips finished samples), then
``kept.jsonl`` (qualified and statement samples), ``hard.jsonl`` and ``dropped.jsonl`` with per-
stage reasons, and a count table in the report.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from aworld_rl_core.config import limit_option, option
from aworld_rl_core.llm.config import LLMConfig
from aworld_rl_core.runs import Run, RunResult
from aworld_rl_funreason.data import FcSample, read_samples, write_jsonl
from aworld_rl_funreason.fcdr.stages import (
    STAGES,
    FcdrSettings,
    Outcome,
    StageRecord,
    count_outcomes,
)
from aworld_rl_funreason.paths import resolve_path


@dataclass(frozen=True, kw_only=True)
class RefineDataConfig:
    """Input samples."""

    path: str = option(
        "",
        help=(
            "JSON/JSONL of xLAM records {query, tools, answers} or FunReason samples; "
            "'package:rel/path' for packaged files"
        ),
    )
    limit: int | None = limit_option("use only the first N samples")


@dataclass(frozen=True, kw_only=True)
class FcdrConfig:
    """The five checks and what failing them does."""

    stages: tuple[str, ...] = option(STAGES, help=(f"stages to run, in order: {', '.join(STAGES)}"))
    judge: Literal["llm", "none"] = option(
        "llm",
        help=(
            "llm: ask the judge model; none: deterministic checks only (judge-only stages are "
            "skipped; nothing can be regenerated)"
        ),
    )
    deterministic: bool = option(
        True,
        help=(
            "run the parser and tool-schema checks before the judge (they pre-filter; "
            "rules_decide makes their passes final); false: the judge alone"
        ),
    )
    rules_decide: bool = option(
        False,
        help="a rule pass is final: a parseable call list passes stage 1 and a canonical one "
        "stage 5 without the judge (fewer calls); false: the rules only pre-filter (reject "
        "schema violations, rewrite the format) and the judge checks every stage (the paper)",
    )
    generate_cot: bool = option(
        True,
        help="write reasoning with the teacher for samples that lack it, and again after stage "
        "4 regenerates an answer",
    )
    cot_sees_reference: bool = option(
        False,
        help="show the teacher the reference answer (false: natural CoT, as the paper)",
    )
    answer_fail: Literal["regenerate", "hard_pool"] = option(
        "regenerate",
        help=(
            "failing the function/parameter or format check: regenerate the call (v1 FCDR) or "
            "send the sample to the hard pool (v3 answer check)"
        ),
    )
    judge_retries: int = option(1, help="re-ask the judge this many times when it gives no verdict")


@dataclass(frozen=True, kw_only=True)
class RefineConfig:
    """FCDR: classify, check query/tools, check CoT, fix function/parameters, fix format."""

    data: RefineDataConfig = option(factory=RefineDataConfig, help="input")
    fcdr: FcdrConfig = option(factory=FcdrConfig, help="refinement stages")
    judge: LLMConfig = option(
        factory=lambda: LLMConfig(model="Qwen/QwQ-32B", temperature=0.6, max_tokens=8192),
        help="the judge (paper: QwQ-32B served by vLLM)",
    )
    teacher: LLMConfig = option(
        factory=lambda: LLMConfig(model="Qwen/QwQ-32B", temperature=0.1, max_tokens=20480),
        help="the CoT teacher (paper: QwQ-32B at temperature 0.1)",
    )
    concurrency: int = option(32, help="samples refined at the same time")


def fcdr_settings(f: FcdrConfig) -> FcdrSettings:
    """The pipeline settings a config block describes."""
    return FcdrSettings(
        stages=tuple(f.stages),
        deterministic=f.deterministic,
        rules_decide=f.rules_decide,
        generate_cot=f.generate_cot,
        cot_sees_reference=f.cot_sees_reference,
        answer_fail=f.answer_fail,
        judge_retries=f.judge_retries,
    )


def split_outcomes(outcomes: list[Outcome], directory: Path) -> dict[str, Path]:
    """Write kept (with statements) / hard / dropped JSONL files; returns their paths."""
    groups: dict[str, list[dict[str, Any]]] = {"kept": [], "hard": [], "dropped": []}
    for out in outcomes:
        groups["kept" if out.status in ("kept", "statement") else out.status].append(out.to_dict())
    paths = {}
    for name, rows in groups.items():
        paths[name] = directory / f"{name}.jsonl"
        write_jsonl(paths[name], rows)
    return paths


def counts_table(counts: dict[str, Any]) -> str:
    """The report's markdown table of outcomes per stage."""
    lines = ["| stage | verdict | decided by | samples |", "|---|---|---|---|"]
    for key, n in counts["stages"].items():
        stage, verdict, by = key.split("/")
        lines.append(f"| {stage} | {verdict} | {by} | {n} |")
    lines += ["", "| status | samples |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in sorted(counts["status"].items())]
    return "\n".join(lines)


async def refine_all(
    samples: list[FcSample],
    judge: Any,
    teacher: Any,
    settings: FcdrSettings,
    results_path: Path,
    *,
    concurrency: int,
    progress: Any = None,
) -> tuple[list[Outcome], Any]:
    """Refine ``samples`` on core's pipeline into ``results_path`` (samples already there are
    skipped); every outcome, in input order, and the pipeline's per-stage yields."""
    from aworld_rl_funreason.fcdr.stages import FcdrItem, fcdr_pipeline, outcome_of

    ids = [s.id for s in samples]
    if len(set(ids)) != len(ids):
        dup = sorted({i for i in ids if ids.count(i) > 1})[:5]
        raise ValueError(f"sample ids must be unique (the sink is keyed by id); duplicates: {dup}")
    items = [FcdrItem(s) for s in samples]
    pipeline = fcdr_pipeline(settings, judge, teacher)
    report = await pipeline.run(progress(items) if progress else items, results_path,
                                concurrency=concurrency)  # fmt: skip
    done = {}
    for record in report.records:
        item = FcdrItem(
            FcSample.from_dict(record["item"]["sample"]), reason=record["item"]["reason"]
        )
        item.trail = [StageRecord(**r) for r in record["item"]["trail"]]
        done[record["key"]] = outcome_of(record["status"], item, record["reason"])
    return [done[i] for i in ids], report.stats  # input order, not finishing order


def _client(cfg: LLMConfig) -> Any:
    from aworld_rl_core.llm.factory import make_client

    return make_client(cfg)


def run(cfg: RefineConfig, run: Run) -> RunResult:
    """Refine ``cfg.data.path``; outputs under ``<run dir>/fcdr/``."""
    samples = read_samples(resolve_path(cfg.data.path), cfg.data.limit)
    settings = fcdr_settings(cfg.fcdr)
    out_dir = run.dir / "fcdr"
    out_dir.mkdir(parents=True, exist_ok=True)

    llm_counts: dict[str, Any] = {}

    async def main() -> tuple[list[Outcome], Any]:
        from aworld_rl_core.llm import account_llm_errors

        judge = _client(cfg.judge) if cfg.fcdr.judge == "llm" else None
        needs_teacher = settings.generate_cot and any(not s.reasoning for s in samples)
        teacher = _client(cfg.teacher) if needs_teacher else None
        try:
            done = await refine_all(
                samples,
                judge,
                teacher,
                settings,
                out_dir / "results.jsonl",
                concurrency=cfg.concurrency,
                progress=lambda it: run.progress(it, total=len(samples), desc="FCDR"),
            )
            # a judge that failed its calls is no judge: too many failures fail the run
            account_llm_errors(llm_counts, judge, teacher, run=run)
            return done
        finally:
            for client in (judge, teacher):
                if client is not None:
                    await client.aclose()

    outcomes, stats = asyncio.run(main())
    paths = split_outcomes(outcomes, out_dir)
    counts = count_outcomes(outcomes)
    run.add_section("FCDR outcomes", counts_table(counts))
    run.add_section("FCDR stage yields", stats.table())
    yields = stats.to_dict()
    metrics: dict[str, Any] = {
        "samples": len(outcomes),
        "llm_calls_per_kept": yields["calls_per_kept"],
        "tokens_per_kept": yields["tokens_per_kept"],
    }
    metrics.update({f"status/{k}": v for k, v in counts["status"].items()})
    metrics.update({f"stage/{k}": v for k, v in counts["stages"].items()})
    metrics.update(llm_counts)
    run.log(metrics)
    return RunResult(metrics=metrics, outputs={**paths, "results": out_dir / "results.jsonl"})
