"""Crash-and-fault harness (issue 29): ``funreason_mt.synthesize`` killed with SIGKILL at a
seeded random point, resumed, and compared with an uninterrupted run (core's
``aworld_rl_core.testing.crash``). A minute per run on CPU: slow."""

import os

import pytest

from aworld_rl_core.testing.crash import CrashCase, check_kill_resume


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_synthesize_killed_at_a_random_point_resumes_to_the_same_records(tmp_path, seed):
    env = {"AWORLD_RL_HOME": str(tmp_path / "home")}
    env["BFCL_PROJECT_ROOT"] = os.environ.get("BFCL_PROJECT_ROOT", str(tmp_path / "bfcl"))
    case = CrashCase("funreason_mt.synthesize", env=env)
    report = check_kill_resume(case, tmp_path / "runs", seed)
    assert report.killed and report.differences == [], report.summary()


@pytest.mark.slow
def test_sft_killed_at_a_random_point_resumes_to_the_same_metrics(tmp_path):
    """``funreason_mt.sft`` (hf-sft on the packaged trajectories, a checkpoint every step)."""
    env = {"AWORLD_RL_HOME": str(tmp_path / "home")}
    env["BFCL_PROJECT_ROOT"] = os.environ.get("BFCL_PROJECT_ROOT", str(tmp_path / "bfcl"))
    case = CrashCase("funreason_mt.sft", overrides=("trainer.save_steps=1",), env=env)
    report = check_kill_resume(case, tmp_path / "runs", 0)
    assert report.killed and report.differences == [], report.summary()


@pytest.mark.slow
def test_rl_killed_at_a_random_point_resumes_to_the_same_metrics(tmp_path):
    """``funreason_mt.rl`` (one GRPO step through core's BFCL environment, with its eval row at
    that step: two rows for step 1 in every run, which the harness once called a repeat)."""
    env = {"AWORLD_RL_HOME": str(tmp_path / "home")}
    env["BFCL_PROJECT_ROOT"] = os.environ.get("BFCL_PROJECT_ROOT", str(tmp_path / "bfcl"))
    case = CrashCase("funreason_mt.rl", overrides=("trainer.save_steps=1",), env=env)
    report = check_kill_resume(case, tmp_path / "runs", 0)
    assert report.killed and report.differences == [], report.summary()


def test_eval_killed_at_a_random_point_resumes_to_the_same_results(tmp_path):
    """``funreason_mt.eval`` (the BFCL multi-turn ground-truth agent: seconds; BFCL result files
    compared as rows without their ``latency``)."""
    env = {"AWORLD_RL_HOME": str(tmp_path / "home")}
    env["BFCL_PROJECT_ROOT"] = os.environ.get("BFCL_PROJECT_ROOT", str(tmp_path / "bfcl"))
    report = check_kill_resume(CrashCase("funreason_mt.eval", env=env), tmp_path / "runs", 0)
    assert report.killed and report.differences == [], report.summary()


def test_graph_killed_at_a_random_point_resumes_to_the_same_graph(tmp_path):
    """``funreason_mt.graph`` (the environment-API graph of the eight BFCL classes)."""
    env = {"AWORLD_RL_HOME": str(tmp_path / "home")}
    env["BFCL_PROJECT_ROOT"] = os.environ.get("BFCL_PROJECT_ROOT", str(tmp_path / "bfcl"))
    report = check_kill_resume(CrashCase("funreason_mt.graph", env=env), tmp_path / "runs", 0)
    assert report.killed and report.differences == [], report.summary()
