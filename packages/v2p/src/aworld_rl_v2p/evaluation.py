"""ScreenSpot-style scoring: point-in-box hits, overlap hits, macro and micro averages.

- ``hit``: the point lies in the box, edges included (ScreenSpot's rule), top-1 and top-k;
- ``overlap``: a square of +-14 pixels of the original screenshot around the point overlaps
  the box (GUI-Actor's corrected rule, +-14/width and +-14/height in normalised units; V2P's
  released script still used +-14 normalised units, which every point passes);
- averages: micro (over samples) and macro (mean of the per-group accuracies) side by side,
  per group x UI type, per box size, and accuracy against the confidence threshold.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import fmean
from typing import Any

from aworld_rl_v2p.boxes import point_in_box, point_in_polygon
from aworld_rl_v2p.data import GroundingSample
from aworld_rl_v2p.readout import Point

OVERLAP_PIXELS = 14
SIZE_BINS = (
    (0.0, 0.001, "<0.1%"),
    (0.001, 0.01, "0.1-1%"),
    (0.01, 0.05, "1-5%"),
    (0.05, 1.1, ">5%"),
)
CONFIDENCE_STEPS = (0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9)


@dataclass(frozen=True)
class Outcome:
    """One scored sample."""

    sample: GroundingSample
    points: tuple[Point, ...]
    hit_top1: bool
    hit_topk: bool
    overlap_top1: bool
    overlap_topk: bool

    @property
    def confidence(self) -> float:
        return self.points[0].confidence if self.points else 0.0

    def record(self) -> dict[str, Any]:
        s = self.sample
        return {
            "id": s.id,
            "image": s.image.name,
            "instruction": s.instruction,
            "group": s.group,
            "ui_type": s.ui_type,
            "box": list(s.box),
            "points": [[p.x, p.y, p.confidence] for p in self.points],
            "hit_top1": self.hit_top1,
            "hit_topk": self.hit_topk,
            "overlap_top1": self.overlap_top1,
            "overlap_topk": self.overlap_topk,
        }


def judge(sample: GroundingSample, points: Sequence[Point]) -> Outcome:
    """Score ranked points against the sample's box."""
    width, height = sample.image_size
    if sample.polygon:  # OSWorld-G's polygon targets
        hits = [point_in_polygon((p.x, p.y), sample.polygon) for p in points]
    else:
        hits = [point_in_box((p.x, p.y), sample.box) for p in points]
    overlaps = [_overlaps(p, sample.box, width, height) for p in points]
    return Outcome(
        sample,
        tuple(points),
        hit_top1=bool(hits[:1] and hits[0]),
        hit_topk=any(hits),
        overlap_top1=bool(overlaps[:1] and overlaps[0]),
        overlap_topk=any(overlaps),
    )


def _overlaps(p: Point, box: Sequence[float], width: int, height: int) -> bool:
    dx, dy = OVERLAP_PIXELS / width, OVERLAP_PIXELS / height
    return not (p.x + dx < box[0] or p.x - dx > box[2] or p.y + dy < box[1] or p.y - dy > box[3])


METRICS = ("hit_top1", "hit_topk", "overlap_top1", "overlap_topk")


def summarize(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """Accuracy overall (micro and macro over groups), per group x UI type, size, confidence."""
    if not outcomes:
        raise ValueError("no outcomes to summarize: the dataset was empty after filtering")
    groups = _by(outcomes, lambda o: o.sample.group)
    summary: dict[str, Any] = {"samples": len(outcomes)}
    for metric in METRICS:
        summary[f"{metric}_micro"] = _mean(outcomes, metric)
        summary[f"{metric}_macro"] = fmean(_mean(v, metric) for v in groups.values())
    summary["by_group"] = {
        g: {"samples": len(v), **{m: _mean(v, m) for m in METRICS}} for g, v in groups.items()
    }
    summary["by_group_type"] = {
        f"{g}/{t}": {"samples": len(v), "hit_top1": _mean(v, "hit_top1")}
        for (g, t), v in _by(outcomes, lambda o: (o.sample.group, o.sample.ui_type)).items()
    }
    summary["by_type"] = {
        t: {"samples": len(v), "hit_top1": _mean(v, "hit_top1")}
        for t, v in _by(outcomes, lambda o: o.sample.ui_type).items()
    }
    summary["by_size"] = {
        label: {"samples": len(v), "hit_top1": _mean(v, "hit_top1")}
        for label, v in _by(outcomes, _size_bin).items()
    }
    summary["by_confidence"] = [
        {
            "threshold": tau,
            "coverage": len(kept) / len(outcomes),
            "hit_top1": _mean(kept, "hit_top1") if kept else None,
        }
        for tau in CONFIDENCE_STEPS
        for kept in [[o for o in outcomes if o.confidence >= tau]]
    ]
    return summary


def _size_bin(outcome: Outcome) -> str:
    x1, y1, x2, y2 = outcome.sample.box
    area = (x2 - x1) * (y2 - y1)
    return next(label for lo, hi, label in SIZE_BINS if lo <= area < hi)


def _by(outcomes: Iterable[Outcome], key: Any) -> dict[Any, list[Outcome]]:
    groups: dict[Any, list[Outcome]] = defaultdict(list)
    for o in outcomes:
        groups[key(o)].append(o)
    return dict(sorted(groups.items()))


def _mean(outcomes: Sequence[Outcome], metric: str) -> float:
    return sum(bool(getattr(o, metric)) for o in outcomes) / len(outcomes)


def markdown(summary: dict[str, Any], sweep: dict[int, dict[str, Any]] | None = None) -> str:
    """The report's tables: averages, per group x type, per size, confidence, max_pixels."""
    pct = lambda v: "-" if v is None else f"{100 * v:.1f}"  # noqa: E731
    lines = [
        "| metric | micro | macro (over groups) |",
        "|---|---|---|",
        *(
            f"| {m} | {pct(summary[m + '_micro'])} | {pct(summary[m + '_macro'])} |"
            for m in METRICS
        ),
        "",
        "| group / UI type | samples | top-1 |",
        "|---|---|---|",
        *(
            f"| {k} | {v['samples']} | {pct(v['hit_top1'])} |"
            for k, v in summary["by_group_type"].items()
        ),
        "",
        "| box area (share of screenshot) | samples | top-1 |",
        "|---|---|---|",
        *(
            f"| {k} | {v['samples']} | {pct(v['hit_top1'])} |"
            for k, v in summary["by_size"].items()
        ),
        "",
        "| abstain below confidence | coverage | top-1 of the kept |",
        "|---|---|---|",
        *(
            f"| {row['threshold']} | {pct(row['coverage'])} | {pct(row['hit_top1'])} |"
            for row in summary["by_confidence"]
        ),
    ]
    if sweep:
        lines += ["", "| max_pixels | top-1 (micro) | top-1 (macro) |", "|---|---|---|"]
        lines += [
            f"| {mp} | {pct(s['hit_top1_micro'])} | {pct(s['hit_top1_macro'])} |"
            for mp, s in sorted(sweep.items())
        ]
    return "\n".join(lines) + "\n"
