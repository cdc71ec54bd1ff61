"""Score an eval run's BFCL result files with bfcl-eval's own scorer; compare with our scores.

    python -m aworld_rl_core.tooluse.bfcl.official RUN_DIR [RUN_DIR ...]

Each ``RUN_DIR`` is an ``envtuning.eval``, ``funreason.eval`` or ``funreason_mt.eval`` run
directory: its ``bfcl/scores.json`` holds our (correct, total) per category and the model name
of the result files in ``bfcl/result/``. This runs ``bfcl evaluate ... --partial-eval`` into
``bfcl/score/`` and fails (exit status 1) on any category whose counts differ, or that the scorer
did not score, and when the overall accuracy of its leaderboard table (``data_overall.csv``, the
categories not run counted as 0) differs from ours (:func:`leaderboard.aggregate`,
``missing="zero"``) at its two decimals.
``bfcl evaluate`` needs bfcl-eval with all its dependencies, which pull every vendor SDK: give it
its own venv (``pip install torch==2.13.0`` first for the CPU build, then
``pip install bfcl-eval==2026.3.23 soundfile``); ``nox -s bfcl_official`` builds one.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

from aworld_rl_core.tooluse.bfcl.results import SUMMARY_FILE, evaluate_command, read_scores

Counts = Mapping[str, tuple[int, int]]


def score_run(run_dir: Path) -> tuple[dict[str, tuple[int, int]], dict[str, tuple[int, int]]]:
    """(our counts, the official counts) of one run's result files."""
    bfcl_dir = Path(run_dir).resolve() / "bfcl"
    summary_path = bfcl_dir / SUMMARY_FILE
    if not summary_path.is_file():
        raise FileNotFoundError(
            f"{summary_path} is missing: give the directory of an envtuning.eval or "
            "funreason.eval run (it writes bfcl/scores.json beside the result files)"
        )
    summary = json.loads(summary_path.read_text(encoding="utf-8"))
    ours = {c: (v["correct"], v["total"]) for c, v in summary["categories"].items()}
    if shutil.which("bfcl") is None:
        raise RuntimeError(
            "the `bfcl` command (bfcl-eval with its dependencies) is not installed in this "
            "environment; see this module's docstring or run `nox -s bfcl_official`"
        )
    score_dir = bfcl_dir / "score"
    shutil.rmtree(score_dir, ignore_errors=True)
    command = evaluate_command(summary["model"], ours, bfcl_dir / "result", score_dir)
    env = {**os.environ, "BFCL_PROJECT_ROOT": str(bfcl_dir)}
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
    return ours, read_scores(score_dir, summary["model"])


def official_overall(run_dir: Path) -> str:
    """The overall accuracy cell of ``bfcl evaluate``'s leaderboard table (``"12.34%"``)."""
    import csv

    table = Path(run_dir).resolve() / "bfcl" / "score" / "data_overall.csv"
    with table.open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    if len(rows) != 1:
        raise ValueError(f"{table}: expected one model's row, found {len(rows)}")
    return str(rows[0]["Overall Acc"])


def our_overall(counts: Counts) -> str:
    """Our overall accuracy as the leaderboard table prints it."""
    from aworld_rl_core.tooluse.bfcl.leaderboard import aggregate

    value = aggregate(counts, missing="zero")["overall"] or 0.0
    return f"{100 * value:.2f}%"


def differences(ours: Counts, official: Counts) -> list[str]:
    """One line per category where the two disagree (or one of them is missing)."""
    lines = []
    for category in sorted(set(ours) | set(official)):
        a, b = ours.get(category), official.get(category)
        if a != b:
            lines.append(f"{category}: ours {a}, bfcl evaluate {b}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dirs", nargs="+", type=Path, help="eval run directories")
    args = parser.parse_args(argv)
    failed = False
    for run_dir in args.run_dirs:
        ours, official = score_run(run_dir)
        print(f"{run_dir}: {'category':<26} {'ours':>11} {'bfcl evaluate':>14}")
        for category in sorted(set(ours) | set(official)):
            mine, theirs = ours.get(category), official.get(category)
            cells = [f"{c[0]}/{c[1]}" if c else "-" for c in (mine, theirs)]
            mark = "" if mine == theirs else "  DIFFERENT"
            print(f"{'':{len(str(run_dir)) + 2}}{category:<26} {cells[0]:>11} {cells[1]:>14}{mark}")
        problems = differences(ours, official)
        overall, official_cell = our_overall(ours), official_overall(run_dir)
        label = "overall (leaderboard)"
        print(f"{'':{len(str(run_dir)) + 2}}{label:<26} {overall:>11} {official_cell:>14}")
        if overall != official_cell:
            problems.append(f"overall: ours {overall}, bfcl evaluate {official_cell}")
        failed |= bool(problems)
        for line in problems:
            print(f"  {line}")
    print("bfcl evaluate disagrees with our scores" if failed else "identical in every category")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
