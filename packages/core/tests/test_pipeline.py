"""``aworld_rl_core.pipeline``: stages that pass, fail or regenerate, trails, yields, resume."""

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

from aworld_rl_core.engine import play
from aworld_rl_core.environment import Step
from aworld_rl_core.llm import Completion
from aworld_rl_core.llm.scripted_server import ScriptedLLMServer
from aworld_rl_core.pipeline import (
    Failed,
    Passed,
    Pipeline,
    Regenerate,
    Stage,
    attempt_seed,
    pipeline_stats,
)

HERE = Path(__file__).parent


class Writer:
    """Test double LLM client: replies ``reply(messages)``, 10 prompt + 5 completion tokens."""

    def __init__(self, reply):
        self.reply, self.model, self.calls = reply, "writer", []

    async def chat(self, messages, **sampling):
        self.calls.append((messages[-1]["content"], sampling))
        text = self.reply(messages)
        return Completion(text=text, usage={"prompt_tokens": 10, "completion_tokens": 5})


async def draft(item, ctx):
    reply = await ctx.client("writer").chat([{"role": "user", "content": f"draft {item['id']}"}])
    return Passed({**item, "draft": reply.text})


async def check(item, ctx):
    """Numbers divisible by 3 fail; 1 needs a second try (it passes with the feedback)."""
    if item["n"] % 3 == 0:
        return Failed("divisible by 3")
    if item["n"] == 1 and ctx.feedback is None:
        return Regenerate("try again")
    if item["n"] == 4:
        return Regenerate(f"never ({ctx.attempt})")
    return Passed({**item, "checked_at": ctx.attempt})


async def short_cut(item, ctx):
    return Passed(item, stop=True, status="statement") if item["n"] == 5 else Passed(item)


def items(n):
    return [{"id": f"r{i}", "n": i} for i in range(n)]


def pipeline(writer):
    stages = [Stage("draft", draft), Stage("short_cut", short_cut), Stage("check", check, 2)]
    return Pipeline(stages, clients={"writer": writer}, seed=7)


def test_records_end_passed_failed_or_regenerated_with_trails_and_usage():
    writer = Writer(lambda m: m[-1]["content"].upper())
    pipe = pipeline(writer)
    one = asyncio.run(pipe.run_one({"id": "r1", "n": 1}))
    assert (one.status, one.passed, one.item["draft"], one.item["checked_at"]) == (
        "kept", True, "DRAFT R1", 2,
    )  # fmt: skip
    assert [(t["stage"], t["attempt"], t["outcome"]) for t in one.trail] == [
        ("draft", 1, "passed"),
        ("short_cut", 1, "passed"),
        ("check", 1, "regenerate"),
        ("check", 2, "passed"),
    ]
    assert one.usage == {
        "draft": {"calls": 1, "tokens": 15},
        "short_cut": {"calls": 0, "tokens": 0},
        "check": {"calls": 0, "tokens": 0},
    }
    three = asyncio.run(pipe.run_one({"id": "r3", "n": 3}))
    assert (three.status, three.passed, three.reason) == ("dropped", False, "divisible by 3")
    four = asyncio.run(pipe.run_one({"id": "r4", "n": 4}))
    assert four.status == "dropped" and four.reason == "check: no pass in 2 attempts (never (2))"
    five = asyncio.run(pipe.run_one({"id": "r5", "n": 5}))
    assert (five.status, five.passed, five.trail[-1]["outcome"]) == ("statement", True, "stopped")


def test_the_run_writes_each_record_once_and_yields_count_them(tmp_path):
    writer = Writer(lambda m: "ok")
    path = tmp_path / "out.jsonl"
    first = asyncio.run(pipeline(writer).run(items(4), path))
    assert first.jobs.written == 4
    again = asyncio.run(pipeline(writer).run(items(7), path))  # r0..r3 are skipped
    assert (again.jobs.skipped, again.jobs.written) == (4, 3)
    assert len(writer.calls) == 7  # nothing asked twice
    keys = [json.loads(line)["key"] for line in path.read_text().splitlines()]
    assert sorted(keys) == [f"r{i}" for i in range(7)]
    stats = again.stats.to_dict()
    # r0, r3, r6 fail (divisible by 3); r1 passes at attempt 2; r4 never passes; r5 stops early
    assert stats["records"] == 7
    assert stats["statuses"] == {"dropped": 4, "kept": 2, "statement": 1}
    assert stats["stages"]["draft"] == {
        "in": 7, "passed_at": {"1": 7}, "failed": {}, "stopped": {}, "regenerated": 0,
        "calls": 7, "tokens": 105,
    }  # fmt: skip
    assert stats["stages"]["short_cut"]["stopped"] == {"statement": 1}
    check_yield = stats["stages"]["check"]
    assert check_yield["in"] == 6 and check_yield["passed_at"] == {"1": 1, "2": 1}
    assert check_yield["failed"] == {
        "dropped: divisible by 3": 3,
        "dropped: check: no pass in 2 attempts (never (2))": 1,
    }
    assert check_yield["regenerated"] == 3  # r1 once, r4 twice
    assert stats["calls_per_kept"] == 1.0 and stats["tokens_per_kept"] == 15.0
    assert "| check | 6 | 1 (#1), 1 (#2) |" in again.stats.table()
    assert pipeline_stats(again.records).to_dict() == stats


def test_stages_per_record_seeds_per_attempt_and_clients_for_the_engine():
    seen = []

    async def remember(item, ctx):
        seen.append((ctx.key, ctx.stage, ctx.attempt, ctx.seed))
        return Regenerate("again") if ctx.attempt == 1 else Passed(item)

    class Echo:
        def reset(self):
            return [{"role": "user", "content": "say hi"}]

        def step(self, text):
            return Step(reward=float(text == "hi"), done=True)

        def close(self):
            pass

    async def agent(item, ctx):  # a stage that has its client play an environment
        episode = await play(ctx.client("writer"), Echo())
        return Passed({**item, "reward": episode.reward})

    def stages(item):  # built at run time: one round per item["rounds"]
        rounds = [Stage(f"round{r}", remember, 2) for r in range(1, item["rounds"] + 1)]
        return [*rounds, Stage("agent", agent)]

    pipe = Pipeline(stages, clients={"writer": Writer(lambda m: "hi")}, key="id", seed=3)
    result = asyncio.run(pipe.run_one({"id": "a", "rounds": 2}))
    assert [s[1:3] for s in seen] == [("round1", 1), ("round1", 2), ("round2", 1), ("round2", 2)]
    assert [s[3] for s in seen] == [
        attempt_seed(3, "a", stage, attempt) for stage, attempt in [s[1:3] for s in seen]
    ]
    assert len({s[3] for s in seen}) == 4  # a different seed per stage and attempt
    assert result.item["reward"] == 1.0 and result.usage["agent"] == {"calls": 1, "tokens": 15}
    with pytest.raises(KeyError, match="asked for LLM client 'writer' \\(known: judge\\)"):
        asyncio.run(Pipeline([Stage("x", draft)], clients={"judge": None}).run_one(items(1)[0]))


def test_kill_9_then_resume_loses_and_duplicates_nothing(tmp_path):
    path, n = tmp_path / "pipeline.jsonl", 60
    script = HERE / "llm" / "pipeline_script.py"
    env = {**os.environ, "PYTHONPATH": str(HERE.parents[0] / "src")}

    def start(base_url):
        command = [sys.executable, str(script), base_url, str(path), str(n)]
        return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True)

    with ScriptedLLMServer(lambda body: "fine", latency_s=0.05) as server:
        job = start(server.base_url)
        deadline = time.monotonic() + 60
        while job.poll() is None and time.monotonic() < deadline:
            lines = path.read_bytes().count(b"\n") if path.exists() else 0
            if lines >= 15:
                break
            time.sleep(0.005)
        os.kill(job.pid, signal.SIGKILL)
        job.wait(timeout=30)
        done = path.read_bytes().count(b"\n")
        assert job.returncode == -signal.SIGKILL and 15 <= done < n
        resumed = start(server.base_url)
        out, _ = resumed.communicate(timeout=180)
        assert resumed.returncode == 0
    report = json.loads(out.strip().splitlines()[-1])
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert sorted(r["key"] for r in records) == sorted(f"q{i}" for i in range(n))
    assert report["skipped"] == done and report["written"] == n - done
    assert report["stats"]["records"] == n  # the yields cover the records of both runs
    assert report["stats"]["statuses"] == {"dropped": n // 4, "kept": n - n // 4}
    assert report["stats"]["stages"]["ask"]["calls"] == n  # each finished record asked once


def test_seeded_calls_sample_the_same_whatever_else_is_in_flight(tmp_path):
    """``seed_calls``: each call of a stage gets a seed of its record, stage, attempt and place,
    so a record redone after a kill asks exactly what it asked before (issue 29: the crash
    harness found funreason_mt.synthesize's records sampled differently after a resume)."""
    from aworld_rl_core.pipeline import attempt_seed

    async def twice(item, ctx):
        client = ctx.client("writer")
        await client.chat([{"role": "user", "content": "a"}])
        await client.chat([{"role": "user", "content": "b"}], seed=99)  # a caller's seed stays
        await client.chat([{"role": "user", "content": "c"}])
        return Passed(item)

    def seeds(concurrency, n):
        writer = Writer(lambda m: "ok")
        pipe = Pipeline([Stage("ask", twice)], clients={"writer": writer}, seed=7, seed_calls=True)
        asyncio.run(
            pipe.run(items(n), tmp_path / f"{concurrency}-{n}.jsonl", concurrency=concurrency)
        )
        return sorted((text, s["seed"]) for text, s in writer.calls)

    alone, together = seeds(1, 1), seeds(4, 3)
    base = attempt_seed(7, "r0", "ask", 1)
    assert alone == [
        ("a", attempt_seed(base, "r0", "ask", 1)),
        ("b", 99),
        ("c", attempt_seed(base, "r0", "ask", 2)),
    ]
    assert set(alone) <= set(together) and len(set(together)) == 7  # r1, r2: seeds of their own
    writer = Writer(lambda m: "ok")  # off by default: calls go as the stage made them
    asyncio.run(Pipeline([Stage("ask", twice)], clients={"writer": writer}).run_one(items(1)[0]))
    assert [s.get("seed") for _, s in writer.calls] == [None, 99, None]
