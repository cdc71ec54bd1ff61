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

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from aworld_rl_core.config import option
from aworld_rl_core.llm.config import LLMConfig
from aworld_rl_funreason_mt.contamination import ContaminationIndex
from aworld_rl_funreason_mt.export import FORMATS
from aworld_rl_funreason_mt.recipes.common import GraphConfig, SpaceConfig
from aworld_rl_funreason_mt.synthesis import SynthesisConfig

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

    @property
    def enabled(self) -> bool:
        return bool(self.target_results or self.reference_results)


@dataclass(frozen=True, kw_only=True)
class SynthesizeConfig:
    """Phases I-III for ``records`` trajectories, with the exports."""

    records: int = option(
        16, help="trajectories to attempt (each one record of the pipeline)", ge=1
    )
    seed: int = option(0, help="base seed (each record's own seed comes from it and its key)")
    concurrency: int = option(8, help="records in flight", ge=1)
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
    exports: tuple[str, ...] = option(FORMATS, help=f"export formats ({', '.join(FORMATS)})")


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
    return ContaminationIndex.from_bfcl(n=cfg.ngram, max_overlap=cfg.max_overlap)


def hardgen_targets(cfg: HardGenConfig) -> list[str] | None:
    """The tools both models fail on (None: HardGen mode is off)."""
    if not cfg.enabled:
        return None
    if not (cfg.target_results and cfg.reference_results):
        raise ValueError("HardGen needs both hardgen.target_results and hardgen.reference_results")
    from aworld_rl_funreason_mt.hardgen import hard_tools

    tools = hard_tools(cfg.target_results, cfg.reference_results)
    if not tools:
        raise ValueError("HardGen: the two models fail on no common tool; nothing to aim at")
    return tools


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
