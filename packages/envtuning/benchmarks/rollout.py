"""trl-backend rollout throughput on CPU with EnvTuningEnv episodes.

The same process plays the same EnvTuning episodes (BFCL multi-turn entries, compact tool list)
with the episode engine's trl driver loop (``engine.run_batched`` over the ``trl`` backend's
``HfGenerator``): all active
episodes in one ``generate`` call per model turn (what the backend does) vs one episode at a time
(baseline). Each side keeps its best of ``--repeats``, in CPU seconds of the process and wall
seconds. Run: ``python packages/envtuning/benchmarks/rollout.py [--episodes 8] [--json out]``.
"""

from __future__ import annotations

import argparse
import functools
from dataclasses import replace
from pathlib import Path
from typing import Any

from aworld_rl_core.benchmarking import Measured, compare_rollouts, measure, parse_args


def play(model: Any, tokenizer: Any, entry_ids: list[str], args: Any, batch_size: Any) -> Measured:
    import torch

    from aworld_rl_core.engine import ChatCodec, Limits, Rollout, run_batched
    from aworld_rl_core.models.generate import HfGenerator, generate_turns
    from aworld_rl_envtuning.env import EnvTuningEnv, get_entry

    codec = ChatCodec(tokenizer)
    generate = HfGenerator(model, pad_id=tokenizer.pad_token_id, stop_ids=[codec.eos_id])
    envs = [
        EnvTuningEnv(get_entry(i), tool_docs="compact", max_steps_per_turn=1) for i in entry_ids
    ]
    limits = Limits(
        max_turns=args.turns,
        max_new_tokens=args.max_new_tokens,
        max_response_tokens=args.turns * (args.max_new_tokens + 256),
    )
    torch.manual_seed(0)
    timed = measure(
        lambda: run_batched(
            Rollout(envs, limits, codec=codec),
            functools.partial(generate_turns, generate),
            batch_size=batch_size,
        )
    )
    for env in envs:
        env.close()
    episodes = timed.result
    return replace(
        timed,
        result={
            "episodes": len(episodes),
            "model_turns": sum(e.turns for e in episodes),
            "model_tokens": sum(sum(e.loss_mask) for e in episodes),
        },
    )


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="tiny:qwen3", help="ModelConfig.name_or_path")
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--turns", type=int, default=3, help="model turns per episode")
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parse_args(
        parser, argv, short={"episodes": 2, "turns": 1, "max_new_tokens": 2, "repeats": 1}
    )

    from aworld_rl_core.models import load_model_and_tokenizer
    from aworld_rl_core.models.config import ModelConfig
    from aworld_rl_envtuning.data import SplitConfig, bfcl_split

    ids = bfcl_split(SplitConfig()).of("train")[:: max(1, 400 // args.episodes)][: args.episodes]
    model, tokenizer = load_model_and_tokenizer(ModelConfig(name_or_path=args.model))
    play(model, tokenizer, ids[:1], argparse.Namespace(turns=1, max_new_tokens=2), None)  # warm-up
    return compare_rollouts(
        lambda _, batch_size: play(model, tokenizer, ids, args, batch_size),
        args,
        per_cpu_s=("episodes", "model_turns"),
    )


if __name__ == "__main__":
    main()
