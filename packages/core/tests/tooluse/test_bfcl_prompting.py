"""BfclEnv, BFCL's prompting protocol: scripted agents get the verdicts bfcl-eval's own eval
runner gives the result files they leave."""

from __future__ import annotations

import pytest
from bfcl_helpers import all_multi_turn, entries, reference

from aworld_rl_core.tooluse.bfcl import judge_multi_turn
from aworld_rl_core.tooluse.bfcl.prompting import (
    MAXIMUM_STEP_LIMIT,
    BfclEnv,
    ground_truth_replies,
)
from aworld_rl_core.tooluse.bfcl.results import DEFAULT_MODEL, write_results


def play(entry, agent):
    """Run ``agent(turn, step_in_turn, messages) -> text`` through a BfclEnv; final info."""
    env = BfclEnv(entry)
    messages = env.reset()
    turn = step_in_turn = 0
    try:
        while True:
            text = agent(turn, step_in_turn, messages)
            messages.append({"role": "assistant", "content": text})
            step = env.step(text)
            if step.done:
                return step.info
            messages.extend(step.observation)
            if step.info.get("turn_ended"):
                turn, step_in_turn = turn + 1, 0
            else:
                step_in_turn += 1
    finally:
        env.close()


def scripted(replies_per_turn, *, then=None):
    """An agent reading its replies per turn; ``then`` answers once a turn's replies run out."""

    def agent(turn, index, _messages):
        replies = replies_per_turn[turn]
        if index < len(replies):
            return replies[index]
        return then(turn, index) if then else "Done."

    return agent


def official(tmp_path, infos):
    """bfcl-eval's own eval runner on the result file of ``infos``: (correct, total, failed)."""
    rows = [{"id": i["entry_id"], "result": i["result"]} for i in infos]
    (category, path), *_ = write_results(tmp_path, DEFAULT_MODEL, rows).items()
    return reference().score_file(path, category)


def test_ground_truth_replies_pass_all_800_as_bfcl_scores_them(tmp_path):
    infos = {}
    for entry in all_multi_turn():
        info = play(entry, scripted(ground_truth_replies(entry)))
        verdict = judge_multi_turn(entry, info["calls_per_turn"], irrelevance_check=False)
        assert verdict.valid and info["progress"] == 1.0 and not info["force_quit"], entry.id
        infos.setdefault(entry.category, []).append(info)
    for category, items in infos.items():
        correct, total, failed = official(tmp_path / category, items)
        assert (correct, total, failed) == (200, 200, set()), category


def test_observations_are_bfcls_execution_results():
    entry = entries("multi_turn_base")[0]
    replies = ground_truth_replies(entry)
    env = BfclEnv(entry)
    env.reset()
    step = env.step(replies[0][0])
    expected = reference().execute(entry, [entry.ground_truth[0]])[0]
    assert [m["content"] for m in step.observation] == expected
    assert [m["role"] for m in step.observation] == ["tool"] * len(expected)
    assert step.observation[0]["name"] == "cd(folder='document')"
    env.close()


def _abstaining_entries():
    return [
        e
        for c in ("multi_turn_miss_param", "multi_turn_miss_func")
        for e in entries(c)
        if "GorillaFileSystem" in e.involved_classes
    ][:12]


def test_a_read_only_call_in_an_abstain_turn_passes_as_in_bfcl(tmp_path):
    infos = []
    for entry in _abstaining_entries():
        replies = [
            list(t) if gt else ["[pwd()]", *t]
            for t, gt in zip(ground_truth_replies(entry), entry.ground_truth, strict=True)
        ]
        info = play(entry, scripted(replies))
        assert any(turn == [["pwd()"]] for turn in info["calls_per_turn"])
        # BFCL's rule: the call is executed, nothing is checked in that turn
        assert judge_multi_turn(entry, info["calls_per_turn"], irrelevance_check=False).valid
        # the stricter rule (EnvTuning's, BFCL's unused irrelevance checker) fails it
        assert not judge_multi_turn(entry, info["calls_per_turn"]).valid
        infos.append(info)
    assert official(tmp_path, infos)[:2] == (len(infos), len(infos))


def test_an_agent_that_never_ends_a_turn_is_force_quit_and_fails(tmp_path):
    entry = entries("multi_turn_base")[0]
    gt = ground_truth_replies(entry)
    info = play(entry, scripted([t[:-1] for t in gt], then=lambda turn, i: "[pwd()]"))
    assert info["force_quit"] and len(info["result"]) == 1
    assert len(info["result"][0]) == MAXIMUM_STEP_LIMIT + 1  # 21 replies with calls
    verdict = judge_multi_turn(entry, info["calls_per_turn"], irrelevance_check=False)
    assert not verdict.valid and verdict.error_type == "multi_turn:force_terminated"
    assert official(tmp_path, [info]) == (0, 1, {entry.id})


def test_twenty_call_replies_in_a_turn_are_allowed():
    entry = entries("multi_turn_base")[0]
    gt = ground_truth_replies(entry)
    padded = [[*t[:-1], *["[pwd()]"] * (MAXIMUM_STEP_LIMIT - len(t) + 1), t[-1]] for t in gt]
    info = play(entry, scripted(padded))
    assert not info["force_quit"] and info["progress"] == 1.0
    assert max(len(turn) for turn in info["result"]) == MAXIMUM_STEP_LIMIT + 1  # + the answer
    assert judge_multi_turn(entry, info["calls_per_turn"], irrelevance_check=False).valid


def test_replies_that_do_not_decode_end_the_turn_and_are_kept_as_written():
    entry = entries("multi_turn_base")[1]
    info = play(entry, lambda turn, index, messages: "[cd(folder=documents)]  # a bare name")
    assert info["result"] == [["[cd(folder=documents)]  # a bare name"]] * len(entry.turns)
    assert info["calls_per_turn"] == [[]] * len(entry.turns) and info["progress"] == 0.0


def test_positional_arguments_are_dropped_as_bfcls_decoder_drops_them():
    entry = entries("multi_turn_base")[0]
    env = BfclEnv(entry)
    env.reset()
    step = env.step("[cd('document')]")
    assert env.calls_per_turn[0] == [["cd()"]]
    assert [m["content"] for m in step.observation] == reference().execute(entry, [["cd()"]])[0]
    assert "missing 1 required positional argument" in step.observation[0]["content"]
    env.close()


def test_misuse_is_an_error():
    with pytest.raises(ValueError, match="multi-turn"):
        BfclEnv(entries("simple_python")[0])
    env = BfclEnv(entries("multi_turn_base")[0])
    with pytest.raises(RuntimeError, match="reset"):
        env.step("[pwd()]")
