"""Calibrating the readout's confidence into the probability that the point hits its box.

``fit`` is Platt scaling, ``p = sigmoid(a * confidence + b)``, fitted by Newton's method on
(confidence, hit) pairs of held-out screens (``v2p.eval`` fits it on every run and writes
``calibration.json``); ``Calibration.apply`` maps a confidence; a model directory may hold a
``calibration.json`` that inference then applies. ``reliability`` bins the pairs for the
report (predicted vs observed hit rate).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

FILE = "calibration.json"


@dataclass(frozen=True)
class Calibration:
    """``p(hit) = sigmoid(a * confidence + b)``, fitted on ``samples`` held-out screens."""

    a: float
    b: float
    samples: int = 0

    def apply(self, confidence: float) -> float:
        z = self.a * confidence + self.b
        return 1 / (1 + math.exp(-z)) if z >= 0 else math.exp(z) / (1 + math.exp(z))

    def save(self, path: Path) -> Path:
        path.write_text(json.dumps(asdict(self), indent=2), encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: str | Path) -> Calibration:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        try:
            return cls(a=float(data["a"]), b=float(data["b"]), samples=int(data.get("samples", 0)))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"'{path}' is not a calibration file (a, b): {exc}") from None


def fit(confidences: Sequence[float], hits: Sequence[bool], *, l2: float = 1e-3) -> Calibration:
    """Platt scaling by Newton's method (a small L2 keeps separable data finite)."""
    import numpy as np

    x = np.asarray(confidences, dtype=np.float64)
    y = np.asarray(hits, dtype=np.float64)
    if x.shape != y.shape or x.size < 2:
        raise ValueError(f"need matching confidences and hits, at least 2: {x.size}, {y.size}")
    features = np.stack([x, np.ones_like(x)], axis=1)
    w = np.zeros(2)
    for _ in range(100):
        p = 1 / (1 + np.exp(-(features @ w)))
        grad = features.T @ (p - y) + l2 * w
        hess = features.T @ (features * (p * (1 - p))[:, None]) + l2 * np.eye(2)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    return Calibration(a=float(w[0]), b=float(w[1]), samples=int(x.size))


def reliability(
    confidences: Sequence[float], hits: Sequence[bool], calibration: Calibration, bins: int = 5
) -> list[dict[str, float]]:
    """Per confidence bin: samples, mean predicted p(hit), observed hit rate."""
    rows = []
    for k in range(bins):
        lo, hi = k / bins, (k + 1) / bins
        idx = [i for i, c in enumerate(confidences) if lo <= c < hi or (k == bins - 1 and c == 1)]
        if idx:
            rows.append(
                {
                    "low": lo,
                    "high": hi,
                    "samples": len(idx),
                    "predicted": sum(calibration.apply(confidences[i]) for i in idx) / len(idx),
                    "observed": sum(bool(hits[i]) for i in idx) / len(idx),
                }
            )
    return rows


def find(model_dir: str | Path) -> Calibration | None:
    """The calibration saved beside a model, if any."""
    path = Path(model_dir) / FILE
    return Calibration.load(path) if path.is_file() else None
