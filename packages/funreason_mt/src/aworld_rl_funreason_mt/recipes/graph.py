"""``funreason_mt.graph``: build, save, draw and summarise the environment-API graph."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from aworld_rl_core.config import option
from aworld_rl_core.runs import Run, RunResult
from aworld_rl_funreason_mt.drawing import draw_graph
from aworld_rl_funreason_mt.graph import METHODS, ToolGraph
from aworld_rl_funreason_mt.recipes.common import GraphConfig, SpaceConfig


@dataclass(frozen=True, kw_only=True)
class GraphRecipeConfig:
    """The tool space and how its graph is found."""

    space: SpaceConfig = option(factory=SpaceConfig, help="API classes and initial states")
    graph: GraphConfig = option(factory=GraphConfig, help="edge discovery")
    draw: bool = option(True, help="write graph.png (needs matplotlib)")


def coverage_table(graph: ToolGraph) -> str:
    """Per class: tools, tools with prerequisites, edges by method, targets the sampler reaches."""
    unreached = set(graph.meta.get("unreached", ()))
    rows = [
        "| class | tools | with prerequisites | "
        + " | ".join(f"{m} edges" for m in METHODS)
        + " | reached as target |",
        "|---" * (4 + len(METHODS)) + "|",
    ]
    for cls in sorted(set(graph.tools.values())):
        tools = [t for t, c in graph.tools.items() if c == cls]
        methods = Counter(e.method for e in graph.edges if graph.tools[e.target] == cls)
        with_pre = sum(bool(graph.prerequisites(t)) for t in tools)
        reached = sum(t not in unreached for t in tools)
        cells = " | ".join(str(methods.get(m, 0)) for m in METHODS)
        rows.append(f"| {cls} | {len(tools)} | {with_pre} | {cells} | {reached} |")
    return "\n".join(rows) + "\n"


def run(cfg: GraphRecipeConfig, run: Run) -> RunResult:
    """Build (or load) the graph, write graph.json, graph.png and the coverage report."""
    space = cfg.space.build()
    graph, llm_errors = cfg.graph.build(space)
    path = graph.save(run.dir / "graph.json")
    outputs = {"graph": path}
    if cfg.draw:
        image = draw_graph(graph, run.dir / "graph.png", title="FunReason-MT environment-API graph")
        if image is not None:
            outputs["graph_image"] = image
    figures = graph.coverage()
    figures["unreached_targets"] = len(graph.meta.get("unreached", ()))
    run.add_section("Coverage", coverage_table(graph))
    lines = [
        f"- `{e.source}` -> `{e.target}` ({e.group}): {e.detail}" for e in graph.edges if e.hard
    ]
    run.add_section("Prerequisite edges", "\n".join(lines) + "\n")
    if graph.meta.get("unreached"):
        run.add_section(
            "Targets the sampler never reached",
            ", ".join(f"`{t}`" for t in graph.meta["unreached"]) + "\n",
        )
    if llm_errors:
        run.add_section(
            "LLM replies left out", "\n".join(f"- {c}: {e}" for c, e in llm_errors.items()) + "\n"
        )
    run.log(figures)
    return RunResult(metrics=figures, outputs=outputs)
