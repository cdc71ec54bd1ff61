"""Curriculum stages, the plateau rule and the resumable state."""

import math

import pytest

from aworld_rl_envtuning.curriculum import (
    CurriculumState,
    StageConfig,
    TransitionConfig,
    accuracy_plateaued,
    grad_norm_stable,
    paper_stages,
    stage_finished,
)


def test_paper_stages_match_the_paper():
    s1, s2, s3, s4 = paper_stages()
    assert (s1.data, s1.reward, s1.augmentation, s1.max_response_tokens, s1.batch_size) == (
        "easy",
        "format",
        True,
        10_000,
        16,
    )
    assert (s2.data, s2.reward, s2.augmentation, s2.max_response_tokens, s2.batch_size) == (
        "base",
        "progress",
        True,
        10_000,
        32,
    )
    assert (s3.data, s3.reward, s3.augmentation, s3.prompt_style, s3.max_response_tokens) == (
        "all",
        "progress",
        True,
        "resourceful",
        24_576,
    )
    assert (s4.data, s4.reward, s4.augmentation, s4.prompt_style) == (
        "all",
        "progress",
        False,
        "resourceful",
    )
    assert all(s.epochs == 20 for s in (s1, s2, s3, s4))
    # 20 epochs over 400 prompts at batch 32 = 250 steps = 25 rounds of 10
    assert s3.total_steps(400) == 250 and s3.max_rounds(400) == 25
    assert s1.total_steps(75) == math.ceil(20 * 75 / 16)


def test_plateau_needs_no_gain_over_patience():
    assert not accuracy_plateaued([0.1, 0.2, 0.3], patience=3, min_delta=0.01)  # too short
    assert accuracy_plateaued([0.1, 0.3, 0.3, 0.305, 0.29], patience=3, min_delta=0.01)
    assert not accuracy_plateaued([0.1, 0.3, 0.3, 0.32, 0.29], patience=3, min_delta=0.01)


def test_grad_norm_stability():
    assert grad_norm_stable([5.0, 1.0, 1.1, 0.9], window=3, max_cv=0.2)
    assert not grad_norm_stable([1.0, 1.0, 9.0], window=3, max_cv=0.5)  # exploding
    assert not grad_norm_stable([1.0, float("nan"), 1.0], window=3, max_cv=0.5)
    assert not grad_norm_stable([1.0], window=3, max_cv=0.5)


def test_stage_finished_by_rule():
    flat = [{"val_accuracy": a, "grad_norm": 1.0} for a in (0.2, 0.4, 0.4, 0.4, 0.4)]
    plateau, fixed = TransitionConfig(), TransitionConfig(rule="fixed")
    assert stage_finished(flat, 10, plateau)
    assert not stage_finished(flat, 10, fixed)
    assert stage_finished(flat, 5, fixed)  # epochs used up
    unstable = [dict(r, grad_norm=g) for r, g in zip(flat, (1, 1, 1, 10, 0.1), strict=True)]
    assert not stage_finished(unstable, 10, plateau)


def test_state_round_trip(tmp_path):
    stage = StageConfig(name="syntax", data="easy", reward="format")
    state = CurriculumState(model="tiny:qwen3")
    assert CurriculumState.load(tmp_path) is None
    state.record_round(stage, {"val_accuracy": 0.5, "grad_norm": 1.0}, "ckpt/a")
    state.finish_stage(stage)
    state.save(tmp_path)
    again = CurriculumState.load(tmp_path)
    assert again == state and again.model == "ckpt/a" and again.stage == 1


def test_bad_stage_is_a_clear_error():
    with pytest.raises(ValueError, match="reward 'accuracy'"):
        StageConfig(name="x", reward="accuracy")
    with pytest.raises(ValueError, match="data must be"):
        StageConfig(name="x", data="hard")
    with pytest.raises(ValueError, match="plateau"):
        TransitionConfig(rule="manual")
