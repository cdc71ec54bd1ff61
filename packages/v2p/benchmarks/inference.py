"""Batched grounding (one prefill per batch) vs one screenshot at a time, tiny model on CPU.

The same screenshots (synthetic pages at two resolutions) and instructions go through
``Grounder.attention`` in batches of ``--batch-size`` and one by one; the maps must agree.
Best of ``--repeats`` CPU-timed runs per side, alternating.
Run: ``python packages/v2p/benchmarks/inference.py [--samples 16] [--batch-size 8]``.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from aworld_rl_core.benchmarking import best_of, compare, parse_args, report
from aworld_rl_core.models import tiny_vl_model
from aworld_rl_v2p.inference import Grounder
from aworld_rl_v2p.modeling import from_base
from aworld_rl_v2p.synthetic import GenerateOptions, generate


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=16)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--max-pixels", type=int, default=448 * 336)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parse_args(
        parser, argv, short={"samples": 2, "batch_size": 2, "max_pixels": 56 * 56, "repeats": 1}
    )
    folder = Path(tempfile.mkdtemp(prefix="v2p-bench-"))
    generate(
        folder,
        GenerateOptions(
            pages=args.samples, resolutions=((448, 336), (392, 280)), targets_per_page=1, seed=0
        ),
    )
    images = sorted((folder / "images").glob("*.png"))[: args.samples]
    shots = [Image.open(p).convert("RGB") for p in images]
    texts = [f"click the item number {i}" for i in range(len(shots))]
    vl = tiny_vl_model(seed=0)
    grounder = Grounder(
        from_base(vl.model, vl.tokenizer).eval(),
        vl.tokenizer,
        vl.image_processor,
        max_pixels=args.max_pixels,
    )

    def batched(_):
        out = []
        for i in range(0, len(shots), args.batch_size):
            out += grounder.attention(
                shots[i : i + args.batch_size], texts[i : i + args.batch_size]
            )
        return out

    def one_at_a_time(_):
        return [grounder.attention([s], [t])[0] for s, t in zip(shots, texts, strict=True)]

    a, b = batched(0), one_at_a_time(0)
    worst = max(float(np.abs(x - y).max()) for x, y in zip(a, b, strict=True))
    assert worst < 1e-4, worst
    best = best_of({"batched": batched, "one_at_a_time": one_at_a_time}, args.repeats)
    figures = {
        "samples": len(shots),
        "batch_size": args.batch_size,
        "max_pixels": args.max_pixels,
        "max_abs_diff": worst,
        "torch_threads": torch.get_num_threads(),
        **compare(best, "batched", baseline="one_at_a_time"),
    }
    report(figures, args.json)
    return figures


if __name__ == "__main__":
    main()
