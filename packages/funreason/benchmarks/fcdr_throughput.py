"""FCDR throughput vs judge concurrency against core's scripted OpenAI-compatible server.

Every judge reply takes ``--latency`` seconds (a stand-in for a QwQ-32B server); the same
samples are refined at each concurrency and samples/s is compared with concurrency 1.

    python packages/funreason/benchmarks/fcdr_throughput.py [--samples 48 --latency 0.05]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from aworld_rl_core.benchmarking import parse_args
from aworld_rl_core.llm.config import LLMConfig
from aworld_rl_core.llm.factory import make_client
from aworld_rl_core.llm.scripted_server import ScriptedLLMServer
from aworld_rl_funreason.data import FcSample
from aworld_rl_funreason.fcdr.stages import FcdrSettings
from aworld_rl_funreason.recipes.refine import refine_all
from aworld_rl_funreason.testing import WEATHER_TOOL, scripted_reply


def _samples(n: int) -> list[FcSample]:
    return [
        FcSample(
            id=f"s{i}",
            query=f"weather in city {i}",
            tools=[WEATHER_TOOL],
            answer=f"[get_weather(city='C{i}')]",
            reasoning="Call get_weather.",
        )
        for i in range(n)
    ]


async def _one(base_url: str, model: str, samples: list[FcSample], concurrency: int) -> float:
    judge = make_client(
        LLMConfig(base_url=base_url, model=model, concurrency=concurrency, max_retries=0)
    )
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        outs, _ = await refine_all(
            samples,
            judge,
            None,
            FcdrSettings(),
            Path(tmp) / "results.jsonl",
            concurrency=concurrency,
        )
        elapsed = time.perf_counter() - start
    await judge.aclose()
    assert all(o.status == "kept" for o in outs), "the scripted judge passes every sample"
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=48)
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16, 48])
    args = parse_args(ap, short={"samples": 4, "latency": 0.001, "concurrency": [1, 4]})
    samples = _samples(args.samples)
    with ScriptedLLMServer(scripted_reply(), latency_s=args.latency) as server:
        results = {}
        for c in args.concurrency:
            results[c] = asyncio.run(_one(server.base_url, server.model, samples, c))
    base = args.samples / results[args.concurrency[0]]
    print(f"{args.samples} samples, 3 judge calls each, {1000 * args.latency:.0f} ms per reply")
    print("| judge concurrency | seconds | samples/s | vs concurrency 1 |")
    print("|---|---|---|---|")
    for c, secs in results.items():
        rate = args.samples / secs
        print(f"| {c} | {secs:.2f} | {rate:.1f} | {rate / base:.1f}x |")


if __name__ == "__main__":
    main()
