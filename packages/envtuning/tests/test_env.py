"""EnvTuningEnv: protocol, hand-computed episodes, augmentation switch, ground-truth replay."""

import json

import pytest

from aworld_rl_core.environment import Step
from aworld_rl_core.testing.contracts import EnvironmentContract
from aworld_rl_core.tooluse.bfcl import MULTI_TURN_CATEGORIES, load_category
from aworld_rl_envtuning.env import EnvTuningEnv, get_entry, make_env
from aworld_rl_envtuning.replay import replay_ground_truth
from aworld_rl_envtuning.rewards import RewardSpec, StepKind

TURN0 = [
    ("cd", {"folder": "document"}),
    ("mkdir", {"dir_name": "temp"}),
    ("mv", {"source": "final_report.pdf", "destination": "temp"}),
]


class TestEnvironmentContract(EnvironmentContract):
    environment = "envtuning.bfcl"
    row = {"entry_id": "multi_turn_base_0"}


def test_reset_opens_with_system_prompt_and_first_turn():
    env = EnvTuningEnv(get_entry("multi_turn_base_0"))
    messages = env.reset()
    assert [m["role"] for m in messages] == ["system", "user"]
    assert '"name": "mkdir"' in messages[0]["content"]  # the turn's tools, as BFCL JSON docs
    assert messages[1]["content"].startswith("Move 'final_report.pdf' within document")
    compact = EnvTuningEnv(get_entry("multi_turn_base_0"), tool_docs="compact").reset()
    assert "mkdir(dir_name: string) - " in compact[0]["content"]


def test_hand_computed_progress_episode(helpers):
    """4 turns: turn 0 right (1), turn 1 answered without calls (0), turns 2-3 never reached."""
    env = EnvTuningEnv(get_entry("multi_turn_base_0"), max_steps_per_turn=5)
    env.reset()
    s1 = env.step(helpers.calls(*TURN0))
    assert not s1.done and s1.reward == 0.0
    assert "Execution results:" in s1.observation[0]["content"]
    s2 = env.step(helpers.ANSWER)  # turn 0 passes: +1/4
    assert s2.reward == pytest.approx(0.25)
    assert s2.observation[0]["content"].startswith("Perform a detailed search using grep")
    s3 = env.step("no tags at all")  # format error, turn not advanced
    assert s3.reward == 0.0 and s3.info["turn"] == 1
    # every step's info counts calls and format errors so far (a truncated episode ends on one)
    assert (s3.info["tool_calls"], s3.info["format_errors"]) == (len(TURN0), 1)
    assert "does not follow the required format" in s3.observation[0]["content"]
    s4 = env.step(helpers.ANSWER)  # turn 1 had ground-truth calls: 0
    assert s4.reward == 0.0 and s4.info["turn"] == 2
    assert env.stats.turn_scores == [1.0, 0.0]
    assert env.stats.steps == [
        StepKind.TOOL_OK,
        StepKind.ANSWER,
        StepKind.FORMAT_ERROR,
        StepKind.ANSWER,
    ]
    assert env.progress == pytest.approx(0.25)  # over 4 expected turns, not the 2 reached


def test_step_cap_force_advances_and_episode_ends_with_info(helpers):
    env = EnvTuningEnv(get_entry("multi_turn_base_0"), max_steps_per_turn=2)
    env.reset()
    steps = [env.step("junk") for _ in range(8)]  # 4 turns x 2 format errors
    assert [s.done for s in steps] == [False] * 7 + [True]
    final = steps[-1]
    assert final.observation == []
    assert final.info["progress"] == 0.0
    assert final.info["turn_scores"] == [0.0, 0.0, 0.0, 0.0]
    assert final.info["format_errors"] == 8
    assert final.info["forced_turn_ends"] == 4
    assert final.info["tool_calls"] == 0 and final.info["tool_errors"] == 0
    with pytest.raises(RuntimeError, match="over"):
        env.step(helpers.ANSWER)


def test_empty_ground_truth_turn_blocks_calls_and_warns(helpers):
    entry = get_entry("multi_turn_miss_param_0")
    assert entry.ground_truth[3] == []
    env = EnvTuningEnv(entry)
    env.reset()
    for turn in range(3):
        env.step(helpers.calls(*_gt_pairs(entry, turn)))
        env.step(helpers.ANSWER)
    assert env.stats.turn_scores == [1.0, 1.0, 1.0]
    blocked = env.step(helpers.call("ls"))  # turn 3 must abstain: nothing runs, score 0
    assert blocked.info["turn"] == 4
    assert blocked.observation[0]["content"].startswith("SYSTEM WARNING")
    assert blocked.observation[0]["content"].endswith("The specific file is previous_report.pdf.")
    env.step(helpers.calls(*_gt_pairs(entry, 4)))
    final = env.step(helpers.ANSWER)
    assert final.done
    assert final.info["turn_scores"] == [1.0, 1.0, 1.0, 0.0, 1.0]
    assert final.info["progress"] == pytest.approx(4 / 5)
    assert env.stats.count(StepKind.BLOCKED_CALL) == 1


def test_answering_an_empty_ground_truth_turn_scores_one(helpers):
    entry = get_entry("multi_turn_miss_param_0")
    env = EnvTuningEnv(entry)
    env.reset()
    for turn in range(3):
        env.step(helpers.calls(*_gt_pairs(entry, turn)))
        env.step(helpers.ANSWER)
    env.step(helpers.ANSWER)
    assert env.stats.turn_scores[3] == 1.0


def test_augmentation_adds_hints_only_when_on(helpers):
    bad = helpers.call("cd", folder="document/temp")
    on = EnvTuningEnv(get_entry("multi_turn_base_0"))
    on.reset()
    text_on = on.step(bad).observation[0]["content"]
    off = EnvTuningEnv(get_entry("multi_turn_base_0"), augmentation=False)
    off.reset()
    text_off = off.step(bad).observation[0]["content"]
    assert "Unsupported path" in text_on and "Unsupported path" in text_off
    assert "Hint: Changing directory moves one folder level at a time" in text_on
    assert "Hint:" not in text_off
    assert on.augmenter.used == ["fs-nested-path"] and off.augmenter.used == []


def test_error_dicts_count_as_failed_unless_released_behaviour(helpers):
    missing = helpers.call("cat", file_name="nothere.txt")
    honest = EnvTuningEnv(get_entry("multi_turn_base_0"))
    honest.reset()
    honest.step(missing)
    released = EnvTuningEnv(get_entry("multi_turn_base_0"), error_dicts_fail=False)
    released.reset()
    released.step(missing)
    assert honest.stats.steps == [StepKind.TOOL_ERROR] and honest.tool_errors == 1
    assert released.stats.steps == [StepKind.TOOL_OK] and released.tool_errors == 0


def test_step_rewards_add_up_to_the_episode_reward_for_any_prefix(helpers):
    spec = RewardSpec(name="format")
    env = EnvTuningEnv(get_entry("multi_turn_base_0"), reward=spec)
    env.reset()
    texts = [helpers.calls(*TURN0), "junk", helpers.call("cat", file_name="x.txt"), "junk"]
    total = 0.0
    for text in texts:
        total += env.step(text).reward
        assert total == pytest.approx(spec(env.stats))
    # 4 responses, 2 format errors; tool steps 1 ok + 1 failed: 2/4 + 1/2
    assert total == pytest.approx(1.0)


def test_bad_construction_is_a_clear_error():
    with pytest.raises(ValueError, match="max_steps_per_turn"):
        EnvTuningEnv(get_entry("multi_turn_base_0"), max_steps_per_turn=0)
    with pytest.raises(KeyError, match="no BFCL multi-turn entry"):
        make_env({"entry_id": "multi_turn_base_9999"})
    with pytest.raises(RuntimeError, match="reset"):
        EnvTuningEnv(get_entry("multi_turn_base_0")).step("x")


@pytest.mark.parametrize("category", MULTI_TURN_CATEGORIES)
def test_ground_truth_replay_scores_every_entry_fully(category):
    """Acceptance: JSON calls then an answer, turn by turn, for all 200 entries per category."""
    failures = []
    for entry in load_category(category):
        env = EnvTuningEnv(entry)
        info = replay_ground_truth(env)
        env.close()
        if info["progress"] != 1.0 or info["format_errors"] or info["reward_sum"] != 1.0:
            failures.append((entry.id, info["turn_scores"], info["format_errors"]))
    assert failures == []


def _gt_pairs(entry, turn):
    from aworld_rl_core.tooluse import bind_positional, parse_python_calls, signatures_from_tools

    sig = signatures_from_tools(entry.functions)
    out = []
    for text in entry.ground_truth[turn]:
        (c,) = parse_python_calls(text)
        c = bind_positional(c, sig[c.name])
        out.append((c.name, dict(c.arguments)))
    return out


def test_step_is_a_step_instance(helpers):
    env = make_env({"entry_id": "multi_turn_long_context_0"}, augmentation=False)
    env.reset()
    assert isinstance(env.step(helpers.ANSWER), Step)


def test_the_factory_plays_the_row_entry():
    env = make_env({"entry_id": "multi_turn_base_0", "split": "train"}, hint_packs=["default"])
    assert env.entry.id == "multi_turn_base_0" and env.reset()[1]["role"] == "user"
    with pytest.raises(ValueError, match="needs an 'entry_id' column; got \\['topic'\\]"):
        make_env({"topic": "x"})


def _results(step):
    """The result strings listed in a tool observation."""
    line = next(x for x in step.observation[0]["content"].splitlines() if x.startswith("Exec"))
    return json.loads(line.removeprefix("Execution results: "))


def test_augmentation_changes_what_the_model_reads_not_the_outcome(helpers):
    """Same responses with hints on and off: same turn scores, rewards and API state; the
    result texts differ only by the appended hints."""
    entry = get_entry("multi_turn_base_0")
    texts = [
        helpers.call("cd", folder="document/temp"),
        helpers.call("cat", file_name="nothere.txt"),
        helpers.calls(*TURN0),
        helpers.ANSWER,
        helpers.call("grep", file_name="final_report.pdf", pattern="budget analysis"),
        helpers.ANSWER,
    ]
    runs = {}
    for flag in (True, False):
        env = EnvTuningEnv(entry, augmentation=flag)
        env.reset()
        steps = [env.step(t) for t in texts]
        fs = env._episode.instances["GorillaFileSystem"]
        runs[flag] = (steps, list(env.stats.turn_scores), str(fs._current_dir.name))
    (on, scores_on, cwd_on), (off, scores_off, cwd_off) = runs[True], runs[False]
    # the failed calls changed nothing: turn 0 passes; turn 1 greps in the wrong folder
    assert scores_on == scores_off == [1.0, 0.0]
    assert cwd_on == cwd_off == "document"
    assert [s.reward for s in on] == [s.reward for s in off]
    hinted = 0
    for index in (0, 1, 2, 4):
        for a, b in zip(_results(on[index]), _results(off[index]), strict=True):
            assert a.split("\nHint: ")[0] == b and "Hint:" not in b
            hinted += "\nHint: " in a
    assert hinted == 3  # the nested path, the missing file, the grep in the wrong folder


@pytest.mark.parametrize(
    ("credit", "turn3", "score", "steps_n", "format_errors"),
    [
        ("clean", ["answer"], 1.0, 9, 0),  # asks for the missing parameter
        ("clean", ["call"], 0.0, 9, 0),  # acts anyway: not executed, 0
        ("clean", ["junk", "junk"], 0.0, 10, 2),  # never parses: 0
        ("clean", ["junk", "answer"], 1.0, 10, 1),  # a late well-formed reply still earns it
        ("no_call", ["junk", "junk"], 1.0, 10, 2),  # the earlier reading: no call, credit
    ],
)
def test_abstain_turn_credit_by_hand(helpers, credit, turn3, score, steps_n, format_errors):
    """miss_param_0: turns 0-2 and 4 played by the ground truth, turn 3 (no call expected)
    as given, at most 2 steps per turn. Progress = (3 + turn-3 score + 1) / 5; the stage-1
    reward = R_format + R_tool = (N - format errors) / N + 4 clean tool steps / 4."""
    from aworld_rl_envtuning.rewards import stage1_reward

    entry = get_entry("multi_turn_miss_param_0")
    env = EnvTuningEnv(entry, max_steps_per_turn=2, abstain_credit=credit)
    env.reset()
    for turn in range(3):
        env.step(helpers.calls(*_gt_pairs(entry, turn)))
        env.step(helpers.ANSWER)
    texts = {"answer": helpers.ANSWER, "call": helpers.call("ls"), "junk": "no tags"}
    for reply in turn3:
        env.step(texts[reply])
    assert env.stats.turn_scores[3] == score
    env.step(helpers.calls(*_gt_pairs(entry, 4)))
    final = env.step(helpers.ANSWER)
    assert final.done and final.info["tool_errors"] == 0
    assert final.info["progress"] == pytest.approx((4 + score) / 5)
    assert len(env.stats.steps) == steps_n and env.stats.format_errors == format_errors
    assert stage1_reward(env.stats) == pytest.approx((steps_n - format_errors) / steps_n + 1.0)


def test_a_random_policy_earns_no_abstain_turn():
    """Garbage in every reply: 0 progress on miss_param (it used to earn the abstain turns)."""
    entry = get_entry("multi_turn_miss_param_0")
    env = EnvTuningEnv(entry, max_steps_per_turn=2)
    env.reset()
    while not env.step("garbage").done:
        pass
    assert env.progress == 0.0
    earlier = EnvTuningEnv(entry, max_steps_per_turn=2, abstain_credit="no_call")
    earlier.reset()
    while not earlier.step("garbage").done:
        pass
    assert earlier.progress == pytest.approx(1 / 5)


def test_the_resourceful_prompt_tells_the_model_to_call_nothing_when_it_must_ask():
    from aworld_rl_envtuning.prompts import system_prompt

    text = system_prompt([], style="resourceful")
    assert "make no call at all" in text and "Format 2" in text
    assert "try the available functions before asking" not in text
