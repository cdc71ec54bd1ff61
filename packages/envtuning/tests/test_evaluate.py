"""Evaluation through an OpenAI-compatible endpoint (the scripted server, a test double), in
BFCL's protocol and EnvTuning's; BFCL-protocol verdicts checked against bfcl-eval's own eval
runner on the result files."""

import json

import pytest

from aworld_rl_core.llm import OpenAIClient
from aworld_rl_core.llm.scripted_server import ScriptedLLMServer
from aworld_rl_core.testing.bfcl_agents import opening_key, scripted_replies
from aworld_rl_core.tooluse.bfcl import ground_truth_replies, load_category
from aworld_rl_core.tooluse.bfcl.reference import BfclReference
from aworld_rl_core.tooluse.bfcl.results import DEFAULT_MODEL, write_results
from aworld_rl_envtuning.evaluate import (
    accuracy_table,
    evaluate,
    make_env,
    result_rows,
    summarize,
)
from aworld_rl_envtuning.replay import ground_truth_responses

PROTOCOLS = ("bfcl", "envtuning")


def gt_replies(entry, protocol):
    if protocol == "bfcl":
        return ground_truth_replies(entry)
    return ground_truth_responses(entry)


# EnvTuning's observations are user messages: tool results and format feedback
OBSERVATIONS = ("Here are the function's execution results", "Your response does not follow")


def oracle(entries, protocol, *, script=None):
    """Reply function playing each entry: ``script(entry, protocol)`` gives the replies per turn
    (default: the ground truth); past a turn's replies it repeats the last."""
    scripts = {
        opening_key(make_env(e, protocol, {}).reset()): (script or gt_replies)(e, protocol)
        for e in entries
    }
    assert len(scripts) == len(entries), "test entries must open differently"
    return scripted_replies(scripts, observations=OBSERVATIONS)


def client_for(server):
    return OpenAIClient(base_url=server.base_url, model=server.model, api_key_env=None)


def official(tmp_path, outcomes):
    """bfcl-eval's own eval runner on the written result files: {category: (correct, total)}."""
    ref = BfclReference(tmp_path / "bfcl-root")
    paths = write_results(tmp_path / "result", DEFAULT_MODEL, result_rows(outcomes))
    return {c: ref.score_file(p, c)[:2] for c, p in paths.items()}


@pytest.fixture
def entries():
    return load_category("multi_turn_base", limit=3) + load_category(
        "multi_turn_miss_func", limit=3
    )


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_ground_truth_scores_100_through_a_server_and_bfcl_agrees(entries, protocol, tmp_path):
    with ScriptedLLMServer(oracle(entries, protocol)) as server:
        outcomes = evaluate(client_for(server), entries, protocol=protocol, concurrency=4)
    metrics = summarize(outcomes)
    assert metrics["accuracy/average"] == 1.0 and metrics["progress/average"] == 1.0
    assert official(tmp_path, outcomes) == {
        "multi_turn_base": (3, 3),
        "multi_turn_miss_func": (3, 3),
    }
    row = result_rows(outcomes)[0]
    assert row["id"] == "multi_turn_base_0"
    assert row["result"][0] == [
        "[cd(folder='document'), mkdir(dir_name='temp'), "
        "mv(source='final_report.pdf', destination='temp')]",
        "Done." if protocol == "bfcl" else "<think>Turn 0 is done.</think><answer>Done.</answer>",
    ]
    # BFCL's metadata fields have the shape of `result`: a value per turn and reply
    assert [len(t) for t in row["latency"]] == [len(t) for t in row["result"]]
    assert all(n > 0 for t in row["input_token_count"] for n in t)
    assert "| average | 100.00 |" in accuracy_table(metrics)


def _abstain_with_a_read_only_call(entry, protocol):
    """The ground truth, but a read-only `pwd()` before abstaining where the model should."""
    turns = gt_replies(entry, protocol)
    call = (
        "[pwd()]"
        if protocol == "bfcl"
        else ('<think>look first</think><tool_call>[{"name": "pwd", "arguments": {}}]</tool_call>')
    )
    return [[call, *t] if not gt else t for t, gt in zip(turns, entry.ground_truth, strict=True)]


def _never_ends_a_turn(entry, protocol):
    """The ground truth of each turn, then `pwd()` for ever instead of answering."""
    call = (
        "[pwd()]"
        if protocol == "bfcl"
        else ('<think>again</think><tool_call>[{"name": "pwd", "arguments": {}}]</tool_call>')
    )
    return [[*t[:-1], call] for t in gt_replies(entry, protocol)]


def test_a_read_only_call_in_abstain_turns_gets_bfcls_verdict(tmp_path):
    entries = [
        e
        for e in load_category("multi_turn_miss_param", limit=20)
        if "GorillaFileSystem" in e.involved_classes
    ][:4]
    verdicts = {}
    for protocol in PROTOCOLS:
        reply = oracle(entries, protocol, script=_abstain_with_a_read_only_call)
        with ScriptedLLMServer(reply) as server:
            outcomes = evaluate(client_for(server), entries, protocol=protocol, concurrency=4)
        verdicts[protocol] = [o.valid for o in outcomes]
        if protocol == "bfcl":  # BFCL executes the call and checks nothing in that turn
            assert official(tmp_path, outcomes) == {"multi_turn_miss_param": (4, 4)}
    assert verdicts == {"bfcl": [True] * 4, "envtuning": [False] * 4}


def test_an_agent_that_never_ends_a_turn_gets_bfcls_verdict(tmp_path):
    entries = load_category("multi_turn_base", limit=2)
    results = {}
    for protocol in PROTOCOLS:
        with ScriptedLLMServer(oracle(entries, protocol, script=_never_ends_a_turn)) as server:
            outcomes = evaluate(client_for(server), entries, protocol=protocol, concurrency=2)
        results[protocol] = outcomes
    # BFCL force-quits the entry after 20 replies with calls: it fails
    bfcl = results["bfcl"]
    assert [o.valid for o in bfcl] == [False, False]
    assert all(o.error_type == "multi_turn:force_terminated" and o.info["force_quit"] for o in bfcl)
    assert official(tmp_path, bfcl) == {"multi_turn_base": (0, 2)}
    # EnvTuning's protocol moves on after 20 replies: the calls made score the entry as passed
    assert all(
        o.valid and o.info["forced_turn_ends"] == len(o.info["turn_scores"])
        for o in results["envtuning"]
    )


def test_garbage_scores_0_in_both_protocols(entries):
    for protocol in PROTOCOLS:
        with ScriptedLLMServer("I will just talk.") as server:
            outcomes = evaluate(client_for(server), entries, protocol=protocol, concurrency=4)
        assert summarize(outcomes)["accuracy/average"] == 0.0
        if protocol == "envtuning":  # every reply a format error; 20 per turn before moving on
            assert all(o.info["format_errors"] == 20 * len(o.info["turn_scores"]) for o in outcomes)
        else:  # a reply without calls ends the turn
            assert all(o.info["steps"] == len(o.info["result"]) for o in outcomes)


def test_a_failing_endpoint_fails_its_entries_only(entries):
    from aworld_rl_core.llm import RetryPolicy
    from aworld_rl_core.llm.scripted_server import Fault

    good = oracle(entries, "bfcl")
    broken = set()
    for entry in entries:
        if entry.category == "multi_turn_miss_func":
            opening = make_env(entry, "bfcl", {}).reset()
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
    json.dumps(result_rows(outcomes))  # the failed entries still give result rows
