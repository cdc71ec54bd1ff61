"""What the kept data is made of: chain depth, data flow, targets, initial states.

A round's calls form a chain where a call takes an input from an earlier call's output (the
sampler records every argument's source, ``output:<tool>``). :func:`chain_figures` reports, over
kept trajectories: the mean and largest chain depth (the longest run of calls each fed by the
one before, 1 for a call fed by none), the share of rounds that are chains (depth >= 2), the
share of calls that consume an earlier output, the share of rounds whose target is the first
call, rounds that mix classes and those where data flows across them, and the distinct initial
states (per class, and whole configurations).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from aworld_rl_funreason_mt.sampler import Trace


def _fed_by(trace: Trace, index: int) -> list[int]:
    """Indices of the round's earlier calls whose output call ``index`` takes."""
    tools = {
        s.split(":", 1)[1] for s in trace.calls[index].sources.values() if s.startswith("output:")
    }
    parents = []
    for tool in tools:
        earlier = [j for j in range(index) if trace.calls[j].tool == tool]
        if earlier:
            parents.append(earlier[-1])
    return parents


def chain_depth(trace: Trace) -> int:
    """The longest data-flow path among the round's calls, in calls (0 for an empty round)."""
    depth: list[int] = []
    for i in range(len(trace.calls)):
        depth.append(1 + max((depth[j] for j in _fed_by(trace, i)), default=0))
    return max(depth, default=0)


def consumes_output(call: Any) -> bool:
    return any(s.startswith("output:") for s in call.sources.values())


def chain_figures(
    trajectories: Sequence[Any], owners: dict[str, str] | None = None
) -> dict[str, float]:
    """The figures of the module docstring (``owners``: tool -> class, for cross-class flow)."""
    rounds = [r for t in trajectories for r in t.rounds]
    traces = [r.trace for r in rounds]
    calls = [c for tr in traces for c in tr.calls]
    depths = [chain_depth(tr) for tr in traces]
    n = len(traces) or 1
    mixed = cross = 0
    for tr in traces:
        classes = {(owners or {}).get(c.tool, "") for c in tr.calls} - {""}
        if len(classes) > 1:
            mixed += 1
            if owners and any(
                owners.get(tr.calls[j].tool) != owners.get(tr.calls[i].tool)
                for i in range(len(tr.calls))
                for j in _fed_by(tr, i)
            ):
                cross += 1
    per_class = {
        (cls, json.dumps(state, sort_keys=True))
        for t in trajectories
        for cls, state in t.initial_config.items()
    }
    configs = {json.dumps(t.initial_config, sort_keys=True) for t in trajectories}
    return {
        "rounds": float(len(traces)),
        "calls": float(len(calls)),
        "chain_depth_mean": sum(depths) / n,
        "chain_depth_max": float(max(depths, default=0)),
        "chain_share": sum(d >= 2 for d in depths) / n,
        "calls_consuming_output": sum(map(consumes_output, calls)) / (len(calls) or 1),
        "target_first_share": sum(bool(tr.calls) and tr.calls[0].tool == tr.target for tr in traces)
        / n,
        "rounds_mixing_classes": float(mixed),
        "rounds_with_cross_class_flow": float(cross),
        "distinct_class_states": float(len(per_class)),
        "distinct_initial_configs": float(len(configs)),
    }


def chain_table(figures: dict[str, float]) -> str:
    """The figures as a markdown table for ``report.md``."""
    labels = (
        ("rounds", "kept rounds", "{:.0f}"),
        ("calls", "ground-truth calls", "{:.0f}"),
        (
            "chain_depth_mean",
            "chain depth, mean (calls along the longest output->input path)",
            "{:.2f}",
        ),
        ("chain_depth_max", "chain depth, largest", "{:.0f}"),
        ("chain_share", "rounds that are chains (depth >= 2)", "{:.0%}"),
        ("calls_consuming_output", "calls consuming an earlier output", "{:.0%}"),
        ("target_first_share", "rounds whose target is the first call", "{:.0%}"),
        ("rounds_mixing_classes", "rounds mixing classes", "{:.0f}"),
        ("rounds_with_cross_class_flow", "... of them with data flowing across classes", "{:.0f}"),
        ("distinct_class_states", "distinct initial states (class, state)", "{:.0f}"),
        ("distinct_initial_configs", "distinct initial configurations", "{:.0f}"),
    )
    lines = ["| figure | value |", "|---|---|"]
    lines += [
        f"| {label} | {fmt.format(figures[key])} |" for key, label, fmt in labels if key in figures
    ]
    return "\n".join(lines) + "\n"
