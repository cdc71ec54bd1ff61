"""GPU smoke test of the verl backend: 3 GRPO steps of a small model on a multi-turn toy task.

One command, one GPU, a few minutes (budget: under 10 minutes on one H200)::

    AWORLD_SMOKE_MODEL=/models/Qwen2.5-0.5B-Instruct \\
        python packages/core/benchmarks/gpu/verl_smoke.py --out "$OUT"

Needs a GPU image with ``aworld-rl-core[verl]`` and a rollout engine (``verl[vllm]==0.9.1``).
The task: core's counter game (``core.toy-counter``: bring a counter to a target by answering
``add N``; the environment answers ``value=V`` until the target is reached; reward 1.0 then).
Rollouts run through our ``aworld_env`` agent loop, rewards come from the environment. The
script checks that verl ran the steps, logged rewards and wrote a checkpoint, and writes
``verl_smoke.json`` to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.environ.get("OUT", "verl_smoke_out"))
    parser.add_argument("--model", default=os.environ.get("AWORLD_SMOKE_MODEL"))
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--engine", default="vllm", choices=["vllm", "sglang"])
    parser.add_argument(
        "--dry-run", action="store_true", help="only write and validate the launch (CPU is fine)"
    )
    args = parser.parse_args()
    if not args.model:
        parser.error("give --model or AWORLD_SMOKE_MODEL (a local model directory)")

    from aworld_rl_core.backends.base import TrainJob
    from aworld_rl_core.backends.verl.backend import VerlBackend
    from aworld_rl_core.backends.verl.config import VerlConfig
    from aworld_rl_core.models.config import ModelConfig
    from aworld_rl_core.runs import Run
    from aworld_rl_core.trainer_config import RLConfig, TrainerConfig

    out = Path(args.out).resolve()
    rows = [{"prompt": f"Bring the counter to {t}.", "target": t} for t in range(1, 33)]
    trainer = TrainerConfig(
        backend="verl",
        learning_rate=1e-6,
        batch_size=8,
        micro_batch_size=4,
        max_steps=args.steps,
        rl=RLConfig(
            group_size=4, kl_coef=0.001, max_turns=3, max_new_tokens=64, max_response_tokens=512
        ),
        sections={
            "verl": VerlConfig(
                rollout_engine=args.engine,
                dry_run=args.dry_run,
                gpus_per_node=1,
                gpu_memory_utilization=0.4,
                max_prompt_length=512,
                agent_workers=2,
                extra_overrides=(
                    "data.dataloader_num_workers=0",
                    "actor_rollout_ref.rollout.max_num_seqs=64",
                    "ray_kwargs.ray_init.num_cpus=8",
                    "actor_rollout_ref.model.use_remove_padding=false",  # no flash-attn needed
                ),
            ),
        },
    )
    run = Run(out / "run", name="verl-smoke", quiet=True)
    job = TrainJob(
        model=ModelConfig(name_or_path=args.model),
        trainer=trainer,
        run=run,
        train_rows=rows,
        env="core.toy-counter",
    )
    started = time.time()
    result = VerlBackend().train(job)
    if args.dry_run:
        return 0
    metrics_file = result.outputs.get("metrics")
    steps = [json.loads(line)["step"] for line in Path(metrics_file).read_text().splitlines()]
    summary = {
        "seconds": round(time.time() - started, 1),
        "steps_logged": len(steps),
        "checkpoints": [str(p) for p in result.checkpoints],
        "final_metrics": {k: v for k, v in result.metrics.items() if "score" in k or "reward" in k},
    }
    (out / "verl_smoke.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2))
    ok = len(steps) >= args.steps and bool(result.checkpoints)
    ok = ok and any("score" in k for k in result.metrics)
    print("SMOKE", "PASSED" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
