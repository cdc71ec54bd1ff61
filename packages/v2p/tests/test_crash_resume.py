"""Crash-and-fault harness (issue 29): ``v2p.generate`` killed with SIGKILL at a seeded random
point (its browser's process group with it), resumed, and compared with an uninterrupted run
(core's ``aworld_rl_core.testing.crash``)."""

import pytest

from aworld_rl_core.testing.crash import CrashCase, check_kill_resume


# slow, and failing 2 of 7 runs here: killed after the recipe logged its summary row
# ({"pages", "samples"}, no step) but before the run was marked completed, the resume logs the
# row again (2 rows vs 1). Kept as the harness found it, for the v2p owners.
@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_generate_killed_at_a_random_point_resumes_to_the_same_data(tmp_path, seed):
    case = CrashCase("v2p.generate", env={"AWORLD_RL_HOME": str(tmp_path / "home")})
    report = check_kill_resume(case, tmp_path / "runs", seed)
    assert report.killed and report.differences == [], report.summary()
