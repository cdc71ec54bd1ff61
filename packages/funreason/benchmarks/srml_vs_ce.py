"""SRML vs plain cross-entropy: forward + backward time of the loss on the same logits.

Both losses see identical logits (requires_grad) and labels; runs are interleaved and the
median is taken, so the ratio is robust to load on a shared machine. Target: SRML costs less
than 5% more than CE.

    python packages/funreason/benchmarks/srml_vs_ce.py [--batch 4 --length 512 --vocab 32768]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

from aworld_rl_core.benchmarking import parse_args
from aworld_rl_funreason.loss import srml_loss


def _time(fn, leaf: torch.Tensor) -> float:
    leaf.grad = None
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--length", type=int, default=512)
    ap.add_argument("--vocab", type=int, default=32768)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--threads", type=int, default=1)
    args = parse_args(ap, short={"batch": 1, "length": 16, "vocab": 64, "repeats": 1})
    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    b, t, v = args.batch, args.length, args.vocab
    base = torch.randn(b, t, v)
    labels = torch.randint(0, v, (b, t))
    labels[:, : t // 8] = -100  # prompt positions
    think = torch.zeros(b, t, dtype=torch.bool)
    think[:, t // 8 : t * 7 // 8] = True  # ~10:1 reasoning vs call, like the paper's data

    logits = base.requires_grad_(True)  # one leaf; its gradient is dropped before each run

    def ce() -> None:
        F.cross_entropy(logits.view(-1, v), labels.view(-1), ignore_index=-100).backward()

    def srml() -> None:
        srml_loss(logits, labels, think, 0.7).backward()

    for fn in (ce, srml):  # warm-up
        fn()
    ce_t, srml_t = [], []
    for _ in range(args.repeats):
        ce_t.append(_time(ce, logits))
        srml_t.append(_time(srml, logits))
    ce_m, srml_m = statistics.median(ce_t), statistics.median(srml_t)
    print(f"shape B={b} T={t} V={v}, threads={args.threads}, repeats={args.repeats}")
    print(f"cross-entropy fwd+bwd: {1000 * ce_m:.1f} ms (median)")
    print(f"SRML          fwd+bwd: {1000 * srml_m:.1f} ms (median)")
    print(f"ratio SRML / CE: {srml_m / ce_m:.3f} (overhead {100 * (srml_m / ce_m - 1):+.1f}%)")


if __name__ == "__main__":
    main()
