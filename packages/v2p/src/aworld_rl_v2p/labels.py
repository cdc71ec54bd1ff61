"""Patch labels: where on the patch grid the action head should attend for a ground-truth box.

``patch_labels`` returns a (rows, cols) distribution over the 28x28-pixel patches of the
resized image (one visual token each after Qwen2.5-VL's 2x2 merge):

- ``all``: uniform over the patches the box overlaps (GUI-Actor's label);
- ``center``: all mass on the patch holding the box centre;
- ``gauss``: V2P's centre peak. Each patch gets the mass of the 2-D Gaussian centred on the box,
  with sigma = box size / ``sigma_factor`` per axis, that falls inside patch ∩ box; zero outside
  the box; then normalised. The Gaussian is separable, so the mass is a product of 1-D CDF
  differences on the grid edges: no per-patch loop.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from aworld_rl_v2p.options import LabelStyle

STYLES = ("all", "center", "gauss")
PAPER_SIGMA_FACTOR = 1.0  # what the released training scripts pass (--sigma_factor 1)
TWO_SIGMA_FACTOR = 4.1325  # the code's other default: box edges near 2 sigma (96% in 1-D)


def patch_labels(
    box: Sequence[float],
    image_size: Sequence[int],
    *,
    patch: int = 28,
    style: LabelStyle = "gauss",
    sigma_factor: float = PAPER_SIGMA_FACTOR,
) -> torch.Tensor:
    """The label distribution over patches, shape ``(height // patch, width // patch)``, sum 1.

    ``box`` is ``(x1, y1, x2, y2)`` in pixels of the resized image, ``image_size`` its
    ``(height, width)`` (multiples of ``patch``).
    """
    height, width = (int(v) for v in image_size)
    x1, y1, x2, y2 = check_pixel_box(box, (height, width))
    if patch <= 0 or height <= 0 or width <= 0 or height % patch or width % patch:
        raise ValueError(
            f"image_size={tuple(image_size)} must be positive multiples of patch={patch}: "
            "pass the smart-resized size (aworld_rl_v2p.boxes.resized_size)"
        )
    if style not in STYLES:
        raise ValueError(f"unknown label style {style!r}: use one of {', '.join(STYLES)}")
    rows, cols = height // patch, width // patch
    if style == "center":
        out = torch.zeros(rows, cols, dtype=torch.float64)
        out[
            min(int((y1 + y2) / 2 // patch), rows - 1), min(int((x1 + x2) / 2 // patch), cols - 1)
        ] = 1
        return out.float()
    if style == "gauss" and not sigma_factor > 0:
        raise ValueError(f"sigma_factor must be positive, got {sigma_factor}")
    along_x = _axis_mass(x1, x2, cols, patch, style, sigma_factor)
    along_y = _axis_mass(y1, y2, rows, patch, style, sigma_factor)
    out = torch.outer(along_y, along_x)
    return (out / out.sum()).float()


def _axis_mass(lo: float, hi: float, cells: int, patch: int, style: str, f: float) -> torch.Tensor:
    """Per-cell weight along one axis: 1 / the Gaussian mass inside cell ∩ [lo, hi], 0 outside."""
    edges = torch.arange(cells + 1, dtype=torch.float64) * patch
    left, right = edges[:-1], edges[1:]
    overlaps = (right > lo) & (left < hi)
    if style == "all":
        return overlaps.double()
    mean, sigma = (lo + hi) / 2, (hi - lo) / f
    upper = torch.special.ndtr((right.clamp(max=hi) - mean) / sigma)
    lower = torch.special.ndtr((left.clamp(min=lo) - mean) / sigma)
    return torch.where(overlaps, upper - lower, torch.zeros_like(upper))


def box_mask(box: Sequence[float], image_size: Sequence[int], *, patch: int = 28) -> torch.Tensor:
    """Bool (rows, cols): the patches the box overlaps (the region suppression leaves alone)."""
    return patch_labels(box, image_size, patch=patch, style="all") > 0


def check_pixel_box(box: Sequence[float], image_size: Sequence[int]) -> tuple[float, ...]:
    """``box`` as four floats with ``0 <= x1 < x2 <= width`` and ``0 <= y1 < y2 <= height``."""
    values = tuple(float(v) for v in box)
    if len(values) != 4:
        raise ValueError(f"a box is (x1, y1, x2, y2), got {len(values)} values: {tuple(box)}")
    height, width = image_size
    x1, y1, x2, y2 = values
    if not (0 <= x1 < x2 <= width and 0 <= y1 < y2 <= height):
        raise ValueError(
            f"box {values} is not inside a {width}x{height} image with x1 < x2 and y1 < y2: "
            "give pixels of the resized image (aworld_rl_v2p.boxes.to_resized_pixels)"
        )
    return values
