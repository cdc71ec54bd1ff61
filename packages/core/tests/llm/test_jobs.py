"""run_jobs: skips, dedupe, limits, errors, and a kill -9 followed by a resume."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aworld_rl_core.llm import JsonlSink, run_jobs, run_jobs_sync
from aworld_rl_core.llm.scripted_server import ScriptedLLMServer

HERE = Path(__file__).parent
SRC = str(Path(__import__("aworld_rl_core").__file__).parents[1])


def items(n):
    return [{"id": i, "q": f"question {i}"} for i in range(n)]


def test_skips_done_keys_and_duplicates(tmp_path):
    path = tmp_path / "out.jsonl"
    with JsonlSink(path) as sink:
        sink.write({"id": 1, "a": "old"})
        seen = []

        async def fn(item):
            seen.append(item["id"])
            return {"a": item["q"].upper()}  # no id: run_jobs adds the item's

        report = asyncio.run(run_jobs([*items(4), {"id": 2, "q": "dup"}], fn, sink))
    assert sorted(seen) == [0, 2, 3]
    assert (report.seen, report.skipped, report.written, report.failed) == (5, 2, 3, {})
    got = {r["id"]: r["a"] for r in map(json.loads, path.read_text().splitlines())}
    assert got == {1: "old", 0: "QUESTION 0", 2: "QUESTION 2", 3: "QUESTION 3"}


def test_concurrency_limit_and_sync_fn(tmp_path):
    state = {"now": 0, "max": 0}

    async def fn(item):
        state["now"] += 1
        state["max"] = max(state["max"], state["now"])
        await asyncio.sleep(0.01)
        state["now"] -= 1
        return {"id": item["id"]}

    with JsonlSink(tmp_path / "a.jsonl") as sink:
        asyncio.run(run_jobs(items(30), fn, sink, concurrency=5))
    assert state["max"] == 5

    def square(item):  # a plain function runs in a thread
        return {"id": item["id"], "sq": item["id"] ** 2}

    with JsonlSink(tmp_path / "b.jsonl") as sink:
        report = run_jobs_sync(items(6), square, sink, concurrency=3)
        assert sorted(r["sq"] for r in sink.records()) == [0, 1, 4, 9, 16, 25]
    assert report.written == 6


def test_on_error_skip_then_rerun(tmp_path):
    path = tmp_path / "a.jsonl"
    broken = {2, 5}

    async def fn(item):
        if item["id"] in broken:
            raise RuntimeError(f"judge failed on {item['id']}")
        return {"ok": True}

    with JsonlSink(path) as sink:
        report = asyncio.run(run_jobs(items(8), fn, sink, on_error="skip"))
    assert report.failed == {
        "2": "RuntimeError: judge failed on 2",
        "5": "RuntimeError: judge failed on 5",
    }
    assert report.written == 6
    broken.clear()
    with JsonlSink(path) as sink:
        report = asyncio.run(run_jobs(items(8), fn, sink, on_error="skip"))
        assert (report.skipped, report.written) == (6, 2)
        assert len(sink) == 8


def test_on_error_raise_keeps_finished_results(tmp_path):
    async def fn(item):
        if item["id"] == 3:
            raise RuntimeError("boom")
        return {}

    with JsonlSink(tmp_path / "a.jsonl") as sink:
        with pytest.raises(RuntimeError, match="boom"):
            asyncio.run(run_jobs(items(4), fn, sink, concurrency=1))
        assert sink.done_keys == {"0", "1", "2"}


def test_result_with_another_key_is_an_error(tmp_path):
    with JsonlSink(tmp_path / "a.jsonl") as sink, pytest.raises(ValueError, match="differs"):
        run_jobs_sync(items(1), lambda item: {"id": 99}, sink)


N_ITEMS = 200


def expected_answer(i: int) -> str:
    return f"answer to question {i}"


def start_job(base_url: str, sink: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(HERE / "job_script.py"), base_url, str(sink), str(N_ITEMS)],
        env={**os.environ, "PYTHONPATH": SRC},
        stdout=subprocess.PIPE,
        text=True,
    )


def count_lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def test_kill_9_then_resume_loses_and_duplicates_nothing(tmp_path):
    sink = tmp_path / "synth.jsonl"

    def reply(body):
        return "answer to " + body["messages"][-1]["content"]

    with ScriptedLLMServer(reply, latency_s=0.05) as server:
        job = start_job(server.base_url, sink)
        deadline = time.monotonic() + 60
        while count_lines(sink) < 20 and time.monotonic() < deadline and job.poll() is None:
            time.sleep(0.005)
        os.kill(job.pid, signal.SIGKILL)
        job.wait(timeout=30)
        assert job.returncode == -signal.SIGKILL
        done_before = count_lines(sink)
        assert 20 <= done_before < N_ITEMS, "the job must be killed mid-way"
        with open(sink, "ab") as f:  # what a kill in the middle of a write would leave
            f.write(b'{"id": 7777, "answer": "tor')

        resumed = start_job(server.base_url, sink)
        out, _ = resumed.communicate(timeout=120)
        assert resumed.returncode == 0
        report = json.loads(out.strip().splitlines()[-1])
        bodies = [b for b in server.chat_bodies if b is not None]  # None: cut by the kill
        asked = [int(b["messages"][-1]["content"].split()[-1]) for b in bodies]

    records = [json.loads(line) for line in sink.read_text().splitlines()]
    ids = [r["id"] for r in records]
    assert sorted(ids) == list(range(N_ITEMS))  # every key exactly once, the torn line gone
    assert all(r["answer"] == expected_answer(r["id"]) for r in records)
    assert report == {"skipped": done_before, "written": N_ITEMS - done_before, "failed": {}}
    # only calls in flight at the kill were asked twice (the job's concurrency is 4)
    assert len(asked) - N_ITEMS <= 4
    assert set(asked) == set(range(N_ITEMS))


def test_a_reply_with_a_lone_surrogate_is_stored_escaped(tmp_path):
    path = tmp_path / "out.jsonl"

    def answer(item):
        return {"id": item["id"], "a": "broken \ud800 text" if item["id"] == 1 else "fine"}

    with JsonlSink(path) as sink:
        report = run_jobs_sync(items(3), answer, sink, on_error="skip")
    assert (report.written, report.failed) == (3, {})
    assert b"\\ud800" in path.read_bytes()  # escaped: the file stays valid UTF-8
    with JsonlSink(path) as sink:
        assert {r["id"]: r["a"] for r in sink.records()}[1] == "broken \ud800 text"
        assert len(sink) == 3
