"""EnvTuning rewards against hand-computed episodes."""

import pytest

from aworld_rl_envtuning.rewards import (
    EpisodeStats,
    RewardSpec,
    StepKind,
    binary_reward,
    format_score,
    mixed_reward,
    progress_reward,
    stage1_reward,
    tool_score,
)

F, OK, ERR, ANS, BLK = (
    StepKind.FORMAT_ERROR,
    StepKind.TOOL_OK,
    StepKind.TOOL_ERROR,
    StepKind.ANSWER,
    StepKind.BLOCKED_CALL,
)


def episode():
    """4 expected turns; 3 reached (scores 1, 0, 1); 8 responses: 2 format errors, 3 clean tool
    steps, 1 failed tool step, 2 answers; one turn closed by the step cap."""
    return EpisodeStats(
        expected_turns=4,
        steps=[OK, F, OK, ANS, ERR, F, OK, ANS],
        turn_scores=[1.0, 0.0, 1.0],
        forced_turn_ends=1,
    )


def test_stage1_reward_hand_computed():
    stats = episode()
    assert format_score(stats) == pytest.approx(6 / 8)
    assert format_score(stats, "entries") == pytest.approx(7 / 9)  # + the forced turn end
    assert tool_score(stats) == pytest.approx(3 / 4)
    assert stage1_reward(stats) == pytest.approx(6 / 8 + 3 / 4)
    assert stage1_reward(stats, "entries") == pytest.approx(7 / 9 + 3 / 4)


def test_stage1_without_tool_calls_is_zero():
    stats = EpisodeStats(expected_turns=2, steps=[ANS, ANS], turn_scores=[1.0, 1.0])
    assert tool_score(stats) == 0.0
    assert stage1_reward(stats) == 0.0  # I_tool = 0
    assert format_score(stats) == 1.0


def test_stage1_blocked_calls_are_not_tool_steps():
    stats = EpisodeStats(expected_turns=1, steps=[BLK], turn_scores=[0.0])
    assert stage1_reward(stats) == 0.0


def test_progress_denominators():
    stats = episode()
    assert progress_reward(stats) == pytest.approx(2 / 4)  # the 4th turn was never reached
    assert progress_reward(stats, "reached") == pytest.approx(2 / 3)  # released code


def test_cut_off_episode_is_not_rewarded_for_unreached_turns():
    # one success of three expected turns, then cut off
    stats = EpisodeStats(expected_turns=3, steps=[OK, ANS, OK], turn_scores=[1.0])
    assert progress_reward(stats) == pytest.approx(1 / 3)
    assert progress_reward(stats, "reached") == 1.0


def test_binary_needs_every_expected_turn():
    assert binary_reward(episode()) == 0.0
    full = EpisodeStats(expected_turns=2, steps=[OK, ANS, ANS], turn_scores=[1.0, 1.0])
    assert binary_reward(full) == 1.0
    cut = EpisodeStats(expected_turns=3, steps=[OK, ANS, ANS], turn_scores=[1.0, 1.0])
    assert binary_reward(cut) == 0.0


def test_mixed_reward_direct_grpo():
    stats = episode()
    assert mixed_reward(stats) == pytest.approx(0.9 * 0.5 + 0.1 * 0.75)
    assert RewardSpec(name="mixed")(stats) == pytest.approx(0.525)
    assert RewardSpec(name="mixed", mix_progress=0.5, denominator="reached")(stats) == (
        pytest.approx(0.5 * 2 / 3 + 0.5 * 0.75)
    )


def test_spec_dispatch_and_validation():
    stats = episode()
    assert RewardSpec(name="format")(stats) == pytest.approx(1.5)
    assert RewardSpec(name="progress")(stats) == pytest.approx(0.5)
    assert RewardSpec(name="binary")(stats) == 0.0
    assert RewardSpec(name="accuracy")(stats) == 0.0  # not judged yet
    stats.valid = True  # BFCL's verdict on the finished episode
    assert RewardSpec(name="accuracy")(stats) == 1.0
    with pytest.raises(ValueError, match="unknown reward"):
        RewardSpec(name="exact")
    with pytest.raises(ValueError, match="denominator"):
        RewardSpec(denominator="all")
    with pytest.raises(ValueError, match="at least one"):
        EpisodeStats(expected_turns=0)
