"""Multi-turn rollouts of the ``trl`` backend on CPU: batched episodes vs one episode at a time.

Plays the same episodes of the toy lowercase game with the episode engine's trl driver loop
(``engine.run_batched`` over the backend's ``HfGenerator``) twice per repeat: all active
episodes in one ``generate`` call per turn (what the backend does), then one episode at a time
(``batch_size=1``, the baseline). The two sides alternate, each keeps its best run, and times
are CPU seconds of the process (``time.process_time``, robust on a shared machine) next to
wall-clock seconds.

    python packages/core/benchmarks/trl_rollout.py [--episodes 16] [--turns 3] [--repeats 3]
"""

from __future__ import annotations

import argparse
import functools
from dataclasses import replace
from pathlib import Path

from aworld_rl_core.benchmarking import compare_rollouts, measure, parse_args


def _play(model, tokenizer, episodes: int, turns: int, new_tokens: int, batch_size, seed: int):
    import torch

    from aworld_rl_core.engine import ChatCodec, Limits, Rollout, run_batched
    from aworld_rl_core.envs.toy import LowercaseEnv, toy_tasks
    from aworld_rl_core.models.generate import HfGenerator, generate_turns

    codec = ChatCodec(tokenizer)
    generate = HfGenerator(model, pad_id=tokenizer.pad_token_id, stop_ids=[codec.eos_id])
    tasks = toy_tasks(num_tasks=episodes, seed=seed)
    limits = Limits(
        max_turns=turns, max_new_tokens=new_tokens, max_response_tokens=turns * (new_tokens + 64)
    )
    torch.manual_seed(seed)
    timed = measure(
        lambda: run_batched(
            Rollout([LowercaseEnv(t, turns=turns) for t in tasks], limits, codec=codec),
            functools.partial(generate_turns, generate),
            batch_size=batch_size,
        )
    )
    played = timed.result
    model_tokens = sum(sum(e.loss_mask) for e in played)
    return replace(timed, result={"model_tokens": model_tokens, "episodes": len(played)})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="tiny:qwen3", help="ModelConfig.name_or_path")
    parser.add_argument("--episodes", type=int, default=16)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parse_args(parser, short={"episodes": 2, "turns": 1, "max_new_tokens": 2, "repeats": 1})

    from aworld_rl_core.models import load_model_and_tokenizer
    from aworld_rl_core.models.config import ModelConfig

    model, tokenizer = load_model_and_tokenizer(ModelConfig(name_or_path=args.model))
    shape = (args.episodes, args.turns, args.max_new_tokens)
    _play(model, tokenizer, 2, 1, 4, None, 0)  # warm-up
    compare_rollouts(
        lambda repeat, batch_size: _play(model, tokenizer, *shape, batch_size, seed=repeat),
        args,
        per_cpu_s=("episodes", "model_tokens"),
    )


if __name__ == "__main__":
    main()
