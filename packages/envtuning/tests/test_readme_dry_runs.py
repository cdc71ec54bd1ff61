"""Every ``aworld-run ... --preset paper ... --dry-run`` command of the README runs as written on
a fresh install (the packaged sample data) and writes ``plan.json`` (core's ``--dry-run``)."""

from pathlib import Path

from aworld_rl_core.testing.readme import ReadmeDryRuns


class TestReadmeDryRuns(ReadmeDryRuns):
    readme = Path(__file__).parents[1] / "README.md"
    recipes = ["envtuning.curriculum"]
    backend = "verl"
    plans = 4

    def check_plans(self, plans):
        # stages 2-4 start from the previous stage's planned model: its shape is the base's
        assert all(p["memory_gib"] is not None for p in plans)
