"""``funreason.self-refine``: improve the SFT model with its own answers.

``mode=v1`` (FunReason self-refinement): each round the current model answers the training
queries, FCDR filters the answers, and the model is fine-tuned again on what passed.
``mode=v3`` (BalanceSFT hard-data re-sampling): each round the model answers the hard-pool
queries, a panel of judges votes on every answer, accepted answers become new training data,
the queries they answer leave the pool, and the model is fine-tuned on the new data only (or
with replay); it stops when the pool is empty or after ``t_max`` rounds.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from aworld_rl_core.atomic import write_atomic
from aworld_rl_core.config import limit_option, option
from aworld_rl_core.llm.config import LLMConfig
from aworld_rl_core.models.config import ModelConfig
from aworld_rl_core.runs import Run, RunResult
from aworld_rl_core.trainer_config import TrainerConfig
from aworld_rl_funreason.data import FcSample, read_samples, write_jsonl
from aworld_rl_funreason.paths import model_source, resolve_path
from aworld_rl_funreason.recipes.refine import FcdrConfig, fcdr_settings
from aworld_rl_funreason.recipes.sft import SftDataConfig, SftRecipeConfig, paper_trainer

ROUND_STATE = "round_state.json"
"""Written when a round ends; ``--resume`` skips the rounds that have one."""


def _default_judges() -> tuple[LLMConfig, ...]:
    return tuple(
        LLMConfig(model=name, temperature=0.7, max_tokens=4096)
        for name in ("gemini-2.5-pro", "gpt-4o", "claude-3-5-sonnet")
    )


@dataclass(frozen=True, kw_only=True)
class SelfRefineDataConfig:
    """Where the queries come from."""

    path: str = option(
        "",
        help="training samples: v1 samples their queries; v3 replays them if asked",
    )
    hard_path: str = option("", help="v3: the hard pool (hard.jsonl of funreason.refine)")
    limit: int | None = limit_option("use only the first N of each file")
    prompt: Literal["bfcl", "chat_tools"] = option(
        "bfcl", help="prompt format for sampling and training"
    )


@dataclass(frozen=True, kw_only=True)
class SelfRefineConfig:
    """Self-refinement (v1) or hard-data re-sampling (v3) around SRML SFT."""

    mode: Literal["v1", "v3"] = option(
        "v1",
        help="v1: FCDR-filtered self-refinement; v3: HDR over the hard pool",
    )
    data: SelfRefineDataConfig = option(factory=SelfRefineDataConfig, help="data")
    model: ModelConfig = option(
        factory=lambda: ModelConfig(name_or_path="Qwen/Qwen2.5-Coder-7B-Instruct"),
        help="the starting model M_0: the funreason.sft run directory (its final model, "
        "wherever the backend wrote it) or a model directory / hub id",
    )
    rounds: int = option(1, help="v1: self-refinement rounds", ge=1, resumable=True)
    t_max: int = option(10, help="v3: at most this many re-sampling rounds", ge=1, resumable=True)
    num_samples: int = option(3, help="answers sampled per query per round")
    sampler: LLMConfig = option(
        factory=lambda: LLMConfig(provider="local", temperature=0.7, max_tokens=4096),
        help=(
            "how the current model samples; provider=local loads each round's model (its "
            "'model' is replaced), provider=openai queries a server you point at it"
        ),
    )
    fcdr: FcdrConfig = option(factory=FcdrConfig, help="v1: the FCDR filter")
    judge: LLMConfig = option(
        factory=lambda: LLMConfig(model="Qwen/QwQ-32B", temperature=0.6, max_tokens=8192),
        help="v1: the FCDR judge",
    )
    judges: tuple[LLMConfig, ...] = option(
        factory=_default_judges,
        help="v3: the judge panel (paper: Gemini-2.5-Pro, GPT-4o, Claude-3.5-Sonnet)",
    )
    threshold: float = option(0.5, help="v3: a judge passes an answer at >= tau")
    vote: Literal["unanimous", "majority"] = option(
        "unanimous",
        help="v3: keep when all judges pass (the paper's equation) or most (its prose)",
    )
    deterministic: bool = option(
        True, help="reject unparseable / schema-breaking answers without judges"
    )
    replay: bool = option(False, help="v3: also train on data.path each round (paper: new only)")
    trainer: TrainerConfig = option(
        factory=paper_trainer,
        help="SFT backend, loss (trainer.loss=funreason.srml) and optimisation for every round "
        "(default: funreason.sft's, max length and epochs included)",
    )
    concurrency: int = option(32, help="requests in flight")
    demo_sampler: bool = option(
        False,
        help="DEMO ONLY: sample from a scripted OpenAI-compatible server the recipe starts (each "
        "query's reference answer, every second one broken), not from the model: tries the loop "
        "on a CPU (aworld_rl_funreason.demo)",
    )


def _sampler_for(cfg: SelfRefineConfig, model_path: str) -> Any:
    from aworld_rl_core.llm import make_client

    sampler = cfg.sampler
    if sampler.provider == "local":
        sampler = dataclasses.replace(sampler, model=model_path)
    return make_client(sampler)


def _sft_config(cfg: SelfRefineConfig) -> SftRecipeConfig:
    return SftRecipeConfig(
        data=SftDataConfig(prompt=cfg.data.prompt, require_reasoning=False),
        model=cfg.model,
        trainer=cfg.trainer,
    )


async def _sample(
    cfg: SelfRefineConfig, model_path: str, queries: list[FcSample], path: Path | None = None
) -> list[Any]:
    from aworld_rl_funreason.hdr import sample_candidates

    client = _sampler_for(cfg, model_path)
    try:
        return await sample_candidates(
            client,
            queries,
            cfg.num_samples,
            prompt=cfg.data.prompt,
            concurrency=cfg.concurrency,
            seed=cfg.sampler.seed,
            path=path,
        )
    finally:
        await client.aclose()


def _verdict_key(c: Any) -> str:
    return f"{c.source.id}#{c.index}"


async def _filter_v1(
    cfg: SelfRefineConfig, candidates: list[Any], tag: str, path: Path | None = None
) -> list[FcSample]:
    """FCDR over the sampled answers; the ones that pass unchanged (an answer the judge would
    have to rewrite no longer matches the model's reasoning, so it is not used). With
    ``path`` the verdicts go to a resumable sink."""
    from aworld_rl_core.llm import account_llm_errors
    from aworld_rl_core.llm.factory import make_client
    from aworld_rl_funreason.fcdr.stages import refine_sample
    from aworld_rl_funreason.hdr import run_resumable

    judge = make_client(cfg.judge) if cfg.fcdr.judge == "llm" else None
    settings = dataclasses.replace(
        fcdr_settings(cfg.fcdr), generate_cot=False, answer_fail="hard_pool"
    )

    async def one(c: Any) -> dict[str, Any]:
        out = await refine_sample(c.as_sample(tag), judge, settings)
        kept = out.status == "kept" and bool(out.sample.reasoning)
        return {"kept": kept, "sample": out.sample.to_dict(), "reason": out.reason}

    try:
        verdicts = await run_resumable(candidates, _verdict_key, one, path, cfg.concurrency)
        account_llm_errors(None, judge)  # a judge whose calls failed: the run fails
    finally:
        if judge is not None:
            await judge.aclose()
    return [FcSample.from_dict(v["sample"]) for v in verdicts if v["kept"]]


async def _filter_v3(
    cfg: SelfRefineConfig, candidates: list[Any], tag: str, path: Path | None = None
) -> list[FcSample]:
    """Judge-panel vote; the first accepted answer per query (``path``: a resumable sink)."""
    from aworld_rl_core.llm.factory import make_client
    from aworld_rl_funreason.hdr import judge_candidate, run_resumable

    judges = [make_client(j) for j in cfg.judges]
    if not judges:
        raise ValueError("mode=v3 needs at least one judge in `judges`")

    async def one(c: Any) -> dict[str, Any]:
        kept, scores, why = await judge_candidate(
            c, judges, threshold=cfg.threshold, rule=cfg.vote, deterministic=cfg.deterministic
        )
        return {"kept": kept, "scores": scores, "reason": why}

    try:
        verdicts = await run_resumable(candidates, _verdict_key, one, path, cfg.concurrency)
    finally:
        for j in judges:
            await j.aclose()
    accepted: dict[str, FcSample] = {}
    for c, v in zip(candidates, verdicts, strict=True):
        if v["kept"] and c.source.id not in accepted:
            accepted[c.source.id] = c.as_sample(tag)
    return list(accepted.values())


def _train_round(
    cfg: SelfRefineConfig, run: Run, rnd: int, samples: list[FcSample], model_path: str
) -> tuple[str, float]:
    """SFT the current model on ``samples``; the new model's directory and its training loss."""
    from aworld_rl_funreason.recipes.sft import train_on_samples

    sub = Run(  # resumed: the round's training continues from its latest checkpoint
        run.dir / f"round-{rnd}", name=f"{run.name}/round-{rnd}", quiet=run.quiet, resume=run.resume
    )
    try:
        model = dataclasses.replace(cfg.model, name_or_path=model_path)
        result = train_on_samples(samples, _sft_config(cfg), sub, model=model)
    finally:
        sub.close()
    return str(result.outputs["model"]), float(result.metrics.get("train_loss", float("nan")))


def _read(spec: str, limit: int | None) -> list[FcSample]:
    return read_samples(resolve_path(spec), limit) if spec else []


def run(cfg: SelfRefineConfig, run: Run) -> RunResult:
    """Run the rounds; every round's new data and model land under ``round-<t>/``."""
    if not cfg.demo_sampler:
        return _rounds(cfg, run)
    from aworld_rl_core.llm.scripted_server import ScriptedLLMServer
    from aworld_rl_funreason.demo import MODEL, DemoSampler

    queries = _read(cfg.data.path, cfg.data.limit) + _read(cfg.data.hard_path, cfg.data.limit)
    with ScriptedLLMServer(DemoSampler(queries), model=MODEL) as server:
        sampler = dataclasses.replace(
            cfg.sampler, provider="openai", base_url=server.base_url, model=MODEL
        )
        run.add_section(
            "Demo sampler",
            "The answers were sampled from a SCRIPTED server (aworld_rl_funreason.demo: the "
            "references, every second one broken), not from the model.",
        )
        return _rounds(dataclasses.replace(cfg, sampler=sampler), run)


def _rounds(cfg: SelfRefineConfig, run: Run) -> RunResult:
    if cfg.num_samples < 1:
        raise ValueError(f"num_samples must be >= 1, got {cfg.num_samples}")
    train = _read(cfg.data.path, cfg.data.limit)
    pool = _read(cfg.data.hard_path, cfg.data.limit) if cfg.mode == "v3" else []
    if cfg.mode == "v1" and not train:
        raise ValueError("mode=v1 samples the training queries: set data.path")
    if cfg.mode == "v3" and not pool:
        raise ValueError("mode=v3 re-samples the hard pool: set data.hard_path")
    model_path = start = model_source(cfg.model.name_or_path)  # an SFT run: its final model
    max_rounds = cfg.rounds if cfg.mode == "v1" else cfg.t_max
    history: list[dict[str, Any]] = []
    for rnd in range(1, max_rounds + 1):
        queries = train if cfg.mode == "v1" else pool
        if not queries:
            break
        round_dir = run.dir / f"round-{rnd}"
        done = round_dir / ROUND_STATE
        if run.resume and done.is_file():  # a finished round of the run being resumed
            state = json.loads(done.read_text(encoding="utf-8"))
            model_path, stats = state["model_path"], state["stats"]
            pool = [q for q in pool if q.id in set(state["pool_ids"])]
            history.append(stats)
            continue
        tag = f"r{rnd}"
        # sampled answers and verdicts go to sinks: a killed round resumes without re-asking
        candidates = asyncio.run(_sample(cfg, model_path, queries, round_dir / "samples.jsonl"))
        filt = _filter_v1 if cfg.mode == "v1" else _filter_v3
        new = asyncio.run(filt(cfg, candidates, tag, round_dir / "verdicts.jsonl"))
        write_jsonl(round_dir / "new_samples.jsonl", [s.to_dict() for s in new])
        if cfg.mode == "v3":
            solved = {s.meta["sampled_from"] for s in new}
            pool = [q for q in pool if q.id not in solved]
            write_jsonl(round_dir / "hard_pool.jsonl", [q.to_dict() for q in pool])
        data = new + (train if cfg.mode == "v3" and cfg.replay and new else [])
        trained, loss = bool(new), float("nan")
        if trained:
            model_path, loss = _train_round(cfg, run, rnd, data, model_path)
        stats = {
            "round": rnd,
            "candidates": len(candidates),
            "accepted": len(new),
            "pool_left": len(pool) if cfg.mode == "v3" else 0,
            "trained": float(trained),
            "train_loss": loss,
        }
        history.append(stats)
        run.log({k: float(v) for k, v in stats.items() if k != "round"}, step=rnd)
        state = {"model_path": model_path, "stats": stats, "pool_ids": [q.id for q in pool]}
        write_atomic(done, json.dumps(state))
    lines = ["| round | sampled | accepted | pool left | trained |", "|---|---|---|---|---|"]
    lines += [
        f"| {h['round']} | {h['candidates']} | {h['accepted']} | {h['pool_left']} | "
        f"{'yes' if h['trained'] else 'no'} |"
        for h in history
    ]
    run.add_section(f"Self-refinement ({cfg.mode})", "\n".join(lines))
    metrics = {
        "rounds": float(len(history)),
        "accepted_total": float(sum(h["accepted"] for h in history)),
    }
    if cfg.mode == "v3":
        metrics["pool_left"] = float(len(pool))
    outputs = {"model": Path(model_path)} if model_path != start else {}
    return RunResult(metrics=metrics, outputs=outputs)
