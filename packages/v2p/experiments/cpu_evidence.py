"""CPU evidence: head-only training of the tiny model on browser-rendered screenshots.

1. Render train and test pages with ``aworld_rl_v2p.synthetic`` (chromium; disjoint seeds).
2. Run core's tiny random Qwen2.5-VL (+ pointer tokens) once over every sample and keep, per
   sample, the pointer token's last hidden state and the patch embeddings: with the backbone
   and the embeddings frozen these are fixed, so only the action head is trained (the warm-up
   stage's head; its new token rows stay frozen here).
3. Train a fresh head (same seed) for each labels (all / center / gauss) x loss (KL /
   KL + suppression) setting with Adam, and record on the test pages the top-1 hit rate of
   ``predict_points`` and the mean attention mass outside the box, and that mass on a fixed
   slice of the training samples (how fast the loss drives it down), every ``--eval-every``
   steps.

Prints and writes ``cpu_evidence.json`` and three plots (PNG) into ``--out``.
Run: ``python packages/v2p/experiments/cpu_evidence.py --out docs/v2p``.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

import torch
from PIL import Image

from aworld_rl_core.models import tiny_vl_model
from aworld_rl_v2p.data import read_aguvis
from aworld_rl_v2p.evaluation import judge
from aworld_rl_v2p.inference import Grounder
from aworld_rl_v2p.loss import PointerLossOptions, pointer_loss, pointer_targets
from aworld_rl_v2p.modeling import ActionHead, from_base
from aworld_rl_v2p.readout import predict_points
from aworld_rl_v2p.synthetic import GenerateOptions, generate

SETTINGS = [(label, sup) for label in ("all", "center", "gauss") for sup in (False, True)]


def features(grounder, samples, batch_size=8):
    """Per sample: (query (1, d), patches (M, d), grid, sample), from one frozen prefill."""
    model, out = grounder.model, []
    with torch.no_grad():
        for i in range(0, len(samples), batch_size):
            chunk = samples[i : i + batch_size]
            batch = grounder.encode(
                [Image.open(s.image) for s in chunk], [s.instruction for s in chunk]
            )
            enc = model.encode(**batch)
            for j, s in enumerate(chunk):
                where = enc.input_ids[j] == model.pointer_pad_token_id
                out.append((enc.hidden[j][where].clone(), enc.patches[j].clone(), enc.grids[j], s))
    return out


def evaluate(head, data, opts, by_type=None):
    head.eval()
    hits, outside = [], []
    with torch.no_grad():
        for query, patches, grid, sample in data:
            logits = head(patches, query)
            _, regions = pointer_targets([sample.box], grid, opts, n=1)
            probs = logits.softmax(-1)
            outside.append(float(probs.masked_fill(regions, 0).sum()))
            points = predict_points(probs[0].reshape(grid))
            hits.append(judge(sample, points).hit_top1)
            if by_type is not None:
                by_type.setdefault(sample.ui_type, []).append(hits[-1])
    head.train()
    return sum(hits) / len(hits), sum(outside) / len(outside)


def train(train_data, test_data, d, label, suppression, args):
    torch.manual_seed(args.seed)
    head = ActionHead(d)
    for module in head.modules():  # transformers' init for the head (normal 0.02, zero bias)
        if isinstance(module, torch.nn.Linear):
            torch.nn.init.normal_(module.weight, std=0.02)
            torch.nn.init.zeros_(module.bias)
    opts = PointerLossOptions(label_style=label, suppression=suppression, sigma_factor=1.0)
    targets = [pointer_targets([s.box], g, opts, n=1) for _, _, g, s in train_data]
    optimizer = torch.optim.Adam(head.parameters(), lr=args.lr)
    rng = random.Random(args.seed)
    seen = train_data[: len(test_data)]  # a fixed slice of the training set: optimisation speed

    def point(step):
        top1, outside = evaluate(head, test_data, opts)
        return (step, top1, outside, evaluate(head, seen, opts)[1])

    curve = [point(0)]
    for step in range(1, args.steps + 1):
        batch = rng.sample(range(len(train_data)), args.batch)
        losses = []
        for i in batch:
            query, patches, _, _ = train_data[i]
            labels, regions = targets[i]
            loss, _ = pointer_loss(head(patches, query), labels, regions, suppression=suppression)
            losses.append(loss)
        optimizer.zero_grad()
        torch.stack(losses).mean().backward()
        optimizer.step()
        if step % args.eval_every == 0:
            curve.append(point(step))
    by_type: dict = {}
    evaluate(head, test_data, opts, by_type)
    return curve, {t: sum(v) / len(v) for t, v in sorted(by_type.items())}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train-pages", type=int, default=250)
    parser.add_argument("--test-pages", type=int, default=50)
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--eval-every", type=int, default=50)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--max-pixels", type=int, default=448 * 336)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("."))
    parser.add_argument("--threads", type=int, default=1, help="torch threads (small ops: 1)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)  # on a shared CPU, 2 threads made a step ~15x slower
    started = time.time()
    work = Path(tempfile.mkdtemp(prefix="v2p-evidence-"))
    resolutions = ((448, 336), (392, 280), (336, 448))
    for name, pages, seed in (("train", args.train_pages, 1000), ("test", args.test_pages, 2000)):
        summary = generate(
            work / name, GenerateOptions(pages=pages, resolutions=resolutions, seed=seed)
        )
    train_samples = read_aguvis(work / "train" / "data.json")
    test_samples = read_aguvis(work / "test" / "data.json")
    vl = tiny_vl_model(seed=0)
    model = from_base(vl.model, vl.tokenizer).eval()
    grounder = Grounder(model, vl.tokenizer, vl.image_processor, max_pixels=args.max_pixels)
    train_data, test_data = features(grounder, train_samples), features(grounder, test_samples)
    print(f"features of {len(train_data)} + {len(test_data)} samples", flush=True)
    area = sum((s.box[2] - s.box[0]) * (s.box[3] - s.box[1]) for s in test_samples) / len(
        test_samples
    )
    elements = json.loads((work / "test" / "data.json").read_text())
    results = {
        "renderer": summary["renderer"],
        "train_samples": len(train_samples),
        "test_samples": len(test_samples),
        "chance_random_point": area,
        "chance_random_element": sum(1 / r["elements"] for r in elements) / len(elements),
        "test_types": {t: sum(s.ui_type == t for s in test_samples) for t in ("icon", "text")},
        "steps": args.steps,
        "batch": args.batch,
        "lr": args.lr,
        "threads": args.threads,
        "max_pixels": args.max_pixels,
        "curves": {},
    }
    d = model.config.text_config.hidden_size
    for label, sup in SETTINGS:
        key = f"{label}+{'kl+sup' if sup else 'kl'}"
        results["curves"][key], results.setdefault("final_top1_by_type", {})[key] = train(
            train_data, test_data, d, label, sup, args
        )
        _, top1, outside, seen = results["curves"][key][-1]
        print(f"{key:16s} top-1 {top1:.3f}  out-of-box mass {outside:.3f} (train {seen:.3f})")
    results["seconds"] = round(time.time() - started, 1)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "cpu_evidence.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    plot(results, args.out)
    return results


def plot(results, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = (
        ("top1", "top-1 hit rate (test)"),
        ("outside", "attention mass outside the box (test)"),
        ("outside_train", "attention mass outside the box (training samples)"),
    )
    for index, (name, ylabel) in enumerate(panels):
        fig, ax = plt.subplots(figsize=(6, 4))
        for key, curve in results["curves"].items():
            steps = [c[0] for c in curve]
            ax.plot(
                steps,
                [c[1 + index] for c in curve],
                label=key,
                linestyle="-" if "sup" in key else "--",
            )
        if name == "top1":
            ax.axhline(
                results["chance_random_point"],
                color="gray",
                linewidth=0.8,
                label="chance (random point)",
            )
        ax.set_xlabel("head-only training steps")
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(out / f"cpu_evidence_{name}.png", dpi=110)
        plt.close(fig)


if __name__ == "__main__":
    main()
