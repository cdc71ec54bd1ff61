"""One-GPU smoke run: each training path trains a few steps, each in its own subprocess.

    python -m aworld_rl_core.smoke --device cuda --out DIR [--model PATH] [--timeout 300]
    python -m aworld_rl_core.smoke --device cpu --out DIR        # tiny models (CI)

Parts (``--parts`` picks some):

- ``trl-grpo``: TRL GRPO on core's counter environment (``core.toy-counter``): the loss is
  finite, observation tokens are masked (the environment answered), reward and KL are logged,
  a checkpoint is saved;
- ``hf-sft``: transformers SFT with a token-weighted loss (think tokens weighted apart from the
  rest): the loss is finite and falls, think tokens were seen, the model is saved;
- every registered smoke part (``register_smoke_parts``: the paper packages register their own
  paths, e.g. LLaMA-Factory with their loss, a vision warm-up, retrieval RL; core finds them
  through the registry and never names them), run by default when installed;
- ``recipe:<name>``: a registered recipe's ``tiny-cpu`` preset (only when asked for).

Each part runs as ``python -m aworld_rl_core.smoke --part NAME`` with a timeout; the parent
collects one JSON line from each and ends with a table and ``DIR/smoke.json``: part, status
(pass / fail / skip), seconds, peak memory (GPU: torch's peak allocated; CPU: the process's
max RSS) and dtype. ``--device cuda`` trains in bf16; ``--model`` is a local model path (no hub
access assumed), else the tiny random models.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Literal

CORE_PARTS = ("trl-grpo", "hf-sft")
RESULT_PREFIX = "SMOKE_RESULT "


class SmokeFailure(AssertionError):
    """A part trained but did not show what it should."""


def _check(condition: bool, what: str) -> None:
    if not condition:
        raise SmokeFailure(what)


def _dtype(device: str) -> Literal["bfloat16", "float32"]:
    return "bfloat16" if device == "cuda" else "float32"


def _model(args: argparse.Namespace) -> str:
    return args.model or "tiny:qwen3"


def part_trl_grpo(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    from aworld_rl_core.backends.base import TrainJob
    from aworld_rl_core.backends.trl_grpo import TrlGrpoBackend
    from aworld_rl_core.models.config import ModelConfig
    from aworld_rl_core.refs import Ref
    from aworld_rl_core.runs import Run
    from aworld_rl_core.trainer_config import RLConfig, TrainerConfig

    rows = [{"target": 2 + i % 3} for i in range(4)]
    trainer = TrainerConfig(
        backend="trl",
        learning_rate=1e-2,
        max_steps=2,
        batch_size=2,
        micro_batch_size=8,
        seed=0,
        rl=RLConfig(
            group_size=4, kl_coef=0.05, max_turns=2, max_new_tokens=8, max_response_tokens=64
        ),
    )
    run = Run(out, quiet=True)
    try:
        result = TrlGrpoBackend().train(
            TrainJob(
                model=ModelConfig(name_or_path=_model(args), dtype=_dtype(args.device)),
                trainer=trainer,
                run=run,
                train_rows=rows,
                env=Ref.named("core.toy-counter"),
            )
        )
    finally:
        run.close()
    logged = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines() if x]
    keys = {k for m in logged for k in m}
    loss = result.metrics.get("train_loss", math.nan)
    _check(math.isfinite(loss), f"train loss {loss} is not finite")
    _check(any("reward" in k for k in keys), "no reward was logged")
    _check(any(k == "kl" or k.endswith("/kl") for k in keys), "no KL was logged")
    _check(bool(result.checkpoints), "no checkpoint was saved")
    observed = max((m.get("episode/env_tokens", 0.0) for m in logged), default=0.0)
    _check(observed > 0, "the episodes hold no environment (observation, loss-masked) tokens")
    return {"train_loss": loss, "checkpoint": str(result.checkpoints[-1]), "env_tokens": observed}


def part_hf_sft(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    from aworld_rl_core.backends.base import TrainJob
    from aworld_rl_core.backends.hf_sft import HfSftBackend
    from aworld_rl_core.models.config import ModelConfig
    from aworld_rl_core.runs import Run
    from aworld_rl_core.trainer_config import SFTConfig, TrainerConfig

    seen = {"think": 0}

    def weighted(logits: Any, labels: Any, segments: Any) -> Any:
        import torch.nn.functional as F

        flat = F.cross_entropy(
            logits.float().reshape(-1, logits.size(-1)),
            labels.reshape(-1),
            ignore_index=-100,
            reduction="none",
        ).view_as(labels)
        mask = labels != -100
        think = segments["think"] & mask
        seen["think"] += int(think.sum())
        weights = mask.float() + think.float()  # think tokens count twice
        return (flat * weights).sum() / weights.sum().clamp(min=1)

    row = {
        "messages": [
            {"role": "user", "content": "What is 2 + 3?"},
            {"role": "assistant", "content": "<think>2 plus 3 is 5</think>The answer is 5."},
        ]
    }
    trainer = TrainerConfig(
        backend="hf-sft",
        learning_rate=5e-2,
        max_steps=4,
        batch_size=1,
        micro_batch_size=1,
        seed=0,
        sft=SFTConfig(max_length=128, lr_scheduler="constant"),
    )
    run = Run(out, quiet=True)
    try:
        result = HfSftBackend().train(
            TrainJob(
                model=ModelConfig(name_or_path=_model(args), dtype=_dtype(args.device)),
                trainer=trainer,
                run=run,
                train_rows=[row],
                loss=weighted,
            )
        )
    finally:
        run.close()
    logged = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines() if x]
    losses = [m["loss"] for m in logged if "loss" in m and "grad_norm" in m]
    _check(all(math.isfinite(x) for x in losses) and len(losses) == 4, f"losses {losses}")
    _check(losses[-1] < losses[0], f"the loss did not fall: {losses}")
    _check(seen["think"] > 0, "the loss saw no think tokens")
    _check((Path(result.outputs["model"]) / "config.json").is_file(), "no model was saved")
    return {"first_loss": losses[0], "last_loss": losses[-1], "think_tokens": seen["think"]}


def part_recipe(name: str, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """A registered recipe's tiny-cpu preset (core never imports the package itself)."""
    from aworld_rl_core import registry
    from aworld_rl_core.config import list_presets, load_config
    from aworld_rl_core.runs import execute

    try:
        entry = registry.get_recipe(name)
    except Exception as exc:  # not installed: the package registers nothing
        return {"status": "skip", "why": f"recipe {name} not installed ({exc})"}
    if "tiny-cpu" not in list_presets(entry.presets):
        return {"status": "skip", "why": f"recipe {name} has no tiny-cpu preset"}
    cfg = load_config(entry.config_cls(), preset="tiny-cpu", presets=entry.presets)
    result, _run = execute(name, entry.run_fn(), cfg, output_dir=out / "run", quiet=True)
    finite = {k: v for k, v in result.metrics.items() if isinstance(v, float)}
    _check(all(math.isfinite(v) for v in finite.values()), f"non-finite metrics: {finite}")
    return {"metrics": dict(list(finite.items())[:6])}


def _peak(device: str) -> float:
    """Peak memory in MiB: torch's peak CUDA allocation, or this process's max RSS."""
    if device == "cuda":
        import torch

        return torch.cuda.max_memory_allocated() / 2**20
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def run_part(part: str, args: argparse.Namespace) -> dict[str, Any]:
    out = Path(args.out) / part.replace(":", "_")
    out.mkdir(parents=True, exist_ok=True)
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            return {"status": "fail", "why": "--device cuda but torch sees no CUDA device"}
    start = time.time()
    try:
        if part == "trl-grpo":
            detail = part_trl_grpo(args, out)
        elif part == "hf-sft":
            detail = part_hf_sft(args, out)
        elif part.startswith("recipe:"):
            detail = part_recipe(part.split(":", 1)[1], args, out)
        elif part in registered_parts():
            from aworld_rl_core import registry

            fn = registry.get_smoke_part(part)
            detail = dict(fn(args.device, args.model, out) or {})
        else:
            known = ", ".join([*CORE_PARTS, *registered_parts()])
            return {"status": "fail", "why": f"unknown part {part!r} (parts here: {known})"}
        status = detail.pop("status", "pass")
    except Exception as exc:  # the table says what failed; the traceback is in the log
        import traceback

        traceback.print_exc()
        status, detail = "fail", {"why": f"{type(exc).__name__}: {exc}"[:500]}
    return {
        "status": status,
        "seconds": round(time.time() - start, 2),
        "peak_mib": round(_peak(args.device), 1),
        **detail,
    }


def registered_parts() -> list[str]:
    """The smoke parts installed packages register (``register_smoke_parts``)."""
    from aworld_rl_core import registry

    return registry.names("smoke_parts")


def default_parts() -> list[str]:
    return [*CORE_PARTS, *registered_parts()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m aworld_rl_core.smoke", description=__doc__)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cuda")
    parser.add_argument("--out", required=True, help="output folder (smoke.json, logs)")
    parser.add_argument("--model", help="local model path (default: the tiny random model)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per part")
    parser.add_argument("--parts", help="comma-separated parts (default: all)")
    parser.add_argument("--part", help=argparse.SUPPRESS)  # the child process's one part
    args = parser.parse_args(argv)
    if args.part:
        record = run_part(args.part, args)
        print(RESULT_PREFIX + json.dumps(record, default=str), flush=True)
        return 0 if record["status"] != "fail" else 1
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    parts = args.parts.split(",") if args.parts else default_parts()
    rows = [_child(p, args, out) for p in parts]
    (out / "smoke.json").write_text(json.dumps(rows, indent=1), encoding="utf-8")
    print(table(rows))
    print(f"\nsmoke.json: {out / 'smoke.json'}")
    return 1 if any(r["status"] == "fail" for r in rows) else 0


def _child(part: str, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    command = [sys.executable, "-m", "aworld_rl_core.smoke", "--part", part]
    command += ["--device", args.device, "--out", str(out), "--timeout", str(args.timeout)]
    if args.model:
        command += ["--model", args.model]
    log = out / f"{part.replace(':', '_')}.log"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    start = time.time()
    record: dict[str, Any]
    try:
        proc = subprocess.run(
            command, capture_output=True, text=True, timeout=args.timeout, env=env, check=False
        )
    except subprocess.TimeoutExpired as exc:
        log.write_text(str(exc.stdout or "") + str(exc.stderr or ""), encoding="utf-8")
        record = {"status": "fail", "why": f"timed out after {args.timeout:g} s"}
        return {"part": part, "dtype": _dtype(args.device), "seconds": args.timeout, **record}
    log.write_text(proc.stdout + proc.stderr, encoding="utf-8")
    lines = [x for x in proc.stdout.splitlines() if x.startswith(RESULT_PREFIX)]
    if not lines:
        why = f"exit code {proc.returncode}, no result (log: {log})"
        record = {"status": "fail", "why": why, "seconds": round(time.time() - start, 2)}
    else:
        record = json.loads(lines[-1].removeprefix(RESULT_PREFIX))
    return {"part": part, "dtype": _dtype(args.device), **record}


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| part | result | seconds | peak memory (MiB) | dtype | note |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        note = r.get("why", "")
        lines.append(
            f"| {r['part']} | {r['status']} | {r.get('seconds', '-')} | "
            f"{r.get('peak_mib', '-')} | {r['dtype']} | {note} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
