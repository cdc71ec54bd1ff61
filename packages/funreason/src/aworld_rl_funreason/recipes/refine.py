"""``funreason.refine``: FCDR over a data file with an LLM judge (and teacher for missing CoT).

Writes ``fcdr/results.jsonl`` (one outcome per sample, resumable: a rerun with ``--resume``
skips finished samples), then ``kept.jsonl`` (qualified and statement samples), ``hard.jsonl``
and ``dropped.jsonl`` with per-stage reasons, and a count table in the report.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from aworld_rl_core.config import option
from aworld_rl_core.llm.config import LLMConfig
from aworld_rl_core.runs import Run, RunResult
from aworld_rl_funreason.data import FcSample, read_samples, write_jsonl
from aworld_rl_funreason.fcdr.pipeline import STAGES, FcdrSettings, Outcome, count_outcomes
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
    limit: int | None = option(None, help="use only the first N samples")


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
            "let the parser and tool schema decide where they can before asking the judge "
            "(false: the judge answers every stage, as in the paper)"
        ),
    )
    generate_cot: bool = option(
        True, help="write reasoning with the teacher for samples that lack it"
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
) -> list[Outcome]:
    """Refine ``samples`` into ``results_path`` (skipping ids already there); all outcomes."""
    from aworld_rl_core.llm.jobs import run_jobs
    from aworld_rl_core.llm.jsonl_sink import JsonlSink
    from aworld_rl_funreason.fcdr.pipeline import refine_sample

    ids = [s.id for s in samples]
    if len(set(ids)) != len(ids):
        dup = sorted({i for i in ids if ids.count(i) > 1})[:5]
        raise ValueError(f"sample ids must be unique (the sink is keyed by id); duplicates: {dup}")

    async def job(sample: FcSample) -> dict[str, Any]:
        out = await refine_sample(sample, judge, settings, teacher)
        return out.to_dict()

    wanted = set(ids)
    with JsonlSink(results_path, key="id", fsync="close") as sink:
        items = progress(samples) if progress else samples
        report = await run_jobs(items, job, sink, concurrency=concurrency, key=lambda s: s.id)
        if report.failed:
            raise RuntimeError(f"{len(report.failed)} samples failed: {report.failed}")
        done = {r["id"]: r for r in sink.records() if r["id"] in wanted}
        return [Outcome.from_dict(done[i]) for i in ids]  # input order, not finishing order


def _client(cfg: LLMConfig) -> Any:
    from aworld_rl_core.llm.factory import make_client

    return make_client(cfg)


def run(cfg: RefineConfig, run: Run) -> RunResult:
    """Refine ``cfg.data.path``; outputs under ``<run dir>/fcdr/``."""
    samples = read_samples(resolve_path(cfg.data.path), cfg.data.limit)
    settings = fcdr_settings(cfg.fcdr)
    out_dir = run.dir / "fcdr"
    out_dir.mkdir(parents=True, exist_ok=True)

    async def main() -> list[Outcome]:
        judge = _client(cfg.judge) if cfg.fcdr.judge == "llm" else None
        needs_teacher = settings.generate_cot and any(not s.reasoning for s in samples)
        teacher = _client(cfg.teacher) if needs_teacher else None
        try:
            return await refine_all(
                samples,
                judge,
                teacher,
                settings,
                out_dir / "results.jsonl",
                concurrency=cfg.concurrency,
                progress=lambda it: run.progress(it, total=len(samples), desc="FCDR"),
            )
        finally:
            for client in (judge, teacher):
                if client is not None:
                    await client.aclose()

    outcomes = asyncio.run(main())
    paths = split_outcomes(outcomes, out_dir)
    counts = count_outcomes(outcomes)
    run.add_section("FCDR outcomes", counts_table(counts))
    metrics: dict[str, Any] = {"samples": len(outcomes)}
    metrics.update({f"status/{k}": v for k, v in counts["status"].items()})
    metrics.update({f"stage/{k}": v for k, v in counts["stages"].items()})
    run.log(metrics)
    return RunResult(metrics=metrics, outputs={**paths, "results": out_dir / "results.jsonl"})
