"""The paper's claim in miniature: EnvTuning's curriculum (hints, progress reward, four stages)
against plain GRPO (binary reward, no hints) with the same model, warm start and number of RL
steps, on core's tool-use micro-world, over several seeds.

Runs ``aworld-run envtuning.curriculum`` with ``--preset tiny-cpu`` and
``--preset tiny-cpu-ablation`` for each seed (``trainer.seed``; the split is fixed), or reads the
runs already in ``--out`` (``--no-run``), then writes ``ablation.json`` (held-out accuracy and
progress per point, run, seed; CPU seconds per run) and ``ablation.png``: held-out accuracy
against cumulative RL steps, each arm's mean with its min-max band over the seeds. Run:
``python packages/envtuning/benchmarks/microworld_ablation.py --seeds 0 1 2 --out DIR``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from aworld_rl_core.benchmarking import parse_args

ARMS = {"curriculum": "tiny-cpu", "plain GRPO": "tiny-cpu-ablation"}
SHORT_OVERRIDES = [  # --short: a warm start of 2 steps on 4 entries, 2 held-out entries a point
    "warm_start.steps=2",
    "warm_start.entries=4",
    "evaluation.points_per_category=1",
]


def run_dir(out: Path, arm: str, seed: int) -> Path:
    return out / f"{ARMS[arm]}-seed{seed}"


def command(out: Path, arm: str, seed: int, overrides: list[str]) -> list[str]:
    return [
        sys.executable,
        "-m",
        "aworld_rl_core.cli",
        "envtuning.curriculum",
        "--preset",
        ARMS[arm],
        "--output-dir",
        str(run_dir(out, arm, seed)),
        f"trainer.seed={seed}",
        *(overrides or []),
    ]


def run_all(
    out: Path, runs: list[tuple[str, int]], jobs: int, overrides: list[str]
) -> dict[str, float]:
    """Train every ``(arm, seed)``, ``jobs`` at a time; the CPU seconds (user + system) of
    each run's process tree."""
    cpu: dict[str, float] = {}
    waiting, active = list(runs), {}
    while waiting or active:
        while waiting and len(active) < jobs:
            arm, seed = waiting.pop(0)
            child = subprocess.Popen(command(out, arm, seed, overrides))
            active[child.pid] = (arm, seed)
        pid, status, usage = os.wait4(-1, 0)
        if pid not in active:
            continue
        arm, seed = active.pop(pid)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"{arm} seed {seed} failed (exit {status}); see {out}")
        cpu[f"{arm}/seed{seed}"] = usage.ru_utime + usage.ru_stime
    return cpu


def steps_at_points(directory: Path) -> dict[str, int]:
    """Cumulative RL steps at each point (0 for the random start and the warm start)."""
    state = json.loads((directory / "curriculum_state.json").read_text(encoding="utf-8"))
    out, total = {"random": 0, "warm_start": 0}, 0
    for i, name in enumerate(state["finished"]):
        total += int(state["stages"][name].get("steps", 0))
        out[f"stage{i + 1}"] = total
    return out


def collect(out: Path, seeds: list[int]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for arm in ARMS:
        for seed in seeds:
            directory = run_dir(out, arm, seed)
            points = json.loads((directory / "heldout_points.json").read_text(encoding="utf-8"))
            found.setdefault(arm, {})[str(seed)] = {
                "steps": steps_at_points(directory),
                "points": points["points"],
                "entries": len(points["entries"]),
            }
    return found


def summary(found: dict[str, Any]) -> str:
    lines = [
        "| arm | point | RL steps | held-out accuracy (%) mean [min, max] | progress (%) mean |",
        "|---|---|---|---|---|",
    ]
    for arm, seeds in found.items():
        first = next(iter(seeds.values()))
        for point in first["points"]:
            acc = [100 * s["points"][point]["accuracy"] for s in seeds.values()]
            prog = [100 * s["points"][point]["progress"] for s in seeds.values()]
            lines.append(
                f"| {arm} | {point} | {first['steps'][point]} | {sum(acc) / len(acc):.1f} "
                f"[{min(acc):.1f}, {max(acc):.1f}] | {sum(prog) / len(prog):.1f} |"
            )
    lines += ["", "| arm | stage 4 - warm start, accuracy points per seed | mean | spread |"]
    lines.append("|---|---|---|---|")
    for arm, seeds in found.items():
        gains = [
            100 * (s["points"]["stage4"]["accuracy"] - s["points"]["warm_start"]["accuracy"])
            for s in seeds.values()
            if "stage4" in s["points"] and "warm_start" in s["points"]
        ]
        if gains:
            lines.append(
                f"| {arm} | {', '.join(f'{g:+.1f}' for g in gains)} | "
                f"{sum(gains) / len(gains):+.1f} | {max(gains) - min(gains):.1f} |"
            )
    return "\n".join(lines)


def plot(found: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6))
    for arm, seeds in found.items():
        first = next(iter(seeds.values()))
        points = [p for p in first["points"] if p != "random"]
        xs = [first["steps"][p] for p in points]
        acc = [[100 * s["points"][p]["accuracy"] for s in seeds.values()] for p in points]
        mean = [sum(a) / len(a) for a in acc]
        ax.plot(xs, mean, marker="o", label=f"{arm} (mean of {len(seeds)} seeds)")
        ax.fill_between(xs, [min(a) for a in acc], [max(a) for a in acc], alpha=0.2)
    ax.set_xlabel("RL steps (0: after the warm start)")
    ax.set_ylabel("held-out accuracy (%)")
    ax.set_title("Micro-world held-out accuracy (band: min-max over seeds)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out", type=Path, default=Path("microworld-ablation"))
    parser.add_argument("--no-run", action="store_true", help="only read the runs in --out")
    parser.add_argument("--set", nargs="*", default=[], help="key=value overrides of every run")
    parser.add_argument("--jobs", type=int, default=1, help="runs at a time")
    args = parse_args(parser, short={"seeds": [0], "set": SHORT_OVERRIDES})
    args.out.mkdir(parents=True, exist_ok=True)
    cpu: dict[str, float] = {}
    if not args.no_run:
        runs = [(arm, seed) for seed in args.seeds for arm in ARMS]
        cpu = run_all(args.out, runs, args.jobs, args.set)
    found = collect(args.out, args.seeds)
    (args.out / "ablation.json").write_text(
        json.dumps({"runs": found, "cpu_seconds": cpu}, indent=1), encoding="utf-8"
    )
    plot(found, args.out / "ablation.png")
    print(summary(found))


if __name__ == "__main__":
    main()
