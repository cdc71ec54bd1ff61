"""Directed-sampler throughput: traces per CPU second on BFCL's real graph vs replaying them.

Same process, same targets, the two sides alternating, each keeping its best of ``--repeats``
runs timed in CPU seconds (``aworld_rl_core.benchmarking``):

- sampler: one trace per (tool, seed) with every tool of the eight classes as the target, in a
  fresh session of its class (grounding, legality, distances, failed calls undone);
- baseline: the same traces' calls executed in fresh sessions (the execution alone).

The ratio says how much sampling costs on top of executing what it chose. Run:
``python packages/funreason_mt/benchmarks/sampler.py [--seeds 3] [--repeats 3] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path
from typing import Any

from aworld_rl_core.benchmarking import best_of, compare, parse_args, report
from aworld_rl_core.tooluse import parse_python_calls
from aworld_rl_funreason_mt.discovery import build_graph
from aworld_rl_funreason_mt.sampler import DirectedSampler, Trace
from aworld_rl_funreason_mt.space import Session, ToolSpace


def sample_all(sampler: DirectedSampler, space: ToolSpace, seeds: int) -> list[Trace]:
    traces = []
    for tool in sorted(space.tools):
        cls = space.owner(tool)
        for seed in range(seeds):
            with Session([cls], space.initial_config([cls], {cls: seed})) as session:
                rng = random.Random(seed)
                traces.append(sampler.sample(session, tool, rng, allowed=space.tools_of([cls])))
    return traces


def replay_all(space: ToolSpace, traces: list[Trace], seeds: int) -> int:
    calls = 0
    for index, trace in enumerate(traces):
        cls = space.owner(trace.target)
        seed = index % seeds
        with Session([cls], space.initial_config([cls], {cls: seed})) as session:
            for call in trace.calls:
                session.run(parse_python_calls(call.call)[0])
                calls += 1
    return calls


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3, help="traces per target tool")
    parser.add_argument("--repeats", type=int, default=3, help="runs per side (best kept)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parse_args(parser, argv, short={"seeds": 1, "repeats": 1})
    space = ToolSpace()
    graph = build_graph(space)
    sampler = DirectedSampler(graph, space)
    traces = sample_all(sampler, space, args.seeds)
    best = best_of(
        {
            "sampler": lambda _: {"traces": len(sample_all(sampler, space, args.seeds))},
            "replay": lambda _: {
                "traces": len(traces),
                "calls": replay_all(space, traces, args.seeds),
            },
        },
        args.repeats,
    )
    figures = {
        "targets": len(space.tools),
        "seeds": args.seeds,
        "reached": sum(t.reached for t in traces),
        "calls": sum(len(t.calls) for t in traces),
        **compare(best, "replay", baseline="sampler", per_cpu_s=["traces"]),
    }
    report(figures, args.json)
    return figures


if __name__ == "__main__":
    main()
