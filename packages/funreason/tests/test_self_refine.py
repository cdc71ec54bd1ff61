"""Self-refinement: judge votes by hand, v3 hard-pool rounds against scripted servers, and the
v1 tiny-cpu preset."""

from __future__ import annotations

import json

import pytest

from aworld_rl_core.config import load_config
from aworld_rl_core.llm.scripted_server import ScriptedLLMServer
from aworld_rl_core.runs import execute
from aworld_rl_funreason.hdr import parse_score, vote
from aworld_rl_funreason.recipes.self_refine import SelfRefineConfig, run

PRESETS = "aworld_rl_funreason:configs/self-refine"


@pytest.fixture(autouse=True)
def _env(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("BFCL_PROJECT_ROOT", str(tmp_path_factory.mktemp("bfcl")))
    monkeypatch.setenv("AWORLD_RL_HOME", str(tmp_path_factory.mktemp("home")))


def test_parse_score():
    assert parse_score("<think><score>0.1</score></think> ok <score>0.8</score>") == 0.8
    assert parse_score("<judge>True</judge>") == 1.0
    assert parse_score("<score>7</score>") is None
    assert parse_score("nothing") is None


def test_vote_unanimous_and_majority():
    assert vote([0.9, 0.5, 0.7]) is True
    assert vote([0.9, 0.4, 0.7]) is False
    assert vote([0.9, 0.4, 0.7], rule="majority") is True
    assert vote([0.9, None, 0.2], rule="majority") is False
    assert vote([0.6], threshold=0.7) is False
    with pytest.raises(ValueError):
        vote([])


def test_presets_load():
    for preset in ("tiny-cpu", "paper", "paper-v3"):
        cfg = load_config(SelfRefineConfig, preset=preset, presets=PRESETS)
    assert len(cfg.judges) == 3 and cfg.vote == "unanimous" and cfg.t_max == 10


# The toy hard pool: the model answers Paris right, Rome in a broken format, and Oslo in a way
# one of three judges rejects.
ANSWERS = {
    "What is the weather in Paris?": "<think>Paris weather.</think>\n\n[get_weather(city='Paris')]",
    "Give me a 3-day forecast for Rome.": "<think>Rome.</think>\n\nget_weather(city=Rome",
    "Weather in Oslo and 50 EUR in NOK?": (
        "<think>Two calls.</think>\n\n[get_weather(city='Oslo'), "
        "convert_currency(amount=50, source='EUR', target='NOK')]"
    ),
}


def _server_reply(body):
    text = body["messages"][-1]["content"]
    if body["model"] == "policy":
        return ANSWERS[text]
    if body["model"] == "strict-judge" and "Oslo" in text:
        return "<score>0.2</score>"
    return "<think>fine</think><score>0.9</score>"


def _write_pool(tmp_path):
    from importlib import resources

    src = resources.files("aworld_rl_funreason").joinpath("sample_data/fcdr_tiny.jsonl")
    rows = [json.loads(x) for x in src.read_text().splitlines()]
    pool = [r for r in rows if r["query"] in ANSWERS]
    path = tmp_path / "hard.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in pool))
    return path


def _cfg(server, pool, *extra):
    judges = [
        {"model": m, "base_url": server.base_url, "max_retries": 0}
        for m in ("judge-a", "strict-judge", "judge-c")
    ]
    sampler = {"provider": "openai", "model": "policy", "base_url": server.base_url}
    overrides = [
        "mode=v3",
        "demo_sampler=false",  # the policy is this test's server
        f"data.hard_path={pool}",
        "data.path=",
        "data.limit=null",
        f"sampler={json.dumps(sampler)}",
        f"judges={json.dumps(judges)}",
        *extra,
    ]
    return load_config(SelfRefineConfig, preset="tiny-cpu", presets=PRESETS, overrides=overrides)


def test_v3_rounds_shrink_the_pool_and_train_on_accepted(tmp_path):
    pool = _write_pool(tmp_path)
    with ScriptedLLMServer(_server_reply) as server:
        cfg = _cfg(server, pool, "t_max=2")
        result, _ = execute(
            "funreason.self-refine", run, cfg, output_dir=tmp_path / "run", quiet=True
        )
    assert result.metrics == {"rounds": 2.0, "accepted_total": 1.0, "pool_left": 2.0}
    [new] = [
        json.loads(x) for x in (tmp_path / "run/round-1/new_samples.jsonl").read_text().splitlines()
    ]
    assert new["answer"] == "[get_weather(city='Paris')]" and new["reasoning"] == "Paris weather."
    assert new["meta"]["sampled_from"] == "fcdr-1"
    left = [
        json.loads(x)["id"]
        for x in (tmp_path / "run/round-2/hard_pool.jsonl").read_text().splitlines()
    ]
    assert left == ["fcdr-2", "fcdr-6"]
    assert (result.outputs["model"] / "config.json").exists()  # round 1 trained a model
    assert not (tmp_path / "run/round-2/model").exists()  # nothing new in round 2
    # resuming with a larger budget replays the finished rounds from their state files and
    # samples only round 3
    with ScriptedLLMServer(_server_reply) as server:
        cfg = _cfg(server, pool, "t_max=3")
        again, _ = execute(
            "funreason.self-refine", run, cfg, output_dir=tmp_path / "run", resume=True, quiet=True
        )
        asked = [b["messages"][-1]["content"] for b in server.chat_bodies if b["model"] == "policy"]
    assert again.metrics == {"rounds": 3.0, "accepted_total": 1.0, "pool_left": 2.0}
    assert sorted(asked) == [
        "Give me a 3-day forecast for Rome.",
        "Weather in Oslo and 50 EUR in NOK?",
    ]
    assert again.outputs["model"] == result.outputs["model"]


def test_a_killed_round_resumes_inside_the_round(tmp_path):
    pool = _write_pool(tmp_path)
    with ScriptedLLMServer(_server_reply) as server:
        cfg = _cfg(server, pool, "t_max=1")
        first, _ = execute(
            "funreason.self-refine", run, cfg, output_dir=tmp_path / "run", quiet=True
        )
        asked = len(server.chat_bodies)
        # killed while training round 1: its answers and verdicts are in the sinks
        (tmp_path / "run/round-1" / "round_state.json").unlink()
        again, _ = execute(
            "funreason.self-refine", run, cfg, output_dir=tmp_path / "run", resume=True, quiet=True
        )
        assert len(server.chat_bodies) == asked  # no model or judge asked again
    assert asked == 3 + 2 * 3  # 3 answers; 2 parse, each judged by 3 judges
    verdicts = (tmp_path / "run/round-1/verdicts.jsonl").read_text().splitlines()
    assert len(verdicts) == 3 and again.metrics == first.metrics
    steps = [
        json.loads(x)
        for x in (tmp_path / "run/round-1/metrics.jsonl").read_text().splitlines()
        if '"loss"' in x
    ]
    assert [s["step"] for s in steps] == [1]  # training resumed from checkpoint-1: no new step


def test_v3_majority_accepts_what_unanimity_rejects(tmp_path):
    pool = _write_pool(tmp_path)
    with ScriptedLLMServer(_server_reply) as server:
        # judge replies only; keep training out of it by giving no training budget
        import asyncio

        from aworld_rl_funreason.data import read_samples
        from aworld_rl_funreason.recipes.self_refine import _filter_v3, _sample

        cfg = _cfg(server, pool, "vote=majority")
        queries = read_samples(pool)
        candidates = asyncio.run(_sample(cfg, "policy", queries))
        accepted = asyncio.run(_filter_v3(cfg, candidates, "r1"))
    assert sorted(s.meta["sampled_from"] for s in accepted) == ["fcdr-1", "fcdr-6"]


def test_v1_tiny_cpu_preset_trains_a_round(tmp_path):
    import math

    cfg = load_config(SelfRefineConfig, preset="tiny-cpu", presets=PRESETS)
    result, _ = execute("funreason.self-refine", run, cfg, output_dir=tmp_path, quiet=True)
    assert result.metrics == {"rounds": 1.0, "accepted_total": 1.0}  # Paris kept, Rome broken
    [row] = [
        json.loads(x) for x in (tmp_path / "round-1/new_samples.jsonl").read_text().splitlines()
    ]
    assert (
        row["answer"] == "[get_weather(city='Paris')]" and row["meta"]["sampled_from"] == "fcdr-1"
    )
    assert (result.outputs["model"] / "config.json").exists()
    assert list((tmp_path / "round-1/checkpoints").glob("checkpoint-*"))
    [logged] = [
        json.loads(x)
        for x in (tmp_path / "metrics.jsonl").read_text().splitlines()
        if "accepted" in x
    ]
    assert logged["trained"] == 1.0 and math.isfinite(logged["train_loss"])
    assert "SCRIPTED server" in (tmp_path / "report.md").read_text()


def test_accepted_answers_are_written_in_canonical_form():
    from aworld_rl_funreason.data import read_samples
    from aworld_rl_funreason.hdr import Candidate
    from aworld_rl_funreason.paths import resolve_path

    [paris] = read_samples(resolve_path("aworld_rl_funreason:sample_data/fcdr_tiny.jsonl"), 1)
    text = '<think>Paris.</think>\n\n[ get_weather( city = "Paris" )]'
    sample = Candidate(paris, 0, text).as_sample("r1")
    assert sample.answer == "[get_weather(city='Paris')]" and sample.reasoning == "Paris."


def test_v1_fcdr_keeps_only_answers_that_pass_unchanged(tmp_path):
    import asyncio

    from aworld_rl_funreason.data import read_samples
    from aworld_rl_funreason.recipes.self_refine import _filter_v1, _sample

    pool = _write_pool(tmp_path)
    with ScriptedLLMServer(_server_reply) as server:
        cfg = _cfg(server, pool, "mode=v1", "fcdr.judge=none", "num_samples=2")
        candidates = asyncio.run(_sample(cfg, "policy", read_samples(pool)))
        kept = asyncio.run(_filter_v1(cfg, candidates, "r1"))
    assert len(candidates) == 6
    # Rome's answer does not parse; Paris and Oslo pass the deterministic checks twice each
    assert sorted(s.id for s in kept) == [
        "fcdr-1#r1s0",
        "fcdr-1#r1s1",
        "fcdr-6#r1s0",
        "fcdr-6#r1s1",
    ]
    assert all(s.reasoning for s in kept)
