"""core.bfcl-multi-turn: BFCL multi-turn entries as an environment, gold replays and rewards."""

import json

import pytest
from bfcl_helpers import entries

from aworld_rl_core import registry
from aworld_rl_core.testing.contracts import EnvironmentContract
from aworld_rl_core.tooluse.bfcl.environment import BfclMultiTurnEnv, env_from_row

ANSWER = "<think>done</think><answer>Done.</answer>"


def calls(strings):
    return f"<think>act</think><tool_call>[{', '.join(strings)}]</tool_call>"


def play(env, responses):
    env.reset()
    step = None
    for text in responses:
        step = env.step(text)
        if step.done:
            break
    return step


def gold(entry):
    """The ground truth as responses: one step of calls, then an answer, per turn."""
    out = []
    for turn in entry.ground_truth:
        if turn:
            out.append(calls(turn))
        out.append(ANSWER)
    return out


class TestBfclEnvContract(EnvironmentContract):
    environment = "core.bfcl-multi-turn"
    row = {"entry_id": "multi_turn_base_0"}


def test_gold_replays_score_one_for_twenty_entries():
    for entry in entries("multi_turn_base")[:20]:
        step = play(BfclMultiTurnEnv(entry), gold(entry))
        assert step.done and step.reward == 1.0, (entry.id, step.info)
        assert step.info["valid"] and step.info["turn_scores"] == [1.0] * len(entry.ground_truth)


def test_a_wrong_turn_or_a_format_error_gives_zero_binary():
    entry = entries("multi_turn_base")[0]
    responses = gold(entry)
    wrong = [ANSWER if i == 0 else r for i, r in enumerate(responses)]  # no calls in turn 0
    step = play(BfclMultiTurnEnv(entry), wrong)
    assert step.done and step.reward == 0.0 and step.info["turn_scores"][0] == 0.0
    sloppy = ["no tags at all", *responses]
    assert play(BfclMultiTurnEnv(entry), sloppy).reward == 0.0
    progress = play(BfclMultiTurnEnv(entry, reward="progress"), sloppy)
    assert progress.reward == 1.0 and progress.info["format_errors"] == 1


def test_observations_are_tool_results_then_the_next_user_turn():
    entry = entries("multi_turn_base")[0]
    env = BfclMultiTurnEnv(entry)
    opening = env.reset()
    assert opening[0]["role"] == "system" and opening[-1] == entry.turns[0][-1]
    step = env.step(calls(entry.ground_truth[0][:1]))
    (message,) = step.observation
    assert message["role"] == "tool"
    assert list(json.loads(message["content"])[0]) == [entry.ground_truth[0][0]]
    after = env.step(ANSWER)
    assert after.observation == entry.turns[1] and not after.done


def test_step_cap_forces_the_turn_to_end():
    entry = entries("multi_turn_base")[0]
    env = BfclMultiTurnEnv(entry, max_steps_per_turn=2)
    env.reset()
    env.step(calls(["pwd()"]))
    step = env.step(calls(["pwd()"]))
    assert step.observation == entry.turns[1] and env.turn_scores == [0.0]


def test_rows_with_an_inline_entry_and_a_prompt():
    entry = entries("multi_turn_base")[2]
    raw = {**entry.raw, "ground_truth": entry.ground_truth}
    prompt = [{"role": "system", "content": "custom"}, {"role": "user", "content": "hi"}]
    for given in (raw, json.dumps(raw)):
        env = env_from_row({"bfcl_entry": given, "prompt": prompt})
        assert env.reset() == prompt
        assert play(env, gold(entry)).reward == 1.0
    with pytest.raises(ValueError, match="'bfcl_entry'"):
        env_from_row({"question": "x"})
    with pytest.raises(KeyError, match="multi_turn_base_0"):
        env_from_row({"entry_id": "nope"})
    with pytest.raises(ValueError, match="reward must be"):
        BfclMultiTurnEnv(entry, reward="dense")


def test_registered_by_core():
    factory = registry.get_environment("core.bfcl-multi-turn")
    assert (
        factory({"entry_id": "multi_turn_base_1"}, protocol="think_python").entry.id
        == "multi_turn_base_1"
    )
