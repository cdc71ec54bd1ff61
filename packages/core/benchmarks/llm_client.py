"""LLM client throughput against the scripted server with a fixed 100 ms latency.

Same process, same server: requests per second of ``OpenAIClient.chat_many`` at concurrency 1
(the baseline) and 32 (target ratio >= 20x), and of ``run_jobs`` writing every reply to a
``JsonlSink`` (fsync on every record) at concurrency 32. Timed in wall-clock seconds (the work
is waiting on the server), best of ``--repeats`` runs each.

Run: ``python packages/core/benchmarks/llm_client.py [--repeats 3] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path

from aworld_rl_core.benchmarking import parse_args
from aworld_rl_core.llm import JsonlSink, OpenAIClient, run_jobs
from aworld_rl_core.llm.scripted_server import ScriptedLLMServer

LATENCY_S = 0.1


def requests(n: int) -> list[list[dict]]:
    return [[{"role": "user", "content": f"question {i}"}] for i in range(n)]


def make(base_url: str, concurrency: int) -> OpenAIClient:
    return OpenAIClient(base_url=base_url, model="bench", api_key_env=None, concurrency=concurrency)


def chat_many_rps(base_url: str, n: int, concurrency: int) -> float:
    client = make(base_url, concurrency)

    async def main() -> float:
        start = time.perf_counter()
        outs = await client.chat_many(requests(n))
        elapsed = time.perf_counter() - start
        assert [o.text for o in outs] == [f"echo: question {i}" for i in range(n)]
        await client.aclose()
        return n / elapsed

    return asyncio.run(main())


def run_jobs_rps(base_url: str, n: int, concurrency: int) -> float:
    client = make(base_url, concurrency)

    async def ask(item: dict) -> dict:
        reply = await client.chat(item["messages"])
        return {"id": item["id"], "text": reply.text}

    items = [{"id": i, "messages": m} for i, m in enumerate(requests(n))]
    with tempfile.TemporaryDirectory() as tmp:
        with JsonlSink(Path(tmp) / "out.jsonl", fsync="always") as sink:
            start = time.perf_counter()
            report = asyncio.run(run_jobs(items, ask, sink, concurrency=concurrency))
            elapsed = time.perf_counter() - start
        assert report.written == n
    return n / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--n1", type=int, default=30, help="requests at concurrency 1")
    parser.add_argument("--n32", type=int, default=640, help="requests at concurrency 32")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parse_args(parser, short={"repeats": 1, "n1": 2, "n32": 8}, known=True)
    with ScriptedLLMServer(latency_s=LATENCY_S) as server:
        base = server.base_url
        c1 = max(chat_many_rps(base, args.n1, 1) for _ in range(args.repeats))
        server.reset_stats()
        c32 = max(chat_many_rps(base, args.n32, 32) for _ in range(args.repeats))
        peak = server.max_in_flight
        jobs32 = max(run_jobs_rps(base, args.n32, 32) for _ in range(args.repeats))
    figures = {
        "latency_s": LATENCY_S,
        "rps_concurrency_1": round(c1, 2),
        "rps_concurrency_32": round(c32, 2),
        "ratio_32_vs_1": round(c32 / c1, 1),
        "rps_run_jobs_fsync_32": round(jobs32, 2),
        "ratio_run_jobs_32_vs_1": round(jobs32 / c1, 1),
        "server_max_in_flight_at_32": peak,
    }
    width = max(map(len, figures))
    for key, value in figures.items():
        print(f"{key:<{width}}  {value}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
