"""Recipe ``v2p.eval``: grounding accuracy under ScreenSpot's protocol, pinned.

The protocol (prompt, ``max_pixels``, box format, readout) is part of the config and of the
report, with SHA-256 hashes of the annotation files, so two numbers compare. Inference is
batched: one prefill per batch of screenshots. Outputs: ``predictions.jsonl``,
``summary.json``, the report's tables (micro and macro averages side by side, per group x UI
type, box size, confidence, and ``max_pixels`` sweep) and heat-map overlays of hits and misses.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from aworld_rl_core.config import limit_option, option
from aworld_rl_core.runs import Run, RunResult

PAPER_MAX_PIXELS = 5_720_064


@dataclass(frozen=True, kw_only=True)
class EvalDataConfig:
    """Which benchmark, from local files."""

    kind: Literal[
        "screenspot",
        "screenspot_v2",
        "screenspot_v2_parquet",
        "screenspot_pro",
        "osworld_g",
        "aguvis",
    ] = option(
        "screenspot_v2",
        help="dataset format (screenspot_v2_parquet: the Hub copy; aguvis also reads "
        "v2p.generate's output)",
    )
    path: str = option("", help="the dataset's annotation file or folder")
    images: str | None = option(None, help="image folder (default: found beside the annotations)")
    box_format: Literal["auto", "xyxy", "xywh", "xyxy_norm", "xywh_norm"] = option(
        "auto", help="box format; auto = detected over each annotation file"
    )
    limit: int | None = limit_option("N samples spread over the platforms / groups")
    seed: int = option(0, help="which samples data.limit takes")


@dataclass(frozen=True, kw_only=True)
class ProtocolConfig:
    """ScreenSpot's protocol as V2P / GUI-Actor evaluate it."""

    max_pixels: int = option(
        PAPER_MAX_PIXELS, help="smart-resize pixel cap (<= 7,296 patches)", gt=0
    )
    min_pixels: int = option(3136, help="smart-resize pixel floor", gt=0)
    resize_to_pixels: int = option(
        -1,
        help="first resize every screenshot to this area, aspect kept (the released "
        "ScreenSpot-Pro scripts: 3200x1800 = 5,760,000, up or down); -1 = that for "
        "screenspot_pro and native for the others; 0 = native size",
        ge=-1,
    )
    threshold: float = option(
        0.3, help="patches above threshold x max form regions", ge=0, le=0.999
    )
    topk: int = option(3, help="points per sample (hit_topk)", ge=1)
    region_score: Literal["max", "mean"] = option(
        "max", help="rank regions by max attention (V2P) or mean (GUI-Actor)"
    )
    fallback: bool = option(
        False,
        help="the region's peak patch when its weighted centre falls outside it (between "
        "elements); off = the released readout",
    )


@dataclass(frozen=True, kw_only=True)
class EvalConfig:
    """Evaluate a V2P model on a grounding benchmark."""

    model: str = option("tiny:qwen2_5_vl", help="saved model directory, hub id or tiny:qwen2_5_vl")
    data: EvalDataConfig = option(factory=EvalDataConfig, help="benchmark data")
    protocol: ProtocolConfig = option(factory=ProtocolConfig, help="the pinned protocol")
    batch_size: int = option(8, help="screenshots per prefill", ge=1)
    max_pixels_sweep: tuple[int, ...] = option((), help="also evaluate at these max_pixels", gt=0)
    overlays: int = option(4, help="heat-map PNGs of this many hits and as many misses", ge=0)
    device: str = option("auto", help="auto (CUDA where present, else cpu), cpu, cuda or cuda:N")
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = option(
        "auto", help="auto: bfloat16 on CUDA, float32 on the CPU"
    )
    allow_untrained_head: bool = option(
        False, help="run a model whose action head is fresh (untrained): its points are noise"
    )


PRO_PIXELS = 3200 * 1800  # the released ScreenSpot-Pro scripts' resize_to_pixels


def resize_to(image: Any, pixels: int) -> Any:
    """``image`` scaled (aspect kept) to about ``pixels`` pixels, as the released
    ScreenSpot-Pro scripts do before the processor (``pixels`` 0: unchanged)."""
    if not pixels:
        return image
    width, height = image.size
    ratio = (pixels / (width * height)) ** 0.5
    size = (max(1, int(width * ratio)), max(1, int(height * ratio)))
    return image if size == image.size else image.resize(size)


def evaluate(
    grounder: Any,
    samples: list[Any],
    batch_size: int,
    progress: Any = None,
    resize_to_pixels: int = 0,
) -> tuple[list, list]:
    """(outcomes, attention maps) for the samples, one prefill per ``batch_size``
    screenshots (on the model's device); boxes are normalised, so a resize keeps them."""
    from PIL import Image

    from aworld_rl_v2p.evaluation import judge

    outcomes, maps = [], []
    starts = range(0, len(samples), batch_size)
    for start in progress(starts) if progress else starts:
        chunk = samples[start : start + batch_size]
        images = [resize_to(Image.open(s.image).convert("RGB"), resize_to_pixels) for s in chunk]
        for sample, grounding in zip(
            chunk, grounder.predict(images, [s.instruction for s in chunk]), strict=True
        ):
            outcomes.append(judge(sample, grounding.points))
            maps.append(grounding.attention)
    return outcomes, maps


def run(cfg: EvalConfig, run: Run) -> RunResult:
    from collections import Counter

    from aworld_rl_v2p.data import file_hashes, read, sample_across
    from aworld_rl_v2p.evaluation import markdown, summarize
    from aworld_rl_v2p.inference import Grounder, ReadoutOptions
    from aworld_rl_v2p.loading import load_v2p

    if not cfg.data.path:
        raise ValueError("data.path is empty: give the benchmark's annotation file or folder")
    skipped: Counter = Counter()
    samples = read(
        cfg.data.kind,
        cfg.data.path,
        box_format=cfg.data.box_format,
        images=cfg.data.images,
        skipped=skipped,
    )
    samples = sample_across(samples, cfg.data.limit, cfg.data.seed)
    if not samples:
        raise ValueError(f"no samples in {cfg.data.path} (skipped rows: {dict(skipped)})")
    p = cfg.protocol
    resize = p.resize_to_pixels
    if resize == -1:
        resize = PRO_PIXELS if cfg.data.kind == "screenspot_pro" else 0
    model, tokenizer, image_processor = load_v2p(
        cfg.model,
        device=cfg.device,
        dtype=cfg.dtype,
        require_trained_head=not cfg.allow_untrained_head,
        head_seed=0,  # an untrained head: the same one in every process (and on resume)
    )
    readout = ReadoutOptions(
        threshold=p.threshold, topk=p.topk, region_score=p.region_score, fallback=p.fallback
    )

    def grounder(max_pixels: int) -> Grounder:
        return Grounder(
            model,
            tokenizer,
            image_processor,
            min_pixels=p.min_pixels,
            max_pixels=max_pixels,
            readout=readout,
        )

    bar = lambda desc: lambda it: run.progress(it, desc=desc)  # noqa: E731
    outcomes, maps = evaluate(
        grounder(p.max_pixels), samples, cfg.batch_size, bar("grounding"), resize
    )
    summary = summarize(outcomes)
    sweep = {p.max_pixels: summary}
    for max_pixels in cfg.max_pixels_sweep:
        if max_pixels not in sweep:
            found, _ = evaluate(
                grounder(max_pixels),
                samples,
                cfg.batch_size,
                bar(f"max_pixels={max_pixels}"),
                resize,
            )
            sweep[max_pixels] = summarize(found)
    hashes = file_hashes(cfg.data.path)
    predictions = run.dir / "predictions.jsonl"
    with predictions.open("w", encoding="utf-8") as out:
        for o in outcomes:
            out.write(json.dumps(o.record()) + "\n")
    summary_file = run.dir / "summary.json"
    summary_file.write_text(
        json.dumps(
            {
                "summary": summary,
                "sweep": {str(k): v for k, v in sweep.items()},
                "dataset_sha256": hashes,
                "skipped_rows": dict(skipped),
                "resize_to_pixels": resize,
            },
            indent=2,
        ),
        encoding="utf-8",
    )
    overlays = _overlays(outcomes, maps, run.dir / "overlays", cfg.overlays)
    calib_file, calib_text = _calibrate(outcomes, run.dir)
    protocol = (
        f"prompt: GUI-Actor/V2P grounding prompt (pinned); max_pixels {p.max_pixels}; "
        f"min_pixels {p.min_pixels}; boxes {cfg.data.box_format} -> normalised xyxy; readout "
        f"threshold {p.threshold}, top-{p.topk}, regions by {p.region_score}, "
        f"centroid fallback {p.fallback}; screenshots resized to {resize or 'native'} "
        f"pixels first; skipped rows {dict(skipped) or 'none'}; device "
        f"{model.device}, {model.dtype}\n\n"
        + "\n".join(f"- `{name}` sha256 `{digest}`" for name, digest in hashes.items())
    )
    run.add_section("Protocol and data", protocol)
    images = "\n".join(f"![{f.stem}]({f.relative_to(run.dir).as_posix()})" for f in overlays)
    run.add_section(
        "Accuracy", markdown(summary, sweep if len(sweep) > 1 else None) + "\n" + images
    )
    run.add_section("Confidence calibration", calib_text)
    metrics = {k: v for k, v in summary.items() if isinstance(v, (int, float))}
    metrics["skipped_rows"] = float(sum(skipped.values()))
    run.log(metrics)
    outputs = {"predictions": predictions, "summary": summary_file}
    if calib_file:
        outputs["calibration"] = calib_file
    outputs.update({f.stem: f for f in overlays})
    return RunResult(metrics=metrics, outputs=outputs)


def _calibrate(outcomes: list, folder: Path) -> tuple[Path | None, str]:
    """Platt calibration of the top point's confidence on these (held-out) screens."""
    from aworld_rl_v2p.calibration import FILE, fit, reliability

    confidences = [o.confidence for o in outcomes]
    hits = [o.hit_top1 for o in outcomes]
    if len(set(hits)) < 2:
        return None, "every sample hit (or every one missed): nothing to calibrate against\n"
    calib = fit(confidences, hits)
    path = calib.save(folder / FILE)
    rows = reliability(confidences, hits, calib)
    table = "\n".join(
        f"| {r['low']:.1f}-{r['high']:.1f} | {r['samples']} | {r['predicted']:.3f} | "
        f"{r['observed']:.3f} |"
        for r in rows
    )
    text = (
        f"p(hit) = sigmoid({calib.a:.3f} x confidence + {calib.b:.3f}), fitted on "
        f"{calib.samples} screens; copy `{FILE}` into the model directory for v2p.click\n\n"
        "| confidence | samples | predicted p(hit) | observed |\n|---|---|---|---|\n" + table + "\n"
    )
    return path, text


def _overlays(outcomes: list, maps: list, folder: Path, n: int) -> list[Path]:
    from PIL import Image

    from aworld_rl_v2p.overlay import draw_overlay

    chosen = [o for o in outcomes if o.hit_top1][:n] + [o for o in outcomes if not o.hit_top1][:n]
    files = []
    for o in chosen:
        attn = maps[outcomes.index(o)]
        tag = "hit" if o.hit_top1 else "miss"
        with Image.open(o.sample.image) as img:
            files.append(
                draw_overlay(
                    img,
                    attn,
                    folder / f"{tag}-{o.sample.id}.png",
                    box=o.sample.box,
                    points=o.points,
                )
            )
    return files
