"""The ``--dry-run`` commands a package README shows, run as written (a test helper).

A package's test finds every ``aworld-run ... --preset paper ... --dry-run`` line of its README
(:func:`dry_run_commands`) and runs each with :func:`run_as_written`: the same words, through
``aworld-run``'s ``main``, with ``AWORLD_RL_HOME`` pointing at a fresh folder; the run must
complete and write ``plan.json`` holding at least one launch plan.
"""

from __future__ import annotations

import itertools
import json
import re
import shlex
from pathlib import Path
from typing import Any

_COMMAND = re.compile(r"^\s*(aworld-run\s.*)$")


def dry_run_commands(readme: Path, *, preset: str = "paper") -> list[list[str]]:
    """The README's ``aworld-run`` command lines with ``--preset <preset>`` and ``--dry-run``,
    split as a shell would (a trailing ``# comment`` dropped)."""
    found = []
    text = Path(readme).read_text(encoding="utf-8").replace("\\\n", " ")  # continuations
    for line in text.splitlines():
        match = _COMMAND.match(line)
        if not match:
            continue
        words = shlex.split(match.group(1), comments=True)
        pairs = list(itertools.pairwise(words))
        if "--dry-run" in words and ("--preset", preset) in pairs:
            found.append(words)
    return found


def run_as_written(words: list[str], home: Path) -> list[dict[str, Any]]:
    """Run ``aworld-run <words[1:]>`` with ``AWORLD_RL_HOME=home`` (set by the caller, e.g.
    the ``aworld_home`` fixture); the launch plans it wrote to ``plan.json``."""
    from aworld_rl_core import cli

    if words[0] != "aworld-run":
        raise ValueError(f"not an aworld-run command: {shlex.join(words)}")
    before = set(Path(home).glob("runs/*/*/plan.json"))
    code = cli.main(words[1:])
    if code != 0:
        raise AssertionError(f"`{shlex.join(words)}` exited with {code}")
    written = sorted(set(Path(home).glob("runs/*/*/plan.json")) - before)
    if len(written) != 1:
        raise AssertionError(f"`{shlex.join(words)}` wrote {len(written)} plan.json files")
    plans = json.loads(written[0].read_text(encoding="utf-8"))["plans"]
    if not plans:
        raise AssertionError(f"`{shlex.join(words)}` wrote an empty plan.json")
    return plans


class ReadmeDryRuns:
    """A package's README dry runs, as tests: subclass it in the package's tests with
    ``readme`` (the README's path), ``recipes`` (the recipes its paper dry runs name),
    ``backend`` and ``plans`` (each run's backend and number of launch plans: one value for
    every recipe, or a dict by recipe); override :meth:`check_plans` for more. Every plan
    with a memory estimate must fit the GPU it is judged against (``plan.DEFAULT_GPU_GIB``)."""

    readme: Path
    recipes: list[str]
    backend: str | dict[str, str]
    plans: int | dict[str, int] = 1

    def check_plans(self, plans: list[dict[str, Any]]) -> None:
        """More checks of one command's launch plans (none by default)."""

    def test_the_readme_shows_the_paper_dry_runs(self) -> None:
        """If this fails: the README's paper ``--dry-run`` lines name other recipes than
        ``recipes``; update one or the other."""
        commands = dry_run_commands(self.readme)
        assert sorted({words[1] for words in commands}) == self.recipes

    def test_readme_dry_runs_run_as_written(self, aworld_home: Path, capsys: Any) -> None:
        """If this fails: a README dry-run command no longer runs as written on the packaged
        samples (the message names it); fix the command, the preset or the backend's plan."""
        from aworld_rl_core.backends.plan import DEFAULT_GPU_GIB

        for words in dry_run_commands(self.readme):
            plans = run_as_written(words, aworld_home)
            backend = _by_recipe(self.backend, words[1])
            assert [p["backend"] for p in plans] == [backend] * _by_recipe(self.plans, words[1])
            assert "launch plan(s) written to" in capsys.readouterr().out
            for plan in plans:
                total = (plan.get("memory_gib") or {}).get("total")
                assert total is None or total <= DEFAULT_GPU_GIB, (words, plan["memory_note"])
            self.check_plans(plans)


def _by_recipe(value: Any, recipe: str) -> Any:
    """``value``, or its entry for ``recipe`` when it is a dict by recipe."""
    return value[recipe] if isinstance(value, dict) else value
