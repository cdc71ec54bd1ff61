"""Config pieces the FunReason-MT recipes share: the tool space and the graph."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Literal

from aworld_rl_core.config import limit_option, option
from aworld_rl_core.llm.config import LLMConfig
from aworld_rl_funreason_mt.data import DEMO_TRAJECTORIES
from aworld_rl_funreason_mt.graph import ToolGraph
from aworld_rl_funreason_mt.round_env import ToolDocs
from aworld_rl_funreason_mt.space import BFCL_CLASSES, ToolSpace


@dataclass(frozen=True, kw_only=True)
class TrajectoryData:
    """Synthesized data to train on."""

    path: str = option(
        DEMO_TRAJECTORIES,
        help="trajectories.jsonl of funreason_mt.synthesize (or its run directory, records or "
        "BFCL entries); the default is the packaged pipeline-demo data",
    )
    limit: int | None = limit_option("use only the first N trajectories")
    drop_error_responses: bool = option(
        False, help="leave out trajectories with constructed error responses (the card's advice)"
    )
    tool_docs: ToolDocs = option(
        "json", help="tools in the system prompt: json (BFCL docs, as synthesized) or compact"
    )
    held_out: float = option(
        0.1,
        help="share of the entries held out (a stable hash split of their ids): RL validates on "
        "them and funreason_mt.eval scores them; training never sees them",
        ge=0.0,
        le=0.9,
    )
    split_seed: int = option(0, help="seed of the held-out split")


@dataclass(frozen=True, kw_only=True)
class SpaceConfig:
    """The API classes tools come from and the initial states trajectories start in."""

    classes: tuple[str, ...] = option(BFCL_CLASSES, help="BFCL API classes of the tool space")
    held_out_classes: tuple[str, ...] = option(
        (), help="classes left out of synthesis (for a clean evaluation on them)"
    )
    scenarios: Literal["builtin", "bfcl"] = option(
        "builtin",
        help="initial states: builtin (the package's own) or bfcl (BFCL's multi_turn_base "
        "test states: a contamination risk, listed in the report)",
    )

    generated_states: int = option(
        12,
        help="initial states drawn per class by the package's seeded generators, added to the "
        "scenarios (0: the scenarios alone; the builtin pack holds 15 states in all)",
        ge=0,
    )
    states_seed: int = option(0, help="seed of the generated initial states")

    def build(self) -> ToolSpace:
        unknown = [c for c in self.held_out_classes if c not in self.classes]
        if unknown:
            raise ValueError(f"space.held_out_classes {unknown} are not in space.classes")
        kept = tuple(c for c in self.classes if c not in self.held_out_classes)
        if not kept:
            raise ValueError("space.held_out_classes leaves no class to synthesize with")
        return ToolSpace(
            kept,
            scenarios=self.scenarios,
            generated_states=self.generated_states,
            seed=self.states_seed,
        )


@dataclass(frozen=True, kw_only=True)
class GraphConfig:
    """How the environment-API graph is built (or which file it is read from)."""

    path: str = option("", help="a graph.json from funreason_mt.graph (empty: build it now)")
    probing: bool = option(True, help="execution probing (edges and refined constraints)")
    scenarios_per_class: int = option(2, help="initial states probed per class", ge=1)
    trials: int = option(3, help="grounded tries per probe", ge=1)
    sampling_seeds: int = option(
        3, help="sampler tries per tool when checking which targets it reaches", ge=1
    )
    llm_edges: bool = option(False, help="also ask an LLM for prerequisite pairs (per class)")
    llm: LLMConfig = option(factory=LLMConfig, help="the LLM asked when llm_edges is true")
    seed: int = option(0, help="seed of probing and of the reachability check")

    def build(self, space: ToolSpace) -> tuple[ToolGraph, dict[str, str]]:
        """The graph, and the classes whose LLM reply was unusable (class -> why)."""
        from aworld_rl_funreason_mt.discovery import build_graph, llm_edges

        if self.path:
            return ToolGraph.load(self.path).restricted(space.tools), {}
        extra, errors = [], {}
        if self.llm_edges:
            from aworld_rl_core.llm import make_client

            extra, errors = asyncio.run(_ask(llm_edges, space, make_client(self.llm)))
        graph = build_graph(
            space,
            probing=self.probing,
            scenarios_per_class=self.scenarios_per_class,
            trials=self.trials,
            seed=self.seed,
            sampling_seeds=self.sampling_seeds,
            extra_edges=extra,
        )
        return graph, errors


async def _ask(fn, space, client):
    try:
        return await fn(space, client)
    finally:
        await client.aclose()
