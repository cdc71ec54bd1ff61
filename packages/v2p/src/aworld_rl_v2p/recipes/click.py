"""Recipe ``v2p.click``: ground one instruction on the screen and click it (or draw it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from aworld_rl_core.config import option
from aworld_rl_core.runs import Run, RunResult


@dataclass(frozen=True, kw_only=True)
class ClickConfig:
    """Click what an instruction names, on the live screen or a screenshot file."""

    model: str = option("tiny:qwen2_5_vl", help="saved model directory, hub id or tiny:qwen2_5_vl")
    instruction: str = option("", help="what to click, e.g. 'click the Save button'")
    screenshot: str | None = option(None, help="a screenshot file instead of the screen")
    dry_run: bool = option(False, help="draw the point on the screenshot instead of clicking")
    min_confidence: float = option(
        0.2,
        help="abstain when the top point's confidence is lower (0 for a flat map; p(hit) "
        "where the model directory holds calibration.json)",
        ge=0,
    )
    calibration: str | None = option(
        None, help="calibration.json (v2p.eval writes one); default: the model directory's"
    )
    max_pixels: int = option(5_720_064, help="smart-resize pixel cap", gt=0)
    min_pixels: int = option(3136, help="smart-resize pixel floor", gt=0)
    device: str = option("auto", help="auto (CUDA where present, else cpu), cpu, cuda or cuda:N")
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = option(
        "auto", help="auto: bfloat16 on CUDA, float32 on the CPU"
    )
    allow_untrained_head: bool = option(
        False, help="run a model whose action head is fresh (untrained): its points are noise"
    )


def run(cfg: ClickConfig, run: Run) -> RunResult:
    from aworld_rl_v2p.click import click_instruction
    from aworld_rl_v2p.inference import Grounder
    from aworld_rl_v2p.loading import load_v2p

    if not cfg.instruction.strip():
        raise ValueError("instruction is empty: say what to click (instruction='...')")
    from aworld_rl_v2p import calibration

    screenshot = None
    if cfg.screenshot and not cfg.dry_run:
        raise ValueError(
            f"screenshot={cfg.screenshot} with dry_run=false: a screenshot file never drives "
            "the live screen; set dry_run=true, or leave screenshot empty to click on the screen"
        )
    if cfg.screenshot:
        from PIL import Image

        screenshot = Image.open(cfg.screenshot).convert("RGB")
    model, tokenizer, image_processor = load_v2p(
        cfg.model,
        device=cfg.device,
        dtype=cfg.dtype,
        require_trained_head=not cfg.allow_untrained_head,
        head_seed=0,  # an untrained head: the same one in every process (and on resume)
    )
    calib = (
        calibration.Calibration.load(cfg.calibration)
        if cfg.calibration
        else calibration.find(cfg.model)
    )
    grounder = Grounder(
        model,
        tokenizer,
        image_processor,
        min_pixels=cfg.min_pixels,
        max_pixels=cfg.max_pixels,
        calibration=calib,
    )
    overlay = run.dir / "click.png"
    result = click_instruction(
        grounder,
        cfg.instruction,
        screenshot=screenshot,
        dry_run=cfg.dry_run,
        min_confidence=cfg.min_confidence,
        overlay=overlay,
    )
    point = result.point
    metrics = {
        "clicked": float(result.clicked),
        "x": point.x if point else -1.0,
        "y": point.y if point else -1.0,
        "confidence": point.confidence if point else 0.0,
    }
    if result.pixels:
        metrics["pixel_x"], metrics["pixel_y"] = (float(v) for v in result.pixels)
    run.add_section(
        "Click", f"{cfg.instruction!r}: {result.reason} at {result.pixels}\n\n![click](click.png)"
    )
    run.log(metrics)
    return RunResult(metrics=metrics, outputs={"overlay": overlay})
