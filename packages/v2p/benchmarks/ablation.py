"""The CPU ablation of V2P's claims (``aworld_rl_v2p.ablation``): labels all / center /
gauss f=1 / gauss f=4.1325, each with and without the suppression term, over seeds.

A small trainable CNN backbone + the package's action head, labels, loss and readout, on
synthetic screens of adjacent coloured elements (the instruction names the target's colour).
Prints a markdown table (mean +- standard deviation over seeds of test top-1 and the test
attention mass outside the box) and writes ``ablation.json`` (every run, plus a Platt
calibration of the readout's confidence fitted on the validation screens and checked on the
test screens) into ``--out``.

Run: ``OMP_NUM_THREADS=1 python packages/v2p/benchmarks/ablation.py --out packages/v2p/docs``
(``--seeds``, ``--steps``, ``--quick`` for one seed of two settings).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from aworld_rl_core.benchmarking import parse_args
from aworld_rl_v2p.ablation import AblationOptions, run
from aworld_rl_v2p.calibration import fit, reliability

LABELS = (("all", 1.0), ("center", 1.0), ("gauss", 1.0), ("gauss", 4.1325))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--steps", type=int, default=AblationOptions().steps)
    parser.add_argument("--batch-size", type=int, default=AblationOptions().batch_size)
    parser.add_argument(
        "--quick", action="store_true", help="all vs gauss f=1, no suppression, one seed"
    )
    parser.add_argument("--labels", default="", help="only these label styles (comma-separated)")
    parser.add_argument(
        "--table-only",
        action="store_true",
        help="the table of --out's runs (from parallel processes)",
    )
    args = parse_args(parser, short={"seeds": 1, "steps": 1, "batch_size": 1, "quick": True})
    settings = [(lab, f, sup) for lab, f in LABELS for sup in (False, True)]
    seeds = list(range(args.seeds))
    if args.quick:
        settings, seeds = [("all", 1.0, False), ("gauss", 1.0, False)], [0]
    log = args.out / "ablation_runs.jsonl" if args.out else None
    if args.table_only:
        runs = [json.loads(line) for line in log.read_text().splitlines()]
        settings = [
            s for s in settings if any((r["label"], r["f"], r["suppression"]) == s for r in runs)
        ]
        return report(settings, runs, args)
    if args.labels:
        settings = [s for s in settings if s[0] in args.labels.split(",")]
    runs = []
    for label, f, sup in settings:
        for seed in seeds:
            opts = AblationOptions(
                label_style=label,
                sigma_factor=f,
                suppression=sup,
                steps=args.steps,
                batch_size=args.batch_size,
            )
            start = time.perf_counter()
            result = run(opts, seed)
            seconds = time.perf_counter() - start
            runs.append(
                {
                    "label": label,
                    "f": f,
                    "suppression": sup,
                    "seed": seed,
                    "seconds": seconds,
                    **result,
                }
            )
            if log:
                log.parent.mkdir(parents=True, exist_ok=True)
                with log.open("a") as handle:
                    handle.write(json.dumps(runs[-1]) + "\n")
            print(
                f"{label} f={f} sup={sup} seed={seed}: top-1 {result['top1']:.3f}, "
                f"outside {result['out_of_box_mass']:.3f} ({seconds:.0f} s)",
                flush=True,
            )
    report(settings, runs, args)


def report(settings, runs, args) -> None:
    rows = [
        "| labels | suppression | top-1 (test) | mass outside the box (test) |",
        "|---|---|---:|---:|",
    ]
    for label, f, sup in settings:
        mine = [r for r in runs if (r["label"], r["f"], r["suppression"]) == (label, f, sup)]
        top = [r["top1"] for r in mine]
        out = [r["out_of_box_mass"] for r in mine]
        sd = lambda v: statistics.stdev(v) if len(v) > 1 else 0.0  # noqa: E731
        name = label if label != "gauss" else f"gauss f={f:g}"
        rows.append(
            f"| {name} | {'yes' if sup else 'no'} | {statistics.mean(top):.3f} +- {sd(top):.3f} | "
            f"{statistics.mean(out):.3f} +- {sd(out):.3f} |"
        )
    table = "\n".join(rows)
    print(table)
    best = max(runs, key=lambda r: r["top1"])
    calib = fit(best["val_confidence"], best["val_hits"])
    check = reliability(best["test_confidence"], best["test_hits"], calib)
    print(f"calibration (validation screens of the best run): a={calib.a:.3f}, b={calib.b:.3f}")
    for r in check:
        print(
            f"  test confidence {r['low']:.1f}-{r['high']:.1f}: n={r['samples']}, "
            f"predicted {r['predicted']:.3f}, observed {r['observed']:.3f}"
        )
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        slim = [{k: v for k, v in r.items() if not k.startswith(("val_", "test_"))} for r in runs]
        (args.out / "ablation.json").write_text(
            json.dumps(
                {
                    "options": {"steps": args.steps, "batch_size": args.batch_size},
                    "runs": slim,
                    "table": table,
                    "calibration": {"a": calib.a, "b": calib.b, "test_reliability": check},
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
