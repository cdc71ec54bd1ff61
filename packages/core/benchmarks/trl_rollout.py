"""Multi-turn rollouts of the ``trl`` backend on CPU: batched episodes vs one episode at a time.

Plays the same episodes of the toy lowercase game with ``rollout.run_episodes`` and the
backend's ``HfGenerator`` twice per repeat: all active episodes in one ``generate`` call per
turn (what the backend does), then one episode at a time (``batch_size=1``, the baseline). The
two sides alternate, each keeps its best run, and times are CPU seconds of the process
(``time.process_time``, robust on a shared machine) next to wall-clock seconds.

    python packages/core/benchmarks/trl_rollout.py [--episodes 16] [--turns 3] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def _play(model, tokenizer, episodes: int, turns: int, new_tokens: int, batch_size, seed: int):
    import torch

    from aworld_rl_core.backends.hf_generate import HfGenerator
    from aworld_rl_core.backends.rollout import ChatCodec, RolloutLimits, run_episodes
    from aworld_rl_core.envs.toy import LowercaseEnv, ToyTasksConfig, toy_tasks

    codec = ChatCodec(tokenizer)
    generate = HfGenerator(model, pad_id=tokenizer.pad_token_id, stop_ids=[codec.eos_id])
    tasks = toy_tasks(ToyTasksConfig(num_tasks=episodes, seed=seed))
    limits = RolloutLimits(
        max_turns=turns, max_new_tokens=new_tokens, max_response_tokens=turns * (new_tokens + 64)
    )
    torch.manual_seed(seed)
    cpu, wall = time.process_time(), time.perf_counter()
    played = run_episodes(
        [LowercaseEnv(turns) for _ in tasks], tasks, generate, codec, limits, batch_size=batch_size
    )
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    model_tokens = sum(sum(e.env_mask) for e in played)
    return {"cpu_s": cpu, "wall_s": wall, "model_tokens": model_tokens, "episodes": len(played)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="tiny:qwen3", help="ModelConfig.name_or_path")
    parser.add_argument("--episodes", type=int, default=16)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()

    import torch

    from aworld_rl_core.backends.config import ModelConfig
    from aworld_rl_core.testing.tiny import load_model_and_tokenizer

    model, tokenizer = load_model_and_tokenizer(ModelConfig(name_or_path=args.model))
    shape = (args.episodes, args.turns, args.max_new_tokens)
    _play(model, tokenizer, 2, 1, 4, None, 0)  # warm-up
    best: dict[str, dict] = {}
    for repeat in range(args.repeats):
        for side, batch_size in (("batched", None), ("one_at_a_time", 1)):
            figures = _play(model, tokenizer, *shape, batch_size, seed=repeat)
            if side not in best or figures["cpu_s"] < best[side]["cpu_s"]:
                best[side] = figures
    for figures in best.values():
        figures["episodes_per_cpu_s"] = figures["episodes"] / figures["cpu_s"]
        figures["model_tokens_per_cpu_s"] = figures["model_tokens"] / figures["cpu_s"]
    result = {
        "model": args.model,
        "episodes": args.episodes,
        "turns": args.turns,
        "max_new_tokens": args.max_new_tokens,
        "torch_threads": torch.get_num_threads(),
        **best,
        "ratio_cpu": best["one_at_a_time"]["cpu_s"] / best["batched"]["cpu_s"],
        "ratio_wall": best["one_at_a_time"]["wall_s"] / best["batched"]["wall_s"],
    }
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
