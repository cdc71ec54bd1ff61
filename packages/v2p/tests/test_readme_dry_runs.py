"""Every ``aworld-run ... --preset paper ... --dry-run`` command of the README runs as written on
a fresh install (the packaged sample data) and writes ``plan.json`` (core's ``--dry-run``)."""

from pathlib import Path

import pytest

from aworld_rl_core.testing.readme import dry_run_commands, run_as_written

README = Path(__file__).parents[1] / "README.md"
COMMANDS = dry_run_commands(README)
EXPECTED = ["v2p.train"]
BACKEND, PLANS = "hf-sft", 1


def test_the_readme_shows_the_paper_dry_runs():
    assert sorted({words[1] for words in COMMANDS}) == EXPECTED


@pytest.mark.parametrize("words", COMMANDS, ids=lambda words: words[1])
def test_readme_dry_run_runs_as_written(words, aworld_home, capsys):
    plans = run_as_written(words, aworld_home)
    assert all(p["backend"] == BACKEND for p in plans) and len(plans) == PLANS
    assert "launch plan(s) written to" in capsys.readouterr().out
