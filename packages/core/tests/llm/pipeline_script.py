"""A pipeline job for the kill -9 test: one LLM stage and one rule stage per item.

Usage: python pipeline_script.py BASE_URL PATH N_ITEMS; prints the report as JSON.
"""

from __future__ import annotations

import asyncio
import json
import sys

from job_script import scripted_client

from aworld_rl_core.pipeline import Failed, Passed, Pipeline, Stage


async def ask(item, ctx):
    reply = await ctx.client("llm").chat([{"role": "user", "content": item["q"]}], seed=ctx.seed)
    return Passed({**item, "answer": reply.text})


async def rule(item, ctx):
    return Failed("every fourth") if item["n"] % 4 == 0 else Passed(item)


async def main() -> None:
    base_url, path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    client = scripted_client(base_url)
    pipe = Pipeline([Stage("ask", ask), Stage("rule", rule)], clients={"llm": client}, key="id")
    items = ({"id": f"q{i}", "n": i, "q": f"question {i}"} for i in range(n))
    report = await pipe.run(items, path, concurrency=4, fsync="always")
    await client.aclose()
    summary = {
        "skipped": report.jobs.skipped,
        "written": report.jobs.written,
        "stats": report.stats.to_dict(),
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    asyncio.run(main())
