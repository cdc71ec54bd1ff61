"""A synthesis job for the kill -9 test: ask the scripted server one question per item.

Usage: python job_script.py BASE_URL SINK_PATH N_ITEMS; prints the JobReport as JSON.
"""

from __future__ import annotations

import json
import sys

from aworld_rl_core.llm import JsonlSink, OpenAIClient, RetryPolicy, run_jobs_sync


def scripted_client(base_url: str) -> OpenAIClient:
    """The client of the kill -9 jobs: four calls in flight, quick retries."""
    return OpenAIClient(
        base_url=base_url,
        model="scripted-model",
        api_key_env=None,
        concurrency=4,
        retry=RetryPolicy(max_retries=2, base_delay_s=0.05),
    )


def main() -> None:
    base_url, sink_path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    client = scripted_client(base_url)

    async def ask(item: dict) -> dict:
        reply = await client.chat([{"role": "user", "content": item["q"]}], temperature=0.0)
        return {"id": item["id"], "answer": reply.text}

    tasks = ({"id": i, "q": f"question {i}"} for i in range(n))
    with JsonlSink(sink_path, key="id") as sink:
        report = run_jobs_sync(tasks, ask, sink, concurrency=4)
    summary = {"skipped": report.skipped, "written": report.written, "failed": report.failed}
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
