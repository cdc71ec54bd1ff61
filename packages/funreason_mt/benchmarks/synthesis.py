"""Synthesis throughput vs concurrency: the whole pipeline against the scripted server.

The demo oracle (``aworld_rl_funreason_mt.demo``) answers on core's scripted OpenAI-compatible
server after a fixed latency per request (an LLM endpoint's round trip); the same records run at
each concurrency, each time into a fresh pipeline file (nothing skipped), best of ``--repeats``
wall-clock runs. The ratio is trajectories per second against concurrency 1 (the baseline).
Run: ``python packages/funreason_mt/benchmarks/synthesis.py [--records 16] [--latency 0.05]
[--concurrency 1 4 16] [--repeats 2] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from aworld_rl_core.benchmarking import parse_args, report
from aworld_rl_funreason_mt.recipes.synthesize import (
    DemoConfig,
    SynthesizeConfig,
    agent_configs,
    demo_endpoint,
    run_pipeline,
)
from aworld_rl_funreason_mt.synthesis import SynthesisConfig, Synthesizer


def one_run(
    cfg: SynthesizeConfig, synth: Synthesizer, url: str, records: int
) -> tuple[float, int, int]:
    items = [{"key": f"trajectory-{i:06d}"} for i in range(records)]
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        out = asyncio.run(
            run_pipeline(synth, cfg, agent_configs(cfg, url), items, Path(folder) / "p.jsonl")
        )
        wall = time.perf_counter() - started
    calls = sum(y.calls for y in out.stats.stages.values())
    return wall, out.stats.kept, calls


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=16, help="trajectories per run")
    parser.add_argument("--latency", type=float, default=0.05, help="server seconds per request")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--repeats", type=int, default=2, help="runs per concurrency (best kept)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parse_args(
        parser, argv, short={"records": 2, "latency": 0.001, "concurrency": [1, 2], "repeats": 1}
    )
    base = SynthesizeConfig(
        demo=DemoConfig(enabled=True, latency_s=args.latency),
        synthesis=SynthesisConfig(rounds=1, error_rate=0.0),
    )
    space = base.space.build()
    graph, _ = base.graph.build(space)
    synth = Synthesizer(space, graph, base.synthesis, seed=base.seed)
    figures: dict[str, Any] = {"records": args.records, "latency_s": args.latency, "runs": {}}
    with demo_endpoint(base.demo) as url:
        assert url is not None
        for level in args.concurrency:
            cfg = replace(base, concurrency=level)
            best = min(
                (one_run(cfg, synth, url, args.records) for _ in range(args.repeats)),
                key=lambda r: r[0],
            )
            wall, kept, calls = best
            figures["runs"][str(level)] = {
                "wall_s": wall,
                "kept": kept,
                "llm_calls": calls,
                "trajectories_per_s": args.records / wall,
                "llm_calls_per_s": calls / wall,
            }
    first = figures["runs"][str(args.concurrency[0])]["wall_s"]
    for run in figures["runs"].values():
        run["ratio_vs_first"] = first / run["wall_s"]
    report(figures, args.json)
    return figures


if __name__ == "__main__":
    main()
