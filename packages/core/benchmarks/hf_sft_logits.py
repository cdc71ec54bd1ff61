"""The ``hf-sft`` loss with logits only where a label follows vs the model's own loss.

Same process, same batch (long prompts, a short supervised answer: the shape of tool-use SFT
samples), forward and backward of each side, alternating, best of ``--repeats``, in CPU
seconds of the process (``time.process_time``) and wall seconds. The losses must agree.

    python packages/core/benchmarks/hf_sft_logits.py [--prompt-tokens 1024] [--repeats 3]
"""

from __future__ import annotations

import argparse

from aworld_rl_core.benchmarking import best_of, parse_args, report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--prompt-tokens", type=int, default=1024)
    parser.add_argument("--answer-tokens", type=int, default=32)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json")
    args = parse_args(
        parser, short={"prompt_tokens": 32, "answer_tokens": 8, "batch": 1, "repeats": 1}
    )

    import torch

    from aworld_rl_core.backends.hf_sft import supervised_loss
    from aworld_rl_core.backends.sft_data import IGNORE_INDEX
    from aworld_rl_core.models import tiny_causal_lm

    model = tiny_causal_lm()
    length = args.prompt_tokens + args.answer_tokens
    generator = torch.Generator().manual_seed(0)
    input_ids = torch.randint(0, 150_000, (args.batch, length), generator=generator)
    labels = input_ids.clone()
    labels[:, : args.prompt_tokens] = IGNORE_INDEX
    batch = {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids), "labels": labels}

    def full(_: int) -> float:
        model.zero_grad()
        loss = model(**batch).loss
        loss.backward()
        return float(loss.detach())

    def ours(_: int) -> float:
        model.zero_grad()
        loss = supervised_loss(model, dict(batch))
        loss.backward()
        return float(loss.detach())

    best = best_of({"supervised positions": ours, "full logits (baseline)": full}, args.repeats)
    a, b = best["supervised positions"], best["full logits (baseline)"]
    if abs(a.result - b.result) > 1e-4 * abs(b.result):
        raise SystemExit(f"losses differ: {a.result} vs {b.result}")
    report(
        {
            "model": "tiny:qwen3 (hidden 32, 151,669-token vocabulary)",
            "batch": args.batch,
            "prompt_tokens": args.prompt_tokens,
            "answer_tokens": args.answer_tokens,
            "torch_threads": torch.get_num_threads(),
            "supervised_cpu_s": a.cpu_s,
            "full_cpu_s": b.cpu_s,
            "speedup_cpu": b.cpu_s / a.cpu_s,
            "speedup_wall": b.wall_s / a.wall_s,
            "loss": a.result,
        },
        args.json,
    )


if __name__ == "__main__":
    main()
