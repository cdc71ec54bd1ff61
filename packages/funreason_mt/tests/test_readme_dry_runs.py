"""Every ``aworld-run ... --preset paper ... --dry-run`` command of the README runs as written on
a fresh install (the packaged sample data) and writes ``plan.json`` (core's ``--dry-run``)."""

from pathlib import Path

from aworld_rl_core.testing.readme import ReadmeDryRuns


class TestReadmeDryRuns(ReadmeDryRuns):
    readme = Path(__file__).parents[1] / "README.md"
    recipes = ["funreason_mt.rl"]
    backend = "verl"
