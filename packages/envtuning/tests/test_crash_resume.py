"""Crash-and-fault harness (issue 29): ``envtuning.curriculum`` (warm start, then the staged
curriculum with validation) killed with SIGKILL at a seeded random point, resumed, and compared
with an uninterrupted run: metrics rows and validation history (core's
``aworld_rl_core.testing.crash``). Training runs: slow."""

import os

import pytest

from aworld_rl_core.testing.crash import CrashCase, check_kill_resume

# the tiny-cpu preset made smaller (the three runs take minutes, not an hour, on a loaded CPU),
# with checkpoints in the warm start and every two GRPO steps and a validation every two steps,
# so a kill lands between saves and the resume continues from one
SMALL = (
    "data.train_per_category=6",
    "data.validation_per_category=2",
    "data.easy_size=4",
    "warm_start.steps=20",
    "warm_start.save_steps=10",
    "warm_start.entries=8",
    "evaluation.points_per_category=1",
    "validation.every=2",
    "validation.limit=1",
    "trainer.save_steps=2",
    "trainer.rl.group_size=4",
)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_curriculum_killed_at_a_random_point_resumes_to_the_same_history(tmp_path, seed):
    env = {"AWORLD_RL_HOME": str(tmp_path / "home")}
    env["BFCL_PROJECT_ROOT"] = os.environ.get("BFCL_PROJECT_ROOT", str(tmp_path / "bfcl"))
    case = CrashCase("envtuning.curriculum", overrides=SMALL, env=env, timeout_s=3000)
    report = check_kill_resume(case, tmp_path / "runs", seed)
    assert report.killed and report.differences == [], report.summary()


@pytest.mark.slow
def test_eval_killed_at_a_random_point_resumes_to_the_same_results(tmp_path):
    """``envtuning.eval`` (BFCL multi-turn with a tiny local model; BFCL result files compared
    as rows without their ``latency``)."""
    env = {"AWORLD_RL_HOME": str(tmp_path / "home")}
    env["BFCL_PROJECT_ROOT"] = os.environ.get("BFCL_PROJECT_ROOT", str(tmp_path / "bfcl"))
    report = check_kill_resume(CrashCase("envtuning.eval", env=env), tmp_path / "runs", 0)
    assert report.killed and report.differences == [], report.summary()
