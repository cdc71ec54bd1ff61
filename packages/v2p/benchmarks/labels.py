"""Vectorised ``patch_labels`` vs the released per-patch loop with scipy (the baseline).

Both build ``gauss`` labels (sigma_factor 1) for the same random boxes on the largest grid the
paper's ``max_pixels`` allows (3192 x 1792 px = 114 x 64 = 7,296 patches); they must agree to
1e-6. Best of ``--repeats`` CPU-timed runs per side, alternating.
Run: ``python packages/v2p/benchmarks/labels.py [--boxes 20] [--repeats 3] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

import torch

from aworld_rl_core.benchmarking import best_of, compare, parse_args, report
from aworld_rl_v2p.labels import patch_labels

HEIGHT, WIDTH, PATCH = 1792, 3192, 28


def loop_labels(box, f=1.0):
    """The released algorithm: a double loop over patches, scipy's norm.cdf per patch."""
    from scipy.stats import norm

    x1, y1, x2, y2 = box
    cx, cy, sx, sy = (x1 + x2) / 2, (y1 + y2) / 2, (x2 - x1) / f, (y2 - y1) / f
    rows, cols = HEIGHT // PATCH, WIDTH // PATCH
    out = torch.zeros(rows * cols)
    for r in range(rows):
        for c in range(cols):
            px1, py1, px2, py2 = c * PATCH, r * PATCH, (c + 1) * PATCH, (r + 1) * PATCH
            ix = norm.cdf(min(px2, x2), cx, sx) - norm.cdf(max(px1, x1), cx, sx)
            iy = norm.cdf(min(py2, y2), cy, sy) - norm.cdf(max(py1, y1), cy, sy)
            if not (px2 <= x1 or px1 >= x2 or py2 <= y1 or py1 >= y2):
                out[r * cols + c] = ix * iy
    return (out / (out.sum() + 1e-8)).reshape(rows, cols)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boxes", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parse_args(parser, argv, short={"boxes": 2, "repeats": 1})
    rng = random.Random(0)
    boxes = []
    for _ in range(args.boxes):
        w, h = rng.uniform(20, 600), rng.uniform(15, 300)
        x, y = rng.uniform(0, WIDTH - w), rng.uniform(0, HEIGHT - h)
        boxes.append((x, y, x + w, y + h))
    ours = [patch_labels(b, (HEIGHT, WIDTH)) for b in boxes]
    ref = [loop_labels(b) for b in boxes]
    worst = max(float((a - b).abs().max()) for a, b in zip(ours, ref, strict=True))
    assert worst < 1e-6, worst
    best = best_of(
        {
            "vectorised": lambda _: [patch_labels(b, (HEIGHT, WIDTH)) for b in boxes],
            "scipy_loop": lambda _: [loop_labels(b) for b in boxes],
        },
        args.repeats,
    )
    figures = {
        "boxes": args.boxes,
        "patches": (HEIGHT // PATCH) * (WIDTH // PATCH),
        "max_abs_diff": worst,
        "torch_threads": torch.get_num_threads(),
        **compare(best, "vectorised", baseline="scipy_loop"),
    }
    report(figures, args.json)
    return figures


if __name__ == "__main__":
    main()
