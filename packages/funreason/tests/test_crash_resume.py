"""Crash-and-fault harness (issue 29): ``funreason.sft`` (SRML, checkpoint every step) killed
with SIGKILL at a seeded random point, resumed, and compared with an uninterrupted run
(core's ``aworld_rl_core.testing.crash``). Training runs: slow."""

import os

import pytest

from aworld_rl_core.testing.crash import CrashCase, check_kill_resume


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_sft_killed_at_a_random_point_resumes_to_the_same_metrics(tmp_path, seed):
    env = {"AWORLD_RL_HOME": str(tmp_path / "home")}
    env["BFCL_PROJECT_ROOT"] = os.environ.get("BFCL_PROJECT_ROOT", str(tmp_path / "bfcl"))
    case = CrashCase(
        "funreason.sft", overrides=("trainer.save_steps=1", "trainer.max_steps=3"), env=env
    )
    report = check_kill_resume(case, tmp_path / "runs", seed)
    assert report.killed and report.differences == [], report.summary()


def test_refine_killed_at_a_random_point_resumes_to_the_same_pools(tmp_path):
    """``funreason.refine`` (FCDR's deterministic checks on the packaged samples: seconds)."""
    case = CrashCase("funreason.refine", env={"AWORLD_RL_HOME": str(tmp_path / "home")})
    report = check_kill_resume(case, tmp_path / "runs", 0)
    assert report.killed and report.differences == [], report.summary()


@pytest.mark.slow
def test_self_refine_killed_at_a_random_point_resumes_to_the_same_rounds(tmp_path):
    """``funreason.self-refine`` (rounds of generate, refine and train, each round's state kept)."""
    env = {"AWORLD_RL_HOME": str(tmp_path / "home")}
    env["BFCL_PROJECT_ROOT"] = os.environ.get("BFCL_PROJECT_ROOT", str(tmp_path / "bfcl"))
    case = CrashCase("funreason.self-refine", env=env)
    report = check_kill_resume(case, tmp_path / "runs", 0)
    assert report.killed and report.differences == [], report.summary()


@pytest.mark.slow
def test_eval_killed_at_a_random_point_resumes_to_the_same_results(tmp_path):
    """``funreason.eval`` (BFCL single-turn with a tiny local model; result files compared as
    rows without their ``latency``)."""
    env = {"AWORLD_RL_HOME": str(tmp_path / "home")}
    env["BFCL_PROJECT_ROOT"] = os.environ.get("BFCL_PROJECT_ROOT", str(tmp_path / "bfcl"))
    report = check_kill_resume(CrashCase("funreason.eval", env=env), tmp_path / "runs", 0)
    assert report.killed and report.differences == [], report.summary()
