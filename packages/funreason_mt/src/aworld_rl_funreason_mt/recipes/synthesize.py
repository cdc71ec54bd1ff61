"""``funreason_mt.synthesize``: phases I-III on core's synthesis pipeline, then the exports.

Each record is one trajectory (its key fixes its seed). Its stages, in order, for each of the N
rounds: ``sample`` (the directed sampler's trace), ``tool`` (the tooling agent, regenerated with
the checks' feedback), ``query`` (the querying agent, likewise), ``guard`` (contamination),
``reason`` (one reasoning attempt per try, the critic's hint as the next try's feedback, up to
K_max); then ``replay`` (the BFCL-shaped entry must replay in a fresh episode). Kept
trajectories go to ``trajectories.jsonl`` as they finish (a killed run resumes with
``--resume``: finished records are skipped, the record in progress starts over), then to
``exports/`` (records, the per-turn split, sharegpt, verl parquet, BFCL files). The report has
the yields of every stage, the reasons records were dropped, the LLM calls and tokens per kept
trajectory, and the classes and tools the kept data uses.

Presets: ``demo`` serves the pipeline-demo oracle (:mod:`aworld_rl_funreason_mt.demo`, not a
model) from core's scripted OpenAI-compatible server, so a CPU run makes real, replayable
trajectories; ``tiny-cpu`` asks a tiny random local model (nothing passes: yields of 0);
``paper`` points the four agents at a vLLM endpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from aworld_rl_core.config import option
from aworld_rl_core.llm.config import LLMConfig
from aworld_rl_core.runs import Run, RunResult
from aworld_rl_funreason_mt.contamination import ContaminationIndex
from aworld_rl_funreason_mt.export import DEFAULT_FORMATS, FORMATS, write_exports
from aworld_rl_funreason_mt.figures import chain_figures, chain_table
from aworld_rl_funreason_mt.recipes.common import GraphConfig, SpaceConfig
from aworld_rl_funreason_mt.synthesis import Draft, Drop, Retry, SynthesisConfig, Synthesizer
from aworld_rl_funreason_mt.trajectory import Trajectory

ROLES = ("tooling", "querying", "reasoning", "critiquing")


@dataclass(frozen=True, kw_only=True)
class AgentsConfig:
    """The four agents' LLM (HardGen: one model, Qwen3-30B-A3B-Thinking, for all four); a role
    given its own model overrides ``llm``."""

    llm: LLMConfig = option(factory=LLMConfig, help="the model of every agent")
    tooling: LLMConfig | None = option(None, help="the tooling agent's own model (optional)")
    querying: LLMConfig | None = option(None, help="the querying agent's own model (optional)")
    reasoning: LLMConfig | None = option(None, help="the reasoning agent's own model (optional)")
    critiquing: LLMConfig | None = option(None, help="the critic's own model (optional)")

    def of(self, role: str) -> LLMConfig:
        return getattr(self, role) or self.llm


@dataclass(frozen=True, kw_only=True)
class DemoConfig:
    """The pipeline demo: the oracle of ``aworld_rl_funreason_mt.demo`` instead of a model."""

    enabled: bool = option(
        False,
        help="serve the demo oracle (answers from the trace; a pipeline demo, not a model) on a "
        "local scripted OpenAI-compatible server, and point every agent at it",
    )
    latency_s: float = option(0.0, help="seconds the demo server waits before each answer", ge=0)


@dataclass(frozen=True, kw_only=True)
class GuardConfig:
    """The contamination guard against BFCL's test set."""

    enabled: bool = option(True, help="check every round against BFCL's multi-turn test entries")
    ngram: int = option(5, help="word n-gram length of the overlap check", ge=1)
    max_overlap: float = option(
        0.5, help="share of a query's n-grams found in one BFCL question that flags it", gt=0, le=1
    )
    max_reverse_overlap: float = option(
        0.5,
        help="share of one BFCL question's n-grams found in a query that flags it (a question "
        "padded with context)",
        gt=0,
        le=1,
    )
    near_min_calls: int = option(
        2,
        help="ground truth one call longer or shorter than a BFCL turn is flagged when the shorter "
        "of the two has at least this many calls (the same calls in any order always are)",
        ge=1,
    )
    action: Literal["drop", "flag"] = option(
        "drop", help="drop flagged rounds (the record), or keep them and list them in the report"
    )


@dataclass(frozen=True, kw_only=True)
class HardGenConfig:
    """HardGen: aim at the tools both a target and a reference model fail on."""

    target_results: str = option(
        "", help="BFCL multi-turn result (or score) files of the target model (e.g. Qwen3-4B)"
    )
    reference_results: str = option(
        "", help="the same for the reference model (e.g. Llama-3.2-3B-Instruct)"
    )

    test_informed: bool = option(
        False,
        help="allow choosing targets from BFCL test results (HardGen's reading): the chosen tools "
        "come from the test set the data is then evaluated on; off by default",
    )

    @property
    def enabled(self) -> bool:
        return bool(self.target_results or self.reference_results)


@dataclass(frozen=True, kw_only=True)
class SynthesizeConfig:
    """Phases I-III for ``records`` trajectories, with the exports."""

    records: int = option(
        16,
        help="trajectories to attempt (each one record of the pipeline; a --resume may raise it)",
        ge=1,
        resumable=True,
    )
    seed: int = option(0, help="base seed (each record's own seed comes from it and its key)")
    concurrency: int = option(8, help="records in flight", ge=1, resumable=True)
    space: SpaceConfig = option(factory=SpaceConfig, help="API classes and initial states")
    graph: GraphConfig = option(factory=GraphConfig, help="the environment-API graph")
    synthesis: SynthesisConfig = option(factory=SynthesisConfig, help="phases I-III")
    agents: AgentsConfig = option(factory=AgentsConfig, help="the four agents' models")
    demo: DemoConfig = option(factory=DemoConfig, help="the pipeline demo oracle")
    guard: GuardConfig = option(factory=GuardConfig, help="contamination guard")
    hardgen: HardGenConfig = option(factory=HardGenConfig, help="failure-driven targets")
    stage_attempts: int = option(
        3, help="tries of the tooling and querying stages before a record is dropped", ge=1
    )
    exports: tuple[str, ...] = option(
        DEFAULT_FORMATS, help=f"export formats ({', '.join(FORMATS)})"
    )


@contextlib.contextmanager
def demo_endpoint(cfg: DemoConfig) -> Iterator[str | None]:
    """The demo oracle's base URL while it serves (None when the demo is off)."""
    if not cfg.enabled:
        yield None
        return
    from aworld_rl_core.llm.scripted_server import ScriptedLLMServer
    from aworld_rl_funreason_mt.demo import DemoOracle

    with ScriptedLLMServer(
        DemoOracle(), latency_s=cfg.latency_s, model="funreason-mt-demo-oracle"
    ) as server:
        yield server.base_url


def agent_configs(cfg: SynthesizeConfig, demo_url: str | None) -> dict[str, LLMConfig]:
    """Each role's LLM config (all pointed at the demo oracle when it serves)."""
    from dataclasses import replace

    out = {}
    for role in ROLES:
        llm = cfg.agents.of(role)
        if demo_url is not None:
            llm = replace(
                llm,
                provider="openai",
                base_url=demo_url,
                model="funreason-mt-demo-oracle",
                cache_dir=None,
            )
        out[role] = llm
    return out


def contamination_index(cfg: GuardConfig) -> ContaminationIndex | None:
    if not cfg.enabled:
        return None
    return ContaminationIndex.from_bfcl(
        n=cfg.ngram,
        max_overlap=cfg.max_overlap,
        max_reverse_overlap=cfg.max_reverse_overlap,
        near_min_calls=cfg.near_min_calls,
    )


def hardgen_targets(cfg: HardGenConfig) -> list[str] | None:
    """The tools both models fail on (None: HardGen mode is off)."""
    if not cfg.enabled:
        return None
    if not cfg.test_informed:
        raise ValueError(
            "hardgen.target_results / reference_results pick targets from BFCL test results, "
            "which leaks the test set into data evaluated on BFCL; set hardgen.test_informed=true "
            "to do it anyway (HardGen's reading), or give results on data that is not BFCL's"
        )
    if not (cfg.target_results and cfg.reference_results):
        raise ValueError("HardGen needs both hardgen.target_results and hardgen.reference_results")
    from aworld_rl_funreason_mt.hardgen import hard_tools

    tools = hard_tools(cfg.target_results, cfg.reference_results)
    if not tools:
        raise ValueError("HardGen: the two models fail on no common tool; nothing to aim at")
    return tools


def guard_table(index: ContaminationIndex, stats: Any, kept: list[Any]) -> str:
    """The guard's figures: what it indexed, its thresholds, what it dropped and flagged."""
    from collections import Counter

    from aworld_rl_funreason_mt.contamination import FLAG_KINDS

    dropped: Counter[str] = Counter()
    for y in stats.stages.values():
        for reason, n in y.failed.items():
            if "contaminated:" in reason:  # "dropped: contaminated:<kind>"
                dropped[reason.split("contaminated:", 1)[1].strip()] += n
    flagged = Counter(f["kind"] for t in kept for r in t.rounds for f in r.flags)
    questions, sequences = index.size
    lines = [
        f"Indexed: {questions} questions and {sequences} distinct ground-truth turns of every "
        f"BFCL multi-turn category; flags at query-in-question >= {index.max_overlap}, "
        f"question-in-query >= {index.max_reverse_overlap} ({index.n}-grams), equal calls in "
        f"order or as a set, one call more or fewer (shorter side >= {index.near_min_calls}).",
        "",
        "| flag | rounds dropped | kept rounds flagged |",
        "|---|---|---|",
    ]
    lines += [f"| {k} | {dropped.get(k, 0)} | {flagged.get(k, 0)} |" for k in FLAG_KINDS]
    return "\n".join(lines) + "\n"


def usage_table(trajectories: list[Any]) -> str:
    """The classes and tools the kept trajectories use (the contamination report)."""
    from collections import Counter

    classes: Counter[str] = Counter()
    tools: Counter[str] = Counter()
    for t in trajectories:
        classes.update(t.classes)
        tools.update(c.tool for r in t.rounds for c in r.trace.calls)
    lines = ["| class | trajectories |", "|---|---|"] + [
        f"| {c} | {n} |" for c, n in sorted(classes.items())
    ]
    lines += ["", "| tool | calls |", "|---|---|"] + [
        f"| `{t}` | {n} |" for t, n in tools.most_common()
    ]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# The pipeline: one record per trajectory
# ---------------------------------------------------------------------------------------------

PIPELINE_FILE = "synthesis.jsonl"
TRAJECTORIES_FILE = "trajectories.jsonl"


def append_trajectory(path: Path, trajectory: Trajectory) -> None:
    """One kept trajectory appended to ``path`` the moment it passes (flushed to disk)."""
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(trajectory.to_dict()) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def record_stages(
    synth: Synthesizer,
    cfg: SynthesizeConfig,
    on_kept: Callable[[Trajectory], None] | None = None,
) -> list[Any]:
    """The stages of every record: ``draft``, then five per round, then ``replay`` (which hands
    a kept trajectory to ``on_kept``)."""
    from aworld_rl_core.pipeline import Failed, Passed, Regenerate, Stage

    async def start(item: Mapping[str, Any], ctx: Any) -> Any:
        return Passed(synth.draft(str(item["key"])))

    def step(run: Callable[[Draft, Any], Awaitable[None]]) -> Callable[..., Awaitable[Any]]:
        async def stage(draft: Draft, ctx: Any) -> Any:
            try:
                await run(draft, ctx)
            except Drop as drop:
                draft.detail = drop.detail
                return Failed(drop.reason)
            except Retry as retry:
                if ctx.last_attempt:
                    draft.detail = retry.feedback
                    return Failed(retry.reason)
                return Regenerate(retry.feedback)
            return Passed(draft)

        return stage

    async def sample(draft: Draft, ctx: Any) -> None:
        synth.sample(draft)

    async def tool(draft: Draft, ctx: Any) -> None:
        await synth.make_tool(draft, ctx.client("tooling"), ctx.feedback or "")

    async def query(draft: Draft, ctx: Any) -> None:
        await synth.make_query(draft, ctx.client("querying"), ctx.feedback or "")

    async def guard(draft: Draft, ctx: Any) -> None:
        synth.guard(draft)

    async def reason(draft: Draft, ctx: Any) -> None:
        await synth.reason(draft, ctx.client("reasoning"), ctx.client("critiquing"))

    async def finish(draft: Draft, ctx: Any) -> None:
        draft.kept = synth.finish(draft)
        if on_kept is not None:
            on_kept(draft.kept)

    stages = [Stage("draft", start)]
    for r in range(1, cfg.synthesis.rounds + 1):
        stages += [
            Stage(f"round{r}/sample", step(sample)),
            Stage(f"round{r}/tool", step(tool), attempts=cfg.stage_attempts),
            Stage(f"round{r}/query", step(query), attempts=cfg.stage_attempts),
            Stage(f"round{r}/guard", step(guard)),
            Stage(f"round{r}/reason", step(reason), attempts=cfg.synthesis.k_max),
        ]
    return [*stages, Stage("replay", step(finish))]


def serialize(item: Any) -> Any:
    """A finished record's JSON: the trajectory, or where it stopped (its sessions released)."""
    if isinstance(item, Draft):
        item.close()
        return item.summary()
    return item


def make_clients(configs: Mapping[str, LLMConfig]) -> tuple[dict[str, Any], list[Any]]:
    """One client per distinct config, shared by the roles that use it; (by role, all)."""
    from aworld_rl_core.llm import make_client

    built: dict[str, Any] = {}
    by_role = {}
    for role, llm in configs.items():
        ident = repr(llm)
        if ident not in built:
            built[ident] = make_client(llm)
        by_role[role] = built[ident]
    return by_role, list(built.values())


async def run_pipeline(
    synth: Synthesizer,
    cfg: SynthesizeConfig,
    configs: Mapping[str, LLMConfig],
    items: Iterable[Mapping[str, Any]],
    path: Path,
    on_kept: Callable[[Trajectory], None] | None = None,
    counts: dict[str, Any] | None = None,
) -> Any:
    """Every record through its stages into ``path`` (resumable); the pipeline's report.
    ``counts`` gets ``llm_calls`` / ``llm_errors``; too many failed calls fail the run."""
    from aworld_rl_core.llm import account_llm_errors
    from aworld_rl_core.pipeline import Pipeline

    clients, owned = make_clients(configs)
    stages = record_stages(synth, cfg, on_kept)
    pipeline = Pipeline(
        stages, clients=clients, key="key", seed=cfg.seed, serialize=serialize, seed_calls=True
    )
    try:
        report = await pipeline.run(items, path, concurrency=cfg.concurrency)
        account_llm_errors(counts, *owned)
        return report
    finally:
        for client in owned:
            await client.aclose()


def yields_by_kind(stats: Any) -> str:
    """The per-stage yields summed over rounds (``round2/tool`` counts as ``tool``)."""
    from aworld_rl_core.pipeline import StageYield

    kinds: dict[str, Any] = {}
    for name, y in stats.stages.items():
        kind = name.split("/", 1)[-1]
        into = kinds.setdefault(kind, StageYield())
        into.entered += y.entered
        into.passed_at.update(y.passed_at)
        into.failed.update(y.failed)
        into.regenerated += y.regenerated
        into.calls += y.calls
        into.tokens += y.tokens
    summed = type(stats)(stages=kinds)
    return summed.table()


DEMO_NOTE = (
    "**PIPELINE DEMO.** The four agents were answered by the demo oracle "
    "(`aworld_rl_funreason_mt.demo`), which reads the answer off the trace: the queries and the "
    "reasoning are scripted, not model output. The trajectories are real (executed, replayed, "
    "judged) but are no training data.\n"
)


def run(cfg: SynthesizeConfig, run: Run) -> RunResult:
    """Build the graph, run the pipeline, write the kept trajectories, the exports, the report."""
    space = cfg.space.build()
    graph, llm_errors = cfg.graph.build(space)
    outputs = {"graph": graph.save(run.dir / "graph.json")}
    synth = Synthesizer(
        space,
        graph,
        cfg.synthesis,
        guard=contamination_index(cfg.guard),
        guard_action=cfg.guard.action,
        targets=hardgen_targets(cfg.hardgen),
        seed=cfg.seed,
    )
    items = [{"key": f"trajectory-{i:06d}"} for i in range(cfg.records)]
    counts: dict[str, Any] = {}
    with demo_endpoint(cfg.demo) as url:
        configs = agent_configs(cfg, url)
        progress = run.progress(items, total=len(items), desc="trajectories")
        path = run.dir / TRAJECTORIES_FILE
        path.touch()
        report = asyncio.run(
            run_pipeline(
                synth,
                cfg,
                configs,
                progress,
                run.dir / PIPELINE_FILE,
                on_kept=lambda t: append_trajectory(path, t),
                counts=counts,
            )
        )
    kept = [Trajectory.from_dict(r["item"]["trajectory"]) for r in report.records if r["passed"]]
    # the pipeline's file is the record of what passed: written in record order, the appended
    # file loses a line torn by a kill and the duplicate of a record redone after it
    path.write_text("".join(json.dumps(t.to_dict()) + "\n" for t in kept), encoding="utf-8")
    outputs["trajectories"] = path
    outputs["pipeline"] = run.dir / PIPELINE_FILE
    outputs.update(write_exports(kept, run.dir / "exports", formats=cfg.exports))
    stats = report.stats
    if cfg.demo.enabled:
        run.add_section("Pipeline demo", DEMO_NOTE)
    run.add_section("Yields by stage kind (all rounds)", yields_by_kind(stats) + "\n")
    run.add_section("Yields by stage", stats.table() + "\n")
    run.add_section("Classes and tools of the kept trajectories", usage_table(kept))
    owners = {name: tool.cls for name, tool in space.tools.items()}
    chains = chain_figures(kept, owners)
    run.add_section("Chains and initial states of the kept rounds", chain_table(chains))
    flagged = sum(bool(r.flags) for t in kept for r in t.rounds)
    if synth.guard_index is not None:
        run.add_section("Contamination guard", guard_table(synth.guard_index, stats, kept))
    if llm_errors:
        lines = "\n".join(f"- {c}: {e}" for c, e in llm_errors.items())
        run.add_section("Graph: LLM replies left out", lines + "\n")
    metrics = {
        "attempted": float(stats.records),
        "kept": float(len(kept)),
        "yield": len(kept) / stats.records if stats.records else 0.0,
        "calls_per_kept": stats.to_dict()["calls_per_kept"],
        "tokens_per_kept": stats.to_dict()["tokens_per_kept"],
        "error_tool_response": float(sum(t.error_tool_response for t in kept)),
        "contamination_flags": float(flagged),
        "skipped_done": float(report.jobs.skipped),
        **{f"chains/{k}": v for k, v in chains.items()},
        **counts,
    }
    run.log(metrics)
    return RunResult(metrics=metrics, outputs=outputs)
