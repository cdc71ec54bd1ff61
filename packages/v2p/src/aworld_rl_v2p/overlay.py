"""Heat-map overlays: the attention map over the screenshot, the box and the predicted points."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from aworld_rl_v2p.readout import Point


def draw_overlay(
    image: Any,
    attention: np.ndarray | None,
    path: Path,
    *,
    box: Sequence[float] | None = None,
    points: Sequence[Point] = (),
    alpha: float = 0.5,
) -> Path:
    """Write a PNG: the screenshot, the attention (red, scaled to its max), the box (green)
    and the points (numbered circles, blue for the first)."""
    from PIL import Image, ImageDraw

    base = image.convert("RGB")
    width, height = base.size
    if attention is not None and attention.max() > 0:
        heat = (255 * attention / attention.max()).astype(np.uint8)
        heat_img = Image.fromarray(heat, mode="L").resize((width, height), Image.NEAREST)
        red = Image.new("RGB", (width, height), (255, 0, 0))
        mask = heat_img.point(lambda v: int(v * alpha))
        base = Image.composite(red, base, mask)
    draw = ImageDraw.Draw(base)
    if box is not None:
        x1, y1, x2, y2 = box
        draw.rectangle(
            (x1 * width, y1 * height, x2 * width, y2 * height), outline=(0, 200, 0), width=3
        )
    r = max(4, min(width, height) // 80)
    for rank, p in enumerate(points):
        x, y = p.x * width, p.y * height
        color = (0, 90, 255) if rank == 0 else (255, 200, 0)
        draw.ellipse((x - r, y - r, x + r, y + r), outline=color, width=3)
        draw.text((x + r + 2, y - r), f"{rank + 1} ({p.confidence:.2f})", fill=color)
    path.parent.mkdir(parents=True, exist_ok=True)
    base.save(path)
    return path
