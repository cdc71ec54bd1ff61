"""The retrieval server under a hostile mix (issue 29 item 3), on loopback, bounded in size:
``aworld-run rag_r1.serve`` in its own process, hit at once by good clients, poisoned and
oversized bodies, clients that give up mid-body or before their answer, and slow-body
connections. Every good request must be answered correctly; the others get their 4xx, are
closed or have their work dropped; each disconnect is one log line and nothing logs a traceback.
The long-lived server hands a burst's memory back to the OS (``server.allocator=release``)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from aworld_rl_rag_r1.retrievers import load_retriever

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")


class Live:
    """``aworld-run rag_r1.serve`` over an index, in a subprocess; stderr kept in a file."""

    def __init__(self, index: Path, run_dir: Path, *overrides: str) -> None:
        self.stderr_path = run_dir.parent / f"{run_dir.name}.stderr"
        self.stderr = self.stderr_path.open("w")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "aworld_rl_core.cli",
                "rag_r1.serve",
                "--preset",
                "tiny-cpu",
                "--output-dir",
                str(run_dir),
                f"retriever.index={index}",
                "self_check=false",
                *overrides,
            ],
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        line = ""
        deadline = time.monotonic() + 300
        while "retrieval server:" not in line:
            line = self.proc.stdout.readline()
            if (not line and self.proc.poll() is not None) or time.monotonic() > deadline:
                raise AssertionError(self.stderr_path.read_text()[-3000:])
        self.base = line.split("retrieval server: ")[1].split("/retrieve")[0]
        self.host, self.port = self.base.removeprefix("http://").split(":")
        self.port = int(self.port)

    def metrics(self) -> dict:
        return httpx.get(self.base + "/metrics", timeout=30).json()

    def rss(self) -> int:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise AssertionError("no VmRSS")

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.communicate()
        self.stderr.close()
        return self.stderr_path.read_text()


def _raw(live: Live, head: bytes, body: bytes = b"") -> socket.socket:
    sock = socket.create_connection((live.host, live.port), timeout=30)
    sock.sendall(head + body)
    return sock


def _head(length: int) -> bytes:
    return (
        f"POST /retrieve HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {length}\r\n\r\n"
    ).encode()


def _read_all(sock: socket.socket) -> bytes:
    out = b""
    while chunk := sock.recv(65536):
        out += chunk
    return out


def test_a_hostile_mix_every_good_request_answered(hash_index, world, tmp_path):
    live = Live(
        hash_index,
        tmp_path / "serve",
        "server.body_timeout_s=1",
        "server.search_chunk_queries=32",
        "server.max_queries=4096",
        "server.max_body_bytes=400000",
        "server.max_results=20000",
    )
    url = live.base + "/retrieve"
    reference = load_retriever(hash_index)
    questions = [q["question"] for q in world[1]]
    found = reference.search(questions, 3)
    expected = {q: [h.id for h in row] for q, row in zip(questions, found, strict=True)}
    good: list[bool] = []
    other: list[tuple[str, int | None]] = []

    def good_client(i: int) -> None:
        with httpx.Client(timeout=120) as http:
            for j in range(10):
                asked = [
                    questions[(i + j) % len(questions)],
                    questions[(3 * i + j) % len(questions)],
                ]
                r = http.post(url, json={"queries": asked, "topk": 3})
                ok = r.status_code == 200 and [
                    [d["passage"] for d in row] for row in r.json()["result"]
                ] == [expected[q] for q in asked]
                good.append(ok)

    poisoned = [
        (b'{"queries": ["fine", "a\\ud800b"], "topk": 1}', 422),  # lone surrogate
        (b"[" * 5000 + b"]" * 5000, 400),  # nesting
        (b'{"queries": ["a"], "topk": ' + b"9" * 5000 + b"}", 400),  # a 5,000-digit topk
        (b"{not json", 400),
        (json.dumps({"queries": ["q" * 50] * 8000}).encode(), 413),  # over max_body_bytes
        (json.dumps({"queries": ["q"] * 300, "topk": 100}).encode(), 413),  # over max_results
    ]

    def bad_client(body: bytes, status: int) -> None:
        with httpx.Client(timeout=120) as http:
            r = http.post(url, content=body, headers={"content-type": "application/json"})
            other.append(("poisoned", r.status_code == status))

    big = json.dumps({"queries": [f"{questions[k % 40]} {k}" for k in range(4096)], "topk": 1})

    def abandon_before_answer() -> None:  # the whole request, then gone
        sock = _raw(live, _head(len(big)), big.encode())
        time.sleep(0.05)
        sock.close()
        other.append(("abandoned", None))

    def abandon_mid_body() -> None:
        sock = _raw(live, _head(1000), b'{"queries": ["a')
        time.sleep(0.1)
        sock.close()
        other.append(("mid-body", None))

    def slow_body() -> None:  # 1 byte at a time: the server answers 408 and closes
        sock = _raw(live, _head(1000))
        answer = b""
        with contextlib.suppress(OSError):  # OSError: the server closed the connection
            for _ in range(100):
                sock.sendall(b" ")
                time.sleep(0.1)
        sock.settimeout(30)
        with contextlib.suppress(OSError):
            answer = _read_all(sock)
        sock.close()
        other.append(("slow", answer.startswith(b"HTTP/1.1 408")))

    threads = [threading.Thread(target=good_client, args=(i,)) for i in range(8)]
    threads += [threading.Thread(target=bad_client, args=p) for p in poisoned]
    threads += [threading.Thread(target=abandon_before_answer) for _ in range(4)]
    threads += [threading.Thread(target=abandon_mid_body) for _ in range(4)]
    threads += [threading.Thread(target=slow_body) for _ in range(3)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        deadline = time.monotonic() + 60
        metrics = live.metrics()
        while (metrics["in_flight"] or metrics["queue_depth"]) and time.monotonic() < deadline:
            time.sleep(0.2)
            metrics = live.metrics()
    finally:
        stderr = live.stop()
    assert len(good) == 80 and all(good)  # every good request answered, correctly
    assert [ok for kind, ok in other if kind == "poisoned"] == [True] * len(poisoned)
    assert [ok for kind, ok in other if kind == "slow"] == [True] * 3  # 408, then closed
    assert metrics["in_flight"] == 0 and metrics["queue_depth"] == 0
    assert metrics["timeouts"] == 3  # the slow bodies
    assert 4 <= metrics["disconnects"] <= 8  # every mid-body client; abandoned ones if caught
    assert metrics["dropped_queries"] > 0  # abandoned searches stopped part-way
    log = (tmp_path / "serve" / "run.log").read_text()  # where aworld-run sends logging
    assert "Traceback" not in stderr and "Traceback" not in log
    assert log.count(" disconnected ") == metrics["disconnects"]  # one line each


BURST = 8


def _burst(live: Live, questions: list[str], n: int = 800) -> None:
    """``BURST`` concurrent requests, each ``n`` queries x topk 70 (the whole tiny corpus)."""
    body = {"queries": [f"{questions[k % len(questions)]} {k}" for k in range(n)], "topk": 70}

    def one() -> None:
        with httpx.Client(timeout=300) as http:
            assert http.post(live.base + "/retrieve", json=body).status_code == 200

    threads = [threading.Thread(target=one) for _ in range(BURST)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def _retained(live: Live, questions: list[str]) -> tuple[int, int, int]:
    """RSS (bytes) before a burst, at its end, and once the server has been idle a while."""
    _burst(live, questions, n=2)  # warm: first requests' imports and allocations
    time.sleep(2.5)
    before = live.rss()
    _burst(live, questions)
    peak = live.rss()
    deadline = time.monotonic() + 30
    trims = live.metrics()["trims"]
    while live.metrics()["trims"] == trims and time.monotonic() < deadline:
        time.sleep(0.2)  # the idle server's trim (release mode); a wait either way
    time.sleep(1.5)
    return before, peak, live.rss()


@pytest.mark.slow
def test_the_server_hands_a_bursts_memory_back(hash_index, world, tmp_path):
    """RSS of ``aworld-run rag_r1.serve`` before a burst and once idle after it, with
    ``server.allocator`` keep (aworld-run's training setting) and release (the default)."""
    questions = [q["question"] for q in world[1]]
    caps = ["server.max_results=0", "server.max_response_bytes=0", "server.max_queries=4096"]
    figures = {}
    for mode in ("keep", "release"):
        live = Live(hash_index, tmp_path / mode, f"server.allocator={mode}", *caps)
        try:
            figures[mode] = _retained(live, questions)
        finally:
            live.stop()
    mib = 1 << 20
    (tmp_path / "rss.json").write_text(json.dumps(figures))
    print({m: [round(v / mib) for v in f] for m, f in figures.items()})
    keep_before, _, keep_after = figures["keep"]
    release_before, _, release_after = figures["release"]
    # measured (2 contended cores): keep retained 79 MiB, release 44-48 MiB, of a 49-83 MiB
    # burst; what release keeps is not the batcher's results (test_no_result_outlives_its_request)
    assert keep_after - keep_before > 50 * mib  # aworld-run's setting pins the burst
    assert release_after - release_before < 0.8 * (keep_after - keep_before)


def test_no_result_outlives_its_request(hash_index):
    """The batcher kept the last batch's results alive while it waited for the next one: a
    burst's hits stayed in memory until more traffic came."""
    import asyncio
    import gc

    from aworld_rl_rag_r1.retrievers import Hit
    from aworld_rl_rag_r1.server import Metrics, MicroBatcher, ServerConfig

    retriever = load_retriever(hash_index)
    batcher = MicroBatcher(retriever, ServerConfig(batch_wait_ms=50), Metrics())

    def alive() -> int:
        gc.collect()
        return sum(isinstance(o, Hit) for o in gc.get_objects())

    async def main() -> int:
        before = alive()
        rows = await asyncio.gather(*(batcher.submit([f"q {i}", "r"], 5, None) for i in range(4)))
        assert sum(len(r) for row in rows for r in row) == 40
        del rows
        await asyncio.sleep(0.2)  # the batcher is waiting for the next request
        left = alive() - before
        await batcher.stop()
        return left

    assert asyncio.run(main()) == 0


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        out += [int(c) for c in (task / "children").read_text().split()]
    return out


def test_kill_9_of_the_serve_recipe_leaves_nothing_listening(hash_index, tmp_path):
    """The in-process server (uvicorn in a thread) starts no child process, so a kill -9 of
    ``aworld-run rag_r1.serve`` leaves nothing behind: no process, no open port. (Replicas on Ray
    Serve are Ray's processes: Ray's reaper ends them with the driver.)"""
    live = Live(hash_index, tmp_path / "serve")
    assert httpx.get(live.base + "/health", timeout=30).status_code == 200
    assert _children(live.proc.pid) == []
    live.proc.kill()
    live.proc.wait(timeout=30)
    live.stop()
    with pytest.raises(httpx.ConnectError):
        httpx.get(live.base + "/health", timeout=5)
