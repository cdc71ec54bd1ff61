"""Reading click points off the action head's attention map.

Patches above ``threshold x max`` are grouped into 4-connected regions; regions are ranked by
their maximum attention (V2P) or their mean (GUI-Actor); each region gives the
attention-weighted centroid of its patch centres, normalised to [0, 1] (with ``fallback``,
the region's peak patch instead when the centroid lands on a patch outside the region: a
region bent round or between two elements), and a confidence of how peaked the map is there:

    confidence = (m - u) / (1 - u)

with ``m`` the region's share of the attention mass and ``u = patches / M`` the share a
uniform map would give it. A flat map (every patch one region, ``m = u``) has confidence 0, a
map with all its mass on the region's few patches ~1; a region's share alone would give a flat
map confidence 1. ``calibrate`` maps it to a probability of a hit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

RegionScore = Literal["max", "mean"]


@dataclass(frozen=True)
class Point:
    """A predicted click: normalised ``(x, y)``, the region's ``confidence`` and rank ``score``."""

    x: float
    y: float
    confidence: float
    score: float
    patches: int

    def to_pixels(self, width: int, height: int) -> tuple[int, int]:
        """The point in pixels of an image (or screen) of this size."""
        return min(int(self.x * width), width - 1), min(int(self.y * height), height - 1)


def predict_points(
    attn: Any,
    *,
    threshold: float = 0.3,
    topk: int = 3,
    region_score: RegionScore = "max",
    fallback: bool = False,
) -> list[Point]:
    """Up to ``topk`` points from an attention map of shape (rows, cols), best first."""
    from scipy import ndimage

    grid = _as_grid(attn)
    if not 0 <= threshold < 1:
        raise ValueError(f"threshold must be in [0, 1), got {threshold}")
    if topk < 1:
        raise ValueError(f"topk must be at least 1, got {topk}")
    if region_score not in ("max", "mean"):
        raise ValueError(f"region_score must be 'max' or 'mean', got {region_score!r}")
    total = float(grid.sum())
    peak = float(grid.max())
    if not total > 0:
        raise ValueError("the attention map has no positive mass: pass softmax probabilities")
    mask = grid > threshold * peak
    regions, count = ndimage.label(mask)  # default structure: 4-connected
    kept = np.flatnonzero(mask)  # raster order, so labels are numbered as regions are met
    region = regions.ravel()[kept] - 1
    weight = grid.ravel()[kept]
    mass = np.bincount(region, weight, count)
    sizes = np.bincount(region, minlength=count)
    if region_score == "max":
        scores = np.zeros(count)
        np.maximum.at(scores, region, weight)
    else:
        scores = mass / sizes
    rows, cols = grid.shape
    xs = np.bincount(region, weight * (kept % cols + 0.5), count) / mass / cols
    ys = np.bincount(region, weight * (kept // cols + 0.5), count) / mass / rows
    order = np.argsort(-scores, kind="stable")[:topk]  # ties: the region met first in raster order
    if fallback:
        for i in order:
            r, c = min(int(ys[i] * rows), rows - 1), min(int(xs[i] * cols), cols - 1)
            if regions[r, c] != i + 1:  # the centroid fell between the region's patches
                members = kept[region == i]
                top = members[np.argmax(grid.ravel()[members])]
                xs[i], ys[i] = (top % cols + 0.5) / cols, (top // cols + 0.5) / rows
    uniform = sizes / grid.size
    share = mass / total
    peaked = np.where(uniform < 1, (share - uniform) / np.maximum(1 - uniform, 1e-12), 0.0)
    return [
        Point(
            x=float(xs[i]),
            y=float(ys[i]),
            confidence=float(np.clip(peaked[i], 0.0, 1.0)),
            score=float(scores[i]),
            patches=int(sizes[i]),
        )
        for i in order
    ]


def _as_grid(attn: Any) -> np.ndarray:
    if hasattr(attn, "detach"):
        attn = attn.detach().float().cpu().numpy()
    grid = np.asarray(attn, dtype=np.float64)
    if grid.ndim != 2 or grid.size == 0:
        raise ValueError(f"the attention map must be 2-D (rows, cols), got shape {grid.shape}")
    if not np.isfinite(grid).all() or (grid < 0).any():
        raise ValueError("the attention map must hold finite, non-negative probabilities")
    return grid
