"""A tiny model learning to search, and multi-query against single-query, in miniature.

``rag_r1.train --preset tiny-cpu`` (a tiny Qwen3 with a world-trained BPE, warm-started on the
scripted searcher's trajectories, then GRPO against the synthetic world's in-process MiniLM
index) once per seed with ``env.max_queries=3`` (the paper's multi-query prompt) and with
``env.max_queries=1`` (one query per search; the warm start's scripted searcher then asks a
comparison's two sub-questions in two rounds). Each run reports held-out EM, F1, searches per
question and queries per search at the random start, the warm start and the end, and the wall
seconds per held-out question of the final greedy evaluation; the script writes the table
(mean and spread over seeds), ``learning.json`` and ``learning.png``. By default the first seed
of each ``max_queries`` warm-starts and the other seeds run RL from that warm start
(``warm_start.from_run``: one warm start per mode, as the README's seeds share one);
``--own-warm-starts`` gives every seed its own, ``--reuse 3=DIR`` takes mode 3's warm start
from a finished run. Runs go one after another (``--parallel N``: N at a time, each with one
torch thread). Run:
``python packages/rag_r1/benchmarks/learning.py --seeds 0 1 2 --out /tmp/rag-learning``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from aworld_rl_core.benchmarking import parse_args

POINTS = ("random", "warm_start", "final")


def collect(directory: Path, seed: int, max_queries: int) -> dict[str, Any]:
    """A finished run's figures from its directory (``wall_s``: config.yaml written to the
    held-out table written)."""
    metrics: dict[str, float] = {}
    lines = (directory / "metrics.jsonl").read_text().splitlines()
    for line in lines:
        metrics.update({k: v for k, v in json.loads(line).items() if isinstance(v, float)})
    searches = [json.loads(x)["episode/searches"] for x in lines if "episode/searches" in x]
    end = (directory / "heldout_points.json").stat().st_mtime
    return {
        "seed": seed,
        "max_queries": max_queries,
        "wall_s": end - (directory / "config.yaml").stat().st_mtime,
        "min_searches_per_step": min(searches) if searches else 0.0,
        **{k: v for k, v in metrics.items() if k.startswith(("heldout/", "val/"))},
    }


def one(
    out: Path, seed: int, max_queries: int, extra: list[str], warm: Path | None = None
) -> dict[str, Any]:
    """One rag_r1.train run (``warm``: reuse that finished run's warm start)."""
    directory = out / f"mq{max_queries}-seed{seed}"
    overrides = [f"trainer.seed={seed}", f"env.max_queries={max_queries}", *extra]
    if warm is not None:
        overrides.append(f"warm_start.from_run={warm}")
    if (directory / "heldout_points.json").is_file():  # finished before: collected, not rerun
        return {**collect(directory, seed, max_queries), "warm_start_from": str(warm)}
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    began = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "aworld_rl_core.cli", "rag_r1.train", "--preset", "tiny-cpu",
         "--output-dir", str(directory), "--quiet", *overrides],
        env=env, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - began
    if proc.returncode:
        raise RuntimeError(f"{directory}: rag_r1.train exited with {proc.returncode}")
    # the run's CPU seconds (one torch thread): about its wall time on an idle core
    return {
        **collect(directory, seed, max_queries),
        "warm_start_from": str(warm or directory),
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
    }


def scripted(out: Path, seed: int, max_queries: int, questions: int) -> dict[str, Any]:
    """The scripted searcher (a test double, no learning) on the world of ``seed``: EM, search
    rounds and wall seconds per question with ``env.max_queries`` (rag_r1.eval)."""
    directory = out / f"scripted-mq{max_queries}-world{seed}"
    subprocess.run(
        [sys.executable, "-m", "aworld_rl_core.cli", "rag_r1.eval", "--preset", "tiny-cpu",
         "--output-dir", str(directory), "--quiet", f"world.synthetic.seed={seed}",
         f"world.synthetic.questions={questions}", f"data.limit={questions}",
         f"concurrency={questions}", f"env.max_queries={max_queries}", "plots=false"],
        check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    metrics: dict[str, float] = {}
    for line in (directory / "metrics.jsonl").read_text().splitlines():
        metrics.update(json.loads(line))
    rows = [json.loads(x) for x in (directory / "results.jsonl").read_text().splitlines()]
    return {
        "seed": seed,
        "max_queries": max_queries,
        **{k.split("/", 1)[1]: v for k, v in metrics.items() if k.startswith("synthetic/")},
        # the environment's seconds per question (retrieval and observations, without the
        # one-time index load; the scripted agent itself takes microseconds)
        "seconds_per_question": sum(r["step_s"] for r in rows) / len(rows),
    }


def scripted_table(runs: list[dict[str, Any]]) -> str:
    lines = [
        "| max_queries | EM | search rounds / question | queries / search | s / question |",
        "|---|---|---|---|---|",
    ]
    for mq in sorted({r["max_queries"] for r in runs}, reverse=True):
        group = [r for r in runs if r["max_queries"] == mq]
        cells = [
            spread([r[k] for r in group])
            for k in ("em", "searches_per_question", "queries_per_search", "seconds_per_question")
        ]
        lines.append(f"| {mq} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def scripted_plot(runs: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = (
        ("em", "EM"),
        ("searches_per_question", "search rounds / question"),
        ("seconds_per_question", "environment s / question"),
    )
    fig, axes = plt.subplots(1, 3, figsize=(9, 2.8))
    modes = sorted({r["max_queries"] for r in runs}, reverse=True)
    for ax, (key, label) in zip(axes, keys, strict=True):
        for i, mq in enumerate(modes):
            values = [r[key] for r in runs if r["max_queries"] == mq]
            ax.bar(i, statistics.mean(values), 0.6, label=f"max_queries={mq}")
            ax.scatter([i] * len(values), values, s=10, c="k", zorder=3)
        ax.set_xticks(range(len(modes)), [f"max_queries={mq}" for mq in modes], fontsize=8)
        ax.set_title(label, fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def spread(values: list[float]) -> str:
    mean = statistics.mean(values)
    return f"{mean:.3f} ({min(values):.3f}-{max(values):.3f})"


def table(runs: list[dict[str, Any]]) -> str:
    lines = [
        "| max_queries | point | held-out EM | F1 | searches / question | queries / search | "
        "s / question |",
        "|---|---|---|---|---|---|---|",
    ]
    for mq in sorted({r["max_queries"] for r in runs}, reverse=True):
        group = [r for r in runs if r["max_queries"] == mq]
        for point in POINTS:
            if f"heldout/em/{point}" not in group[0]:
                continue
            cells = [
                spread([r[f"heldout/{k}/{point}"] for r in group])
                for k in ("em", "f1", "searches_per_question", "queries_per_search",
                          "seconds_per_question")
            ]  # fmt: skip
            lines.append(f"| {mq} | {point} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(runs: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(11, 3.2))
    keys = (
        ("em", "held-out EM"),
        ("searches_per_question", "search rounds / question"),
        ("seconds_per_question", "wall s / question (greedy eval)"),
    )
    for ax, (key, label) in zip(axes, keys, strict=True):
        for k, mq in enumerate(sorted({r["max_queries"] for r in runs}, reverse=True)):
            group = [r for r in runs if r["max_queries"] == mq]
            xs = [i + (k - 0.5) * 0.38 for i in range(len(POINTS))]
            means = [
                statistics.mean(r.get(f"heldout/{key}/{p}", 0.0) for r in group) for p in POINTS
            ]
            ax.bar(xs, means, 0.38, label=f"max_queries={mq}")
            for r in group:
                ax.scatter(xs, [r.get(f"heldout/{key}/{p}", 0.0) for p in POINTS], s=8, c="k")
        ax.set_xticks(range(len(POINTS)), POINTS)
        ax.set_title(label, fontsize=9)
    axes[0].legend(fontsize=8, frameon=False)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--max-queries", type=int, nargs="+", default=[3, 1])
    parser.add_argument("--parallel", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("rag-learning"))
    parser.add_argument(
        "--scripted",
        type=int,
        default=0,
        help="instead: the scripted searcher on N questions of each seed's world (no training)",
    )
    parser.add_argument(
        "--collect", action="store_true", help="only tabulate the finished runs under --out"
    )
    parser.add_argument(
        "--own-warm-starts",
        action="store_true",
        help="every seed warm-starts (default: the first seed of each max_queries does and the "
        "others reuse its warm start)",
    )
    parser.add_argument(
        "--reuse",
        nargs="*",
        default=[],
        metavar="MQ=DIR",
        help="every seed of max_queries MQ reuses the warm start of the finished run DIR",
    )
    parser.add_argument("overrides", nargs="*", help="key=value overrides of the preset")
    # --short: the scripted searcher on 3 questions of one world (training takes minutes)
    args = parse_args(parser, short={"seeds": [0], "scripted": 3})
    args.out.mkdir(parents=True, exist_ok=True)
    jobs = [(s, mq) for mq in args.max_queries for s in args.seeds]
    if args.scripted:
        runs = [scripted(args.out, s, mq, args.scripted) for s, mq in jobs]
        (args.out / "scripted.json").write_text(json.dumps(runs, indent=1))
        scripted_plot(runs, args.out / "scripted.png")
        print(scripted_table(runs))
        return
    if args.collect:
        runs = [
            collect(args.out / f"mq{mq}-seed{s}", s, mq)
            for s, mq in jobs
            if (args.out / f"mq{mq}-seed{s}" / "heldout_points.json").is_file()
        ]
    else:
        reuse = {int(k): Path(v) for k, v in (item.split("=", 1) for item in args.reuse)}
        first = {mq: args.seeds[0] for mq in args.max_queries if mq not in reuse}
        if args.own_warm_starts:
            phases = [[(s, mq, reuse.get(mq)) for s, mq in jobs]]
        else:  # the modes' warm starts first, then every other seed from its mode's
            phases = [
                [(s, mq, None) for s, mq in jobs if first.get(mq) == s],
                [
                    (s, mq, reuse.get(mq, args.out / f"mq{mq}-seed{args.seeds[0]}"))
                    for s, mq in jobs
                    if first.get(mq) != s
                ],
            ]
        runs = []
        with ThreadPoolExecutor(args.parallel) as pool:
            for phase in phases:
                runs += pool.map(lambda j: one(args.out, j[0], j[1], args.overrides, j[2]), phase)
        runs.sort(key=lambda r: (-r["max_queries"], r["seed"]))
    (args.out / "learning.json").write_text(json.dumps(runs, indent=1))
    plot(runs, args.out / "learning.png")
    text = table(runs)
    walls = ", ".join(
        f"mq{r['max_queries']}/seed{r['seed']} {r['wall_s']:.0f} s wall"
        + (f", {r['cpu_s']:.0f} s CPU" if "cpu_s" in r else "")
        for r in runs
    )
    print(text + f"\n\nwhole runs: {walls}")


if __name__ == "__main__":
    main()
