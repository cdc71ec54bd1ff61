"""Every benchmarks/*.py of this package runs in its short mode (tiny inputs, one repeat, no
timing asserted), so that an API change that breaks a benchmark fails CI."""

import pytest

from aworld_rl_core.testing.benchmarks import benchmark_scripts, run_short


@pytest.mark.parametrize("script", benchmark_scripts(__file__))
def test_benchmark_runs_short(script, tmp_path):
    """If this fails: the benchmark's --short run broke; run it by hand to see where."""
    run_short(script, tmp_path)
