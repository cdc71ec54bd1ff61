"""Box formats and Qwen2.5-VL's resize: every box becomes normalised xyxy, checked.

Grounding datasets mix four box formats: xyxy or xywh, in pixels or normalised to [0, 1].
A reader names its dataset's format, or asks ``detect_format`` to infer it from all of the
dataset's boxes at once (one box alone is often ambiguous). ``normalize_box`` converts and
checks: a box outside the image is an error naming the box and the image size.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

BoxFormat = Literal["xyxy", "xywh", "xyxy_norm", "xywh_norm"]
FORMATS = ("xyxy", "xywh", "xyxy_norm", "xywh_norm")
PATCH = 28  # pixels per visual token: ViT patch 14 x spatial merge 2
TOLERANCE_PX = 1.0  # annotation rounding allowed past the image border (then clipped)


def normalize_box(
    box: Sequence[float], fmt: BoxFormat, image_size: Sequence[float]
) -> tuple[float, float, float, float]:
    """``box`` in ``fmt`` -> normalised ``(x1, y1, x2, y2)``; ``image_size`` = (width, height)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown box format {fmt!r}: use one of {', '.join(FORMATS)}")
    values = [float(v) for v in box]
    if len(values) != 4:
        raise ValueError(f"a box has four numbers, got {len(values)}: {list(box)}")
    width, height = (float(v) for v in image_size)
    a, b, c, d = values
    if fmt.startswith("xywh"):
        c, d = a + c, b + d
    if fmt.endswith("_norm"):
        a, b, c, d = a * width, b * height, c * width, d * height
    tol = TOLERANCE_PX
    if not (-tol <= a < c <= width + tol and -tol <= b < d <= height + tol):
        raise ValueError(
            f"box {list(box)} ({fmt}) is not inside the {int(width)}x{int(height)} image "
            "(or has no area): check the box format (xyxy / xywh, pixels / normalised)"
        )
    x1, x2 = max(a, 0.0) / width, min(c, width) / width
    y1, y2 = max(b, 0.0) / height, min(d, height) / height
    return x1, y1, x2, y2


def detect_format(
    boxes: Iterable[Sequence[float]], image_sizes: Iterable[Sequence[int]]
) -> BoxFormat:
    """The one format under which every box is a valid box inside its image.

    Normalised when every value is within [0, 1]; then xyxy unless some box has x2 <= x1 or
    y2 <= y1 (it must be xywh), or some box read as xyxy is valid while xywh would leave
    the image. Raises when the boxes fit no format or stay ambiguous between xyxy and xywh.
    """
    pairs = [(list(map(float, b)), tuple(s)) for b, s in zip(boxes, image_sizes, strict=True)]
    if not pairs:
        raise ValueError("no boxes to detect a format from")
    normalised = all(0.0 <= v <= 1.0 for b, _ in pairs for v in b)
    candidates = ["xyxy_norm", "xywh_norm"] if normalised else ["xyxy", "xywh"]
    valid = [fmt for fmt in candidates if all(_fits(b, fmt, s) for b, s in pairs)]
    if len(valid) == 1:
        return valid[0]  # type: ignore[return-value]
    if not valid:
        raise ValueError(
            f"the boxes fit neither {candidates[0]} nor {candidates[1]}: pass box_format "
            "explicitly and check the annotations"
        )
    raise ValueError(
        f"the boxes are valid both as {candidates[0]} and as {candidates[1]}: pass box_format "
        "explicitly (the dataset card says which)"
    )


def _fits(box: list[float], fmt: str, size: Sequence[int]) -> bool:
    try:
        normalize_box(box, fmt, size)  # type: ignore[arg-type]
    except ValueError:
        return False
    return True


def resized_size(
    width: int, height: int, *, min_pixels: int, max_pixels: int, patch: int = PATCH
) -> tuple[int, int]:
    """Qwen2.5-VL's smart resize (multiples of ``patch``): the model's view as (width, height)."""
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import smart_resize

    h, w = smart_resize(height, width, factor=patch, min_pixels=min_pixels, max_pixels=max_pixels)
    return w, h


def to_resized_pixels(
    box: Sequence[float], resized: Sequence[int]
) -> tuple[float, float, float, float]:
    """A normalised xyxy box in pixels of the resized image of size ``(width, height)``.

    A box thinner than a pixel (a point annotation) is widened to one pixel, inside the image.
    """
    width, height = resized
    x1, y1, x2, y2 = (float(v) for v in box)
    x1, x2 = _at_least_one_pixel(x1 * width, x2 * width, width)
    y1, y2 = _at_least_one_pixel(y1 * height, y2 * height, height)
    return x1, y1, x2, y2


def _at_least_one_pixel(lo: float, hi: float, size: int) -> tuple[float, float]:
    lo, hi = max(0.0, lo), min(float(size), hi)
    if hi - lo >= 1.0:
        return lo, hi
    mid = min(max((lo + hi) / 2, 0.5), size - 0.5)
    return mid - 0.5, mid + 0.5


def point_in_box(point: Sequence[float], box: Sequence[float]) -> bool:
    """ScreenSpot's hit rule: ``x1 <= x <= x2`` and ``y1 <= y <= y2`` (same units)."""
    x, y = point
    x1, y1, x2, y2 = box
    return x1 <= x <= x2 and y1 <= y <= y2


def point_in_polygon(point: Sequence[float], polygon: Sequence[float]) -> bool:
    """Even-odd rule for a flat ``(x, y, x, y, ...)`` polygon (same units as the point);
    points on an edge count as inside."""
    x, y = point
    xs, ys = list(polygon[0::2]), list(polygon[1::2])
    inside = False
    j = len(xs) - 1
    for i in range(len(xs)):
        xi, yi, xj, yj = xs[i], ys[i], xs[j], ys[j]
        cross = (xj - xi) * (y - yi) - (x - xi) * (yj - yi)
        if min(xi, xj) <= x <= max(xi, xj) and min(yi, yj) <= y <= max(yi, yj) and cross == 0:
            return True
        if (yi > y) != (yj > y) and x < (xj - xi) * (y - yi) / (yj - yi) + xi:
            inside = not inside
        j = i
    return inside
