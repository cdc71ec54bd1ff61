"""Every package's ``benchmarks/*.py`` runs in CI in its short mode (``--short``: tiny inputs,
one repeat, figures not asserted), so that an API change that breaks a benchmark fails CI.

In a package's tests::

    from aworld_rl_core.testing.benchmarks import benchmark_scripts, run_short

    @pytest.mark.parametrize("script", benchmark_scripts(__file__))
    def test_benchmark_runs_short(script, tmp_path):
        run_short(script, tmp_path)

A script reads ``--short`` with ``aworld_rl_core.benchmarking.parse_args``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

SHORT_TIMEOUT_S = 600


def benchmark_scripts(test_file: str | Path, *, slow: Sequence[str] = ()) -> list[Any]:
    """The package's ``benchmarks/*.py`` (``_helpers.py`` and sub-folders such as ``gpu/``
    excluded), for a test file in the package's ``tests/``, as pytest params; the scripts named
    in ``slow`` (even their short mode trains for minutes) are marked ``slow``."""
    package = Path(test_file).resolve().parent
    while not (package / "pyproject.toml").is_file():
        if package.parent == package:
            raise FileNotFoundError(f"no pyproject.toml above {test_file}")
        package = package.parent
    scripts = sorted(p for p in (package / "benchmarks").glob("*.py") if not p.name.startswith("_"))
    unknown = sorted(set(slow) - {p.name for p in scripts})
    if unknown:
        raise FileNotFoundError(f"slow benchmarks that do not exist: {', '.join(unknown)}")
    return [
        pytest.param(p, id=p.name, marks=[pytest.mark.slow] if p.name in slow else [])
        for p in scripts
    ]


def run_short(script: Path, workdir: Path, *args: str) -> str:
    """Run ``python SCRIPT --short [ARGS]`` in ``workdir`` (its ``AWORLD_RL_HOME`` too); its
    output, or an AssertionError with the tail of its output when it fails."""
    home = workdir / "aworld-home"
    home.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "AWORLD_RL_HOME": os.environ.get("AWORLD_RL_HOME", str(home))}
    env.setdefault("BFCL_PROJECT_ROOT", str(workdir / "bfcl-root"))
    done = subprocess.run(
        [sys.executable, str(script), "--short", *args],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=SHORT_TIMEOUT_S,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, (
        f"If this fails: `python {script.name} --short` broke (exit {done.returncode}); the "
        f"benchmark no longer matches the code it measures. Its output ends:\n{output[-3000:]}"
    )
    return output
