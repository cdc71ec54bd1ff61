"""Evaluation through an OpenAI-compatible endpoint (the scripted server, a test double)."""

import json

import pytest

from aworld_rl_core.llm import OpenAIClient
from aworld_rl_core.llm.scripted_server import ScriptedLLMServer
from aworld_rl_core.tooluse.bfcl import load_category
from aworld_rl_envtuning.evaluate import (
    accuracy_table,
    evaluate,
    summarize,
    write_bfcl_results,
)
from aworld_rl_envtuning.replay import ground_truth_responses


def oracle(entries, *, wrong_categories=()):
    """Reply function playing each entry's ground truth (garbage for ``wrong_categories``)."""
    plans = {}
    for entry in entries:
        from aworld_rl_envtuning.env import EnvTuningEnv

        opening = EnvTuningEnv(entry, augmentation=False).reset()
        key = (opening[0]["content"], opening[1]["content"])
        assert key not in plans, "test entries must open differently"
        flat = [t for turn in ground_truth_responses(entry) for t in turn]
        plans[key] = (entry.category, flat)

    def reply(body):
        messages = body["messages"]
        category, flat = plans[(messages[0]["content"], messages[1]["content"])]
        if category in wrong_categories:
            return "I will just talk."
        return flat[sum(m["role"] == "assistant" for m in messages)]

    return reply


@pytest.fixture
def entries():
    return load_category("multi_turn_base", limit=3) + load_category(
        "multi_turn_miss_func", limit=3
    )


def test_ground_truth_agent_scores_100_and_garbage_scores_0(entries, tmp_path):
    reply = oracle(entries, wrong_categories=("multi_turn_miss_func",))
    with ScriptedLLMServer(reply) as server:
        client = OpenAIClient(base_url=server.base_url, model=server.model, api_key_env=None)
        outcomes = evaluate(client, entries, concurrency=4)
    metrics = summarize(outcomes)
    assert metrics["accuracy/multi_turn_base"] == 1.0
    assert metrics["progress/multi_turn_base"] == 1.0
    assert metrics["accuracy/multi_turn_miss_func"] == 0.0
    assert metrics["accuracy/average"] == 0.5
    garbage = [o for o in outcomes if o.category == "multi_turn_miss_func"]
    # every response is a format error; 20 per turn before the cap moves on
    assert all(o.info["format_errors"] == 20 * len(o.info["turn_scores"]) for o in garbage)
    paths = write_bfcl_results(outcomes, tmp_path, "scripted/model")
    assert [p.name for p in paths] == [
        "BFCL_v4_multi_turn_base_result.json",
        "BFCL_v4_multi_turn_miss_func_result.json",
    ]
    first = json.loads(paths[0].read_text().splitlines()[0])
    assert first["id"] == "multi_turn_base_0"
    assert first["result"][0] == [
        [
            "cd(folder='document')",
            "mkdir(dir_name='temp')",
            "mv(source='final_report.pdf', destination='temp')",
        ]
    ]
    assert "| average | 50.00 |" in accuracy_table(metrics)


def test_result_files_agree_with_bfcl_evals_own_checker(tmp_path):
    """The calls we write per turn get the same verdict from bfcl-eval's multi_turn_checker."""
    from aworld_rl_core.tooluse.bfcl.reference import BfclReference
    from aworld_rl_envtuning.evaluate import GroundTruthAgent

    entries = [
        e for c in ("multi_turn_base", "multi_turn_miss_param") for e in load_category(c, limit=10)
    ]
    outcomes = evaluate(GroundTruthAgent(), entries)
    ref = BfclReference(tmp_path / "bfcl")
    for entry, outcome in zip(entries, outcomes, strict=True):
        flat = [[c for step in turn for c in step] for turn in outcome.info["calls_per_turn"]]
        assert outcome.valid and ref.multi_turn_valid(entry, flat), entry.id
        # drop the last turn's calls: both judges must now reject the entry
        if flat[-1]:
            broken = [*flat[:-1], []]
            from aworld_rl_core.tooluse.bfcl import judge_multi_turn

            assert not judge_multi_turn(entry, broken).valid
            assert not ref.multi_turn_valid(entry, broken)


def test_a_failing_endpoint_fails_its_entries_only(entries):
    from aworld_rl_core.llm import RetryPolicy
    from aworld_rl_core.llm.scripted_server import Fault
    from aworld_rl_envtuning.env import EnvTuningEnv

    good = oracle(entries)
    broken = set()
    for entry in entries:
        if entry.category == "multi_turn_miss_func":
            opening = EnvTuningEnv(entry).reset()
            broken.add((opening[0]["content"], opening[1]["content"]))

    def reply(body):
        messages = body["messages"]
        if (messages[0]["content"], messages[1]["content"]) in broken:
            return Fault.error(500)
        return good(body)

    with ScriptedLLMServer(reply) as server:
        client = OpenAIClient(
            base_url=server.base_url,
            model=server.model,
            api_key_env=None,
            retry=RetryPolicy(max_retries=0),
        )
        outcomes = evaluate(client, entries, concurrency=4)
    by_category = {}
    for o in outcomes:
        by_category.setdefault(o.category, []).append(o)
    assert all(o.valid for o in by_category["multi_turn_base"])
    failed = by_category["multi_turn_miss_func"]
    assert all(not o.valid and o.error_type.startswith("llm_error: LLMHTTPError") for o in failed)
