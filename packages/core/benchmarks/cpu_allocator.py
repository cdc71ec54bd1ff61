"""SFT steps on CPU with ``keep_freed_memory()`` vs glibc's default allocator.

Each side runs in its own child process (the setting holds for a whole process): the tiny-cpu
curriculum's model (``tiny:qwen2:hidden=64,window=32``, Qwen3's 151,669-token vocabulary), one
sample of ``--tokens`` tokens whose last ``--supervised`` are supervised, ``hf_sft``'s loss,
AdamW, one warm-up step, then ``--steps`` timed steps. The sides alternate, best of
``--repeats``, in CPU seconds of the child, with its wall seconds, minor page faults and peak
resident memory. The losses must agree (the allocator changes no arithmetic).

    python packages/core/benchmarks/cpu_allocator.py [--steps 8] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from aworld_rl_core.benchmarking import Measured, best_of, compare, parse_args, report


def child(args: argparse.Namespace) -> None:
    import resource
    import time

    import torch

    from aworld_rl_core.allocator import keep_freed_memory
    from aworld_rl_core.backends.hf_sft import supervised_loss
    from aworld_rl_core.backends.sft_data import IGNORE_INDEX
    from aworld_rl_core.models.tiny import parse_tiny, tiny_causal_lm

    applied = keep_freed_memory() if args.child == "kept" else False
    arch, size = parse_tiny("qwen2:hidden=64,window=32")
    model = tiny_causal_lm(arch=arch, size=size)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(0)
    input_ids = torch.randint(0, 150_000, (1, args.tokens), generator=generator)
    labels = input_ids.clone()
    labels[:, : args.tokens - args.supervised] = IGNORE_INDEX
    batch = {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids), "labels": labels}

    def step() -> float:
        loss = supervised_loss(model, dict(batch))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return float(loss.detach())

    step()
    usage, cpu, wall = resource.getrusage(resource.RUSAGE_SELF), time.process_time(), time.time()
    loss = [step() for _ in range(args.steps)][-1]
    after = resource.getrusage(resource.RUSAGE_SELF)
    print(
        json.dumps(
            {
                "applied": applied,
                "loss": loss,
                "cpu_s": time.process_time() - cpu,
                "wall_s": time.time() - wall,
                "page_faults": after.ru_minflt - usage.ru_minflt,
                "peak_rss_mb": after.ru_maxrss / 1024,
                "torch_threads": torch.get_num_threads(),
            }
        )
    )


def run_side(side: str, args: argparse.Namespace) -> Measured:
    argv = [sys.executable, __file__, "--child", side]
    argv += ["--tokens", str(args.tokens), "--supervised", str(args.supervised)]
    argv += ["--steps", str(args.steps)]
    out = subprocess.run(argv, capture_output=True, text=True, check=True)
    figures = json.loads(out.stdout.strip().splitlines()[-1])
    if figures["applied"] != (side == "kept"):
        raise SystemExit(f"{side}: keep_freed_memory applied={figures['applied']}")
    return Measured(figures, figures.pop("cpu_s"), figures.pop("wall_s"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tokens", type=int, default=1800)
    parser.add_argument("--supervised", type=int, default=600)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json")
    parser.add_argument("--child", choices=["kept", "default"], help=argparse.SUPPRESS)
    args = parse_args(parser, short={"tokens": 64, "supervised": 16, "steps": 1, "repeats": 1})
    if args.child:
        child(args)
        return
    best = best_of(
        {
            "keep_freed_memory": lambda _: run_side("kept", args),
            "glibc default (baseline)": lambda _: run_side("default", args),
        },
        args.repeats,
    )
    kept, default = best["keep_freed_memory"], best["glibc default (baseline)"]
    if abs(kept.result["loss"] - default.result["loss"]) > 1e-6 * abs(default.result["loss"]):
        raise SystemExit(f"losses differ: {kept.result['loss']} vs {default.result['loss']}")
    figures = compare(best, "keep_freed_memory", baseline="glibc default (baseline)")
    figures["page_fault_ratio"] = default.result["page_faults"] / max(kept.result["page_faults"], 1)
    figures["peak_rss_ratio"] = kept.result["peak_rss_mb"] / default.result["peak_rss_mb"]
    report(
        {"tokens": args.tokens, "supervised": args.supervised, "steps": args.steps, **figures},
        args.json,
    )


if __name__ == "__main__":
    main()
