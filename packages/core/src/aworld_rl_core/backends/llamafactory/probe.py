"""``RecordingLoss``: a loss hook that writes down what it receives (tests and debugging).

The LLaMA-Factory backend runs the loss in a subprocess, so a test cannot look at the call
directly; this hook appends one JSON line per call to a file the test reads afterwards.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aworld_rl_core.segments import IGNORE_INDEX


def mean_token_cross_entropy(logits: Any, labels: Any, segments: Any = None) -> Any:
    """Cross-entropy averaged over the supervised positions (labels != -100)."""
    import torch.nn.functional as F

    return F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]).float(),
        labels.reshape(-1),
        ignore_index=IGNORE_INDEX,
    )


@dataclass
class RecordingLoss:
    """Compute ``inner(logits, labels, segments)`` and append a record of the call to ``path``.

    The first ``max_full`` calls record the labels and every segment mask as lists; later
    calls record only shapes and the loss value. ``inner`` defaults to
    :func:`mean_token_cross_entropy`; it must be picklable (a module-level function).
    """

    path: str
    inner: Any = None
    max_full: int = 2

    def __post_init__(self) -> None:
        self.calls = 0

    def __call__(self, logits: Any, labels: Any, segments: dict[str, Any]) -> Any:
        loss = (self.inner or mean_token_cross_entropy)(logits, labels, segments)
        record: dict[str, Any] = {
            "call": self.calls,
            "logits_shape": list(logits.shape),
            "labels_shape": list(labels.shape),
            "segments": sorted(segments),
            "loss": float(loss.detach()),
        }
        if self.calls < self.max_full:
            record["labels"] = labels.tolist()
            record["masks"] = {name: mask.int().tolist() for name, mask in segments.items()}
        with Path(self.path).open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(record) + "\n")
        self.calls += 1
        return loss


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """The records a :class:`RecordingLoss` wrote, in call order."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]
