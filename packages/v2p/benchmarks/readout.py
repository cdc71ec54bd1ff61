"""``predict_points`` on 7,296-patch attention maps vs the released BFS readout (baseline).

The baseline is the released algorithm: threshold, then a BFS whose neighbour lookup scans the
list of kept patches (quadratic in their number), then weighted centroids and a sort. Maps are
mixtures of 1-4 Gaussian blobs on a 64 x 114 grid, softmax-normalised: "peaked" (a trained
head: tens of patches above the threshold) and "diffuse" (a young head or a large element:
thousands). Both sides must return the same top-3 points. Best of ``--repeats`` CPU-timed runs
per side.
Run: ``python packages/v2p/benchmarks/readout.py [--maps 50] [--repeats 3] [--json out.json]``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from aworld_rl_core.benchmarking import best_of, compare, parse_args, report
from aworld_rl_v2p.readout import predict_points

ROWS, COLS = 64, 114


def released_readout(attn, threshold=0.3, topk=3):
    flat = attn.reshape(-1)
    kept = [int(i) for i in np.nonzero(flat > threshold * flat.max())[0]]
    coords = [(i // COLS, i % COLS, i) for i in kept]
    seen, regions = set(), []
    for y, x, idx in coords:
        if idx in seen:
            continue
        seen.add(idx)
        region, queue = [(y, x, idx)], [(y, x, idx)]
        while queue:
            cy, cx, _ = queue.pop(0)
            for dy, dx in ((-1, 0), (1, 0), (0, -1), (0, 1)):
                for ty, tx, t in coords:  # the released lookup: a scan of every kept patch
                    if ty == cy + dy and tx == cx + dx and t not in seen:
                        seen.add(t)
                        region.append((ty, tx, t))
                        queue.append((ty, tx, t))
        regions.append(region)
    scored = []
    for region in regions:
        w = np.array([flat[i] for _, _, i in region])
        xs = np.array([(x + 0.5) / COLS for _, x, _ in region])
        ys = np.array([(y + 0.5) / ROWS for y, _, _ in region])
        scored.append((w.max(), float((w * xs).sum() / w.sum()), float((w * ys).sum() / w.sum())))
    scored.sort(key=lambda s: -s[0])
    return [(x, y) for _, x, y in scored[:topk]]


def maps(n, seed=0, sharp=(4, 9), spread=(1.5, 8)):
    rng = np.random.default_rng(seed)
    y, x = np.indices((ROWS, COLS))
    out = []
    for _ in range(n):
        logits = np.zeros((ROWS, COLS))
        for _ in range(rng.integers(1, 5)):
            cy, cx, s = rng.uniform(0, ROWS), rng.uniform(0, COLS), rng.uniform(*spread)
            logits += rng.uniform(*sharp) * np.exp(-((y - cy) ** 2 + (x - cx) ** 2) / (2 * s * s))
        p = np.exp(logits - logits.max())
        out.append(p / p.sum())
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--maps", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parse_args(parser, argv, short={"maps": 2, "repeats": 1})
    figures = {"maps": args.maps, "patches": ROWS * COLS}
    kinds = {"peaked": maps(args.maps), "diffuse": maps(args.maps, 1, (1, 2), (8, 20))}
    for kind, attn in kinds.items():
        for a in attn:
            ours = [(p.x, p.y) for p in predict_points(a)]
            assert np.allclose(ours, released_readout(a)), "the two readouts disagree"
        best = best_of(
            {
                "ours": lambda _, attn=attn: [predict_points(a) for a in attn],
                "released_bfs": lambda _, attn=attn: [released_readout(a) for a in attn],
            },
            args.repeats,
        )
        figures[kind] = {
            "kept_patches_mean": float(np.mean([(a > 0.3 * a.max()).sum() for a in attn])),
            "ms_per_map_ours": 1000 * best["ours"].cpu_s / args.maps,
            "ms_per_map_released": 1000 * best["released_bfs"].cpu_s / args.maps,
            **compare(best, "ours", baseline="released_bfs"),
        }
    report(figures, args.json)
    return figures


if __name__ == "__main__":
    main()
