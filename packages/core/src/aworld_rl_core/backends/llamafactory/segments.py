"""Segment masks for the loss hook: ``think`` (``<think>`` ... ``</think>``), ``call`` (the rest).

Pure torch; runs inside the LLaMA-Factory environment on the labels its collator builds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

IGNORE_INDEX = -100


def _starts_at(row: list[int], pattern: Sequence[int], i: int) -> bool:
    return row[i : i + len(pattern)] == list(pattern)


def think_mask(
    labels: Any, open_ids: Sequence[int], close_ids: Sequence[int], ignore_index: int = IGNORE_INDEX
) -> Any:
    """Bool mask ``[B, T]`` of supervised label positions inside ``<think>`` ... ``</think>``.

    Both tags are included. ``open_ids`` / ``close_ids`` are the tags' token ids (one id each
    for tokenizers with special think tokens, several otherwise). An unclosed block runs to
    the end of the row (a truncated sample); positions with ``ignore_index`` are never marked.
    """
    import torch

    if labels.dim() != 2:
        raise ValueError(f"labels must be [batch, length], got shape {tuple(labels.shape)}")
    if not open_ids or not close_ids:
        raise ValueError("open_ids and close_ids must each hold at least one token id")
    mask = torch.zeros(labels.shape, dtype=torch.bool, device=labels.device)
    for b, row in enumerate(labels.tolist()):
        i, inside = 0, False
        while i < len(row):
            if not inside and _starts_at(row, open_ids, i):
                inside, width = True, len(open_ids)
            elif inside and _starts_at(row, close_ids, i):
                mask[b, i : i + len(close_ids)] = True
                inside, i = False, i + len(close_ids)
                continue
            else:
                width = 1
            if inside:
                mask[b, i : i + width] = True
            i += width
    return mask & (labels != ignore_index)


def segment_masks(
    labels: Any, open_ids: Sequence[int], close_ids: Sequence[int], ignore_index: int = IGNORE_INDEX
) -> dict[str, Any]:
    """``{"think": ..., "call": ...}``: the two segments partition the supervised positions."""
    think = think_mask(labels, open_ids, close_ids, ignore_index)
    return {"think": think, "call": (labels != ignore_index) & ~think}
