"""SRML against plain cross-entropy on core's tool-use micro-world, same budget, held-out templates.

The data (``aworld_rl_funreason.world``): every training entry of the micro-world split (training
templates only) with its ground truth played in FunReason's format, each reply's ``<think>``
reasoning written by a template. A tiny model (``--model``: core's ``tiny:`` Qwen2 with the
world-trained BPE) is trained by ``funreason.sft``'s hf-sft path once with SRML
(``alpha * L_think + (1 - alpha) * L_result``, ``--alpha``, ``--learnable`` for v3's trainable
alpha) and once with plain cross-entropy, with the same steps, batch, learning rate and seed,
for each seed. Each model then plays, greedily, every held-out entry of the templates held out
whole (``pay``, ``lock_and_temp``, ``temp_then_read``, ``ask_then_send``) and the held-out slot
combinations of the training templates, in core's ``core.bfcl-multi-turn`` environment with
FunReason's format; accuracy is the share of entries every turn of which passes core's BFCL
judge (state and results), and the format rate the share played without a format error. The
script prints the table (mean and range over seeds), writes ``srml_world.json`` and
``srml_world.md`` under ``--out``.

    nice -n 5 python packages/funreason/benchmarks/srml_world.py --seeds 0 1 2 --out /tmp/srml-world
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from aworld_rl_core.benchmarking import parse_args

LOSSES = ("srml", "ce")
GROUPS = {
    "held_out_templates": "held-out templates",
    "held_out_slots": "held-out slots of training templates",
}


def train(
    args: argparse.Namespace, rows: list[dict[str, Any]], loss: str, seed: int, out: Path
) -> tuple[str, dict[str, float]]:
    """Train with ``loss`` at ``seed``; the saved model's path and the run's last metrics."""
    from aworld_rl_core.models.config import ModelConfig
    from aworld_rl_core.runs import Run
    from aworld_rl_core.trainer_config import SFTConfig, TrainerConfig
    from aworld_rl_funreason.recipes.sft import SRML, SftDataConfig, SftRecipeConfig, train_on_rows

    options = {"alpha": args.alpha, "learnable": args.learnable}
    trainer = TrainerConfig(
        backend="hf-sft",
        loss=SRML if loss == "srml" else None,
        loss_options=options if loss == "srml" else {},
        learning_rate=args.lr,
        max_steps=args.steps,
        batch_size=args.batch,
        micro_batch_size=args.batch,
        seed=seed,
        save_steps=0,
        sft=SFTConfig(max_length=args.max_length, per_turn=False, lr_scheduler="constant"),
    )
    cfg = SftRecipeConfig(
        data=SftDataConfig(overlong="drop"),
        model=ModelConfig(name_or_path=args.model, dtype="float32"),
        trainer=trainer,
    )
    run = Run(out / f"{loss}-seed{seed}", quiet=True)
    result = train_on_rows(rows, cfg, run)
    return str(result.outputs["model"]), {k: float(v) for k, v in result.metrics.items()}


def evaluate(
    model_path: str, rows: list[dict[str, Any]], args: argparse.Namespace
) -> dict[str, float]:
    """Greedy episodes of ``rows``: accuracy (every turn passes core's judge), format rate,
    mean share of turns passed; then :func:`teacher_forced` on their ground truth."""
    from aworld_rl_core.backends.trl_trainer import EpisodeRollout
    from aworld_rl_core.engine import ChatCodec, Limits
    from aworld_rl_core.models import load_model_and_tokenizer
    from aworld_rl_core.models.config import ModelConfig
    from aworld_rl_funreason.world import environment, records

    model, tokenizer = load_model_and_tokenizer(ModelConfig(name_or_path=model_path))
    model.eval()
    limits = Limits(max_turns=args.max_turns, max_new_tokens=args.max_new_tokens)
    rollout = EpisodeRollout(
        rows, environment, ChatCodec(tokenizer), limits, temperature=0.0, top_p=1.0
    )
    episodes = []
    for start in range(0, len(rows), args.eval_batch):
        episodes += rollout.play(model, tokenizer, rows[start : start + args.eval_batch])
    finished = [e.info if e.done and "valid" in e.info else None for e in episodes]
    n = len(episodes)
    gold = teacher_forced(model, tokenizer, records([r["id"] for r in rows]))
    return {
        **gold,
        "accuracy": sum(bool(i and i["valid"]) for i in finished) / n,
        "format_ok": sum(bool(i and not i["format_errors"]) for i in finished) / n,
        "turns_passed": sum(
            (sum(i["turn_scores"]) / len(r["bfcl_entry"]["ground_truth"])) if i else 0.0
            for i, r in zip(finished, rows, strict=True)
        )
        / n,
        "entries": float(n),
    }


def teacher_forced(model: Any, tokenizer: Any, gold: list[dict[str, Any]]) -> dict[str, float]:
    """On the held-out entries' ground truth (FunReason's format): the mean token NLL of the
    reasoning and of the rest of each reply (the calls, the replies), and the share of those
    call tokens the model predicts (argmax)."""
    import torch

    from aworld_rl_core.backends.sft_data import build_samples

    samples, _ = build_samples(gold, tokenizer, max_length=4096, per_turn=False)
    sums = {"think": [0.0, 0], "call": [0.0, 0]}
    hits = 0
    with torch.no_grad():
        for sample in samples:
            ids = torch.tensor([sample.input_ids])
            logits = model(input_ids=ids).logits[0, :-1].float()
            labels = torch.tensor(sample.labels[1:])
            think = torch.tensor(sample.segments["think"][1:]).bool()
            valid = labels >= 0
            nll = torch.nn.functional.cross_entropy(logits, labels.clamp(min=0), reduction="none")
            for part, mask in (("think", valid & think), ("call", valid & ~think)):
                sums[part][0] += float(nll[mask].sum())
                sums[part][1] += int(mask.sum())
            hits += int((logits.argmax(-1) == labels)[valid & ~think].sum())
    return {
        "think_nll": sums["think"][0] / max(sums["think"][1], 1),
        "call_nll": sums["call"][0] / max(sums["call"][1], 1),
        "call_token_acc": hits / max(sums["call"][1], 1),
    }


def spread(values: list[float], *, percent: bool = True) -> str:
    """Mean ± sample standard deviation (min-max) over seeds."""
    scale, digits = (100, 1) if percent else (1, 3)
    if len(values) == 1:
        return f"{scale * values[0]:.{digits}f}"
    mean, sd = statistics.mean(values), statistics.stdev(values)
    low, high = scale * min(values), scale * max(values)
    return (
        f"{scale * mean:.{digits}f} ± {scale * sd:.{digits}f} ({low:.{digits}f}-{high:.{digits}f})"
    )


COLUMNS = {
    "accuracy": "accuracy %",
    "format_ok": "format ok %",
    "turns_passed": "turns passed %",
    "call_token_acc": "call tokens right (teacher-forced) %",
    "call_nll": "call NLL",
    "think_nll": "reasoning NLL",
}


def table(runs: list[dict[str, Any]]) -> str:
    lines = [
        "| loss | group | entries | " + " | ".join(COLUMNS.values()) + " |",
        "|---" * (len(COLUMNS) + 3) + "|",
    ]
    for group, label in GROUPS.items():
        for loss in LOSSES:
            mine = [r[group] for r in runs if r["loss"] == loss]
            if not mine:
                continue
            cells = [
                spread([m[k] for m in mine], percent=k not in ("call_nll", "think_nll"))
                for k in COLUMNS
            ]
            lines.append(
                f"| {loss} | {label} | {int(mine[0]['entries'])} | " + " | ".join(cells) + " |"
            )
    return "\n".join(lines)


def one(args: argparse.Namespace, loss: str, seed: int) -> dict[str, Any]:
    """Train with ``loss`` at ``seed``, evaluate on both held-out groups."""
    import torch

    from aworld_rl_funreason.world import eval_rows, sft_rows

    torch.set_num_threads(args.threads)
    rows = sft_rows(limit=args.train_entries)
    began = time.perf_counter()
    path, metrics = train(args, rows, loss, seed, args.out)
    trained = time.perf_counter() - began
    run: dict[str, Any] = {"loss": loss, "seed": seed, "train_s": trained}
    run["train_loss"] = metrics.get("train_loss")
    for group in GROUPS:
        templates = "held_out" if group == "held_out_templates" else "seen"
        run[group] = evaluate(path, eval_rows(templates=templates, limit=args.eval_entries), args)
    run["wall_s"] = time.perf_counter() - began
    (args.out / f"{loss}-seed{seed}" / "result.json").write_text(json.dumps(run, indent=2))
    print(
        f"seed {seed} {loss}: held-out templates "
        f"{100 * run['held_out_templates']['accuracy']:.1f}%, held-out slots "
        f"{100 * run['held_out_slots']['accuracy']:.1f}% "
        f"(train {trained:.0f} s, all {run['wall_s']:.0f} s)",
        flush=True,
    )
    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--losses", nargs="+", choices=LOSSES, default=list(LOSSES))
    ap.add_argument("--model", default="tiny:qwen2:hidden=128,window=64,vocab=1024")
    ap.add_argument("--steps", type=int, default=200, help="optimizer steps (both losses)")
    ap.add_argument("--batch", type=int, default=4, help="samples (whole episodes) per step")
    ap.add_argument("--lr", type=float, default=5e-3, help="constant learning rate")
    ap.add_argument("--alpha", type=float, default=0.7, help="SRML's alpha (v1: fixed 0.7)")
    ap.add_argument("--learnable", action="store_true", help="v3: alpha trained from --alpha")
    ap.add_argument("--max-length", type=int, default=1024)
    ap.add_argument("--train-entries", type=int, default=None, help="first N training entries")
    ap.add_argument("--eval-entries", type=int, default=None, help="first N entries per group")
    ap.add_argument("--eval-batch", type=int, default=48, help="episodes generated together")
    ap.add_argument("--max-turns", type=int, default=8, help="model replies per episode")
    ap.add_argument("--max-new-tokens", type=int, default=128, help="tokens per reply")
    ap.add_argument("--threads", type=int, default=1, help="torch threads per run")
    ap.add_argument("--parallel", type=int, default=1, help="runs at a time (processes)")
    ap.add_argument("--out", type=Path, default=Path("srml-world"))
    ap.add_argument(
        "--table-only",
        action="store_true",
        help="no training: the table of the runs already under --out (their result.json)",
    )
    args = parse_args(
        ap,
        short={
            "seeds": [0],
            "steps": 2,
            "batch": 1,
            "train_entries": 4,
            "eval_entries": 2,
            "max_turns": 2,
            "max_new_tokens": 8,
            "model": "tiny:qwen2:hidden=64,vocab=1024",
        },
    )
    from aworld_rl_funreason.world import eval_rows, sft_rows

    if args.table_only:
        done = sorted(args.out.glob("*-seed*/result.json"))
        print(table([json.loads(p.read_text()) for p in done]))
        return
    args.out.mkdir(parents=True, exist_ok=True)
    rows = sft_rows(limit=args.train_entries)
    groups = {
        "held_out_templates": eval_rows(templates="held_out", limit=args.eval_entries),
        "held_out_slots": eval_rows(templates="seen", limit=args.eval_entries),
    }
    print(
        f"{len(rows)} training entries (training templates), held out: "
        + ", ".join(f"{len(v)} {GROUPS[k]}" for k, v in groups.items())
    )
    jobs = [(loss, seed) for seed in args.seeds for loss in args.losses]
    if args.parallel > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(args.parallel, mp_context=context) as pool:
            runs = list(pool.map(one, [args] * len(jobs), *zip(*jobs, strict=True)))
    else:
        runs = [one(args, loss, seed) for loss, seed in jobs]
    settings = {
        k: v if not isinstance(v, Path) else str(v) for k, v in vars(args).items() if k != "out"
    }
    (args.out / "srml_world.json").write_text(
        json.dumps({"settings": settings, "runs": runs}, indent=2), encoding="utf-8"
    )
    text = table(runs)
    (args.out / "srml_world.md").write_text(text + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
