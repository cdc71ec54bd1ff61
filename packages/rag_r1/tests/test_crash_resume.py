"""Crash-and-fault harness (issue 29): ``rag_r1.build-index`` killed with SIGKILL at a seeded
random point, resumed, and compared with an uninterrupted build (core's
``aworld_rl_core.testing.crash``); and the same build on a disk that fills mid-run."""

import pytest

from aworld_rl_core.testing.crash import CrashCase, check_full_disk, check_kill_resume


def _case(tmp_path):
    return CrashCase(
        "rag_r1.build-index",
        overrides=(
            "encoder.name_or_path=hash",
            "index.shard_size=8",
            "world.synthetic.people=60",
            "index_dir=",  # the run's own directory (the preset shares one between runs)
        ),
        env={"AWORLD_RL_HOME": str(tmp_path / "home")},
    )


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow)])
def test_build_index_killed_at_a_random_point_resumes_to_the_same_index(tmp_path, seed):
    report = check_kill_resume(_case(tmp_path), tmp_path / "runs", seed)
    print(report.summary())
    assert report.killed and report.differences == [], report.summary()


def test_build_index_on_a_disk_that_fills_fails_cleanly_and_resumes(small_disk, tmp_path):
    small_disk.free()
    problems = check_full_disk(_case(tmp_path), small_disk, tmp_path / "runs")
    assert problems == []


@pytest.mark.slow  # about two minutes for the three runs on a loaded CPU
def test_sft_data_killed_at_a_random_point_resumes_to_the_same_samples(tmp_path):
    """``rag_r1.sft-data`` (the scripted searcher over the MiniLM index, 40 questions)."""
    case = CrashCase("rag_r1.sft-data", env={"AWORLD_RL_HOME": str(tmp_path / "home")})
    report = check_kill_resume(case, tmp_path / "runs", 0)
    assert report.killed and report.differences == [], report.summary()


@pytest.mark.slow
def test_eval_killed_at_a_random_point_resumes_to_the_same_results(tmp_path):
    """``rag_r1.eval`` (the scripted searcher's episodes); its wall-time shares are not
    compared."""
    case = CrashCase(
        "rag_r1.eval",
        env={"AWORLD_RL_HOME": str(tmp_path / "home")},
        timing=("seconds_per_question", "retrieval_share"),
    )
    report = check_kill_resume(case, tmp_path / "runs", 0)
    assert report.killed and report.differences == [], report.summary()


@pytest.mark.slow
def test_train_killed_at_a_random_point_resumes_to_the_same_metrics(tmp_path):
    """``rag_r1.train`` cut short: a warm start of 4 steps, 3 GRPO steps with a checkpoint
    every step, 4 held-out and 4 validation questions."""
    case = CrashCase(
        "rag_r1.train",
        overrides=(
            "warm_start.steps=4",
            "warm_start.questions=8",
            "trainer.max_steps=3",
            "trainer.save_steps=1",
            "data.heldout=4",
            "data.validation=4",
        ),
        env={"AWORLD_RL_HOME": str(tmp_path / "home")},
        timing=("seconds_per_question",),  # wall time per question, at every point
    )
    report = check_kill_resume(case, tmp_path / "runs", 0)
    assert report.killed and report.differences == [], report.summary()
