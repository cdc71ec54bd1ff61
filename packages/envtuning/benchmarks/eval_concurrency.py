"""BFCL multi-turn evaluation through an OpenAI-compatible server: entries/s at concurrency 1
vs 64 (target >= 30x).

The agent is core's scripted server (a test double for vLLM) answering every request after a
fixed 200 ms with BFCL's ground truth in BFCL's prompting protocol; the evaluation is
``envtuning.evaluate`` (what ``envtuning.eval`` runs), ``concurrency`` episodes in flight and as
many requests in the client. Concurrency 64 plays all 800 multi-turn entries; concurrency 1
plays every ``--stride``-th of them (all 800 would take about 20 minutes of waiting). Timed in
wall-clock seconds (the work is waiting on the server) and CPU seconds of the process; every
entry must pass (the script fails otherwise).

Run: ``python packages/envtuning/benchmarks/eval_concurrency.py [--stride 10] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from typing import Any

from aworld_rl_core.benchmarking import measure, parse_args, report
from aworld_rl_core.llm import OpenAIClient
from aworld_rl_core.llm.scripted_server import ScriptedLLMServer
from aworld_rl_core.testing.bfcl_agents import scripted_replies
from aworld_rl_core.tooluse.bfcl import MULTI_TURN_CATEGORIES, ground_truth_replies, load_category
from aworld_rl_envtuning.evaluate import evaluate

LATENCY_S = 0.2


class Tagged:
    """One shared client; each episode's requests carry its entry id in OpenAI's ``user`` field,
    by which the scripted server finds the entry (800 entries have only 484 distinct openings)."""

    def __init__(self, client: OpenAIClient, entry_id: str = "") -> None:
        self.client, self.entry_id = client, entry_id

    def for_entry(self, entry: Any) -> Tagged:
        return Tagged(self.client, entry.id)

    async def chat(self, messages: list[dict], **sampling: Any) -> Any:
        return await self.client.chat(messages, user=self.entry_id, **sampling)


def play(server: ScriptedLLMServer, entries: list[Any], concurrency: int) -> dict[str, Any]:
    client = Tagged(
        OpenAIClient(
            base_url=server.base_url, model=server.model, api_key_env=None, concurrency=concurrency
        )
    )
    server.reset_stats()
    run = measure(lambda: evaluate(client, entries, protocol="bfcl", concurrency=concurrency))
    failed = [o.entry_id for o in run.result if not o.valid]
    if failed:
        raise SystemExit(f"{len(failed)} entries failed at concurrency {concurrency}: {failed[:5]}")
    requests = len(server.chat_bodies)
    return {
        "entries": len(entries),
        "requests": requests,
        "wall_s": round(run.wall_s, 2),
        "cpu_s": round(run.cpu_s, 2),
        "entries_per_s": round(len(entries) / run.wall_s, 3),
        "requests_per_s": round(requests / run.wall_s, 2),
        "server_max_in_flight": server.max_in_flight,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stride", type=int, default=10, help="concurrency 1 plays every Nth")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--entries", type=int, default=None, help="first N per category (all)")
    args = parse_args(parser, argv, short={"stride": 2, "concurrency": 4, "entries": 2})
    os.environ.setdefault("BFCL_PROJECT_ROOT", tempfile.mkdtemp(prefix="bfcl-bench-"))
    entries = [e for c in MULTI_TURN_CATEGORIES for e in load_category(c)[: args.entries]]
    scripts = {e.id: ground_truth_replies(e) for e in entries}
    reply = scripted_replies(scripts, key=lambda body: body["user"])
    with ScriptedLLMServer(reply, latency_s=LATENCY_S) as server:
        one = play(server, entries[:: args.stride], 1)
        many = play(server, entries, args.concurrency)
    figures = {
        "latency_s": LATENCY_S,
        "concurrency_1": one,
        f"concurrency_{args.concurrency}": many,
        "ratio_entries_per_s": round(many["entries_per_s"] / one["entries_per_s"], 1),
    }
    report(figures, args.json)
    return figures


if __name__ == "__main__":
    main()
