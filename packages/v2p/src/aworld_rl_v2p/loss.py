"""V2P's losses on the action head's patch logits.

For one sample with N pointer tokens (rows) and M patches (columns):

- ``kl_loss``: KL(labels || softmax(logits)), summed over patches, averaged over pointer
  tokens (``F.kl_div(..., reduction="batchmean")``, GUI-Actor's attention loss);
- ``suppression_loss``: the softmax mass outside the box, averaged over pointer tokens (V2P's
  "valley": it pushes every out-of-box logit down in proportion to its attention);
- ``pointer_loss``: their sum (suppression weighs 1, as in the released code).

The model-level loss over a batch (LM loss + pointer loss) is ``compute_loss``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

import torch
import torch.nn.functional as F

from aworld_rl_v2p.boxes import PATCH, to_resized_pixels
from aworld_rl_v2p.labels import patch_labels
from aworld_rl_v2p.options import PointerLossOptions

IGNORE = -100


def suppression_loss(logits: torch.Tensor, in_box: torch.Tensor) -> torch.Tensor:
    """Mean over pointer tokens of the softmax mass on patches outside the box.

    ``logits``: (pointer tokens, patches); ``in_box``: (patches,) bool, or one row per token.
    """
    logits, in_box = _check(logits, in_box)
    probs = logits.float().softmax(dim=-1)
    return probs.masked_fill(in_box, 0.0).sum(dim=-1).mean()


def kl_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """KL(labels || softmax(logits)) per pointer token, averaged over pointer tokens.

    ``labels``: (pointer tokens, patches) or (patches,), each row a distribution.
    """
    logits = torch.atleast_2d(logits)
    target = labels.to(torch.float32).expand_as(logits)
    return F.kl_div(logits.float().log_softmax(dim=-1), target, reduction="batchmean")


def pointer_loss(
    logits: torch.Tensor,
    labels: torch.Tensor,
    in_box: torch.Tensor,
    *,
    suppression: bool = True,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """KL + suppression (or KL alone); also returns both parts (detached) for logging."""
    kl = kl_loss(logits, labels)
    outside = suppression_loss(logits, in_box)
    total = kl + outside if suppression else kl
    return total, {"kl": kl.detach(), "out_of_box_mass": outside.detach()}


def _check(logits: torch.Tensor, in_box: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    logits = torch.atleast_2d(logits)
    in_box = in_box.to(device=logits.device, dtype=torch.bool)
    if logits.shape[-1] != in_box.shape[-1]:
        raise ValueError(
            f"logits cover {logits.shape[-1]} patches but in_box has {in_box.shape[-1]}: "
            "build both from the same image grid"
        )
    return logits, in_box


def compute_loss(model: Any, batch: Mapping[str, Any], **options: Any) -> tuple[torch.Tensor, dict]:
    """The model-level loss: ``lm_weight x LM + pointer_weight x mean_samples(KL [+ sup])``.

    ``batch``: the processor batch (``input_ids``, ``attention_mask``, ``pixel_values``,
    ``image_grid_thw``, ``labels``) plus ``pointer_boxes``: per sample a (pointer tokens, 4)
    tensor of normalised xyxy boxes, one per ``<|pointer_pad|>`` in order. Labels are built
    here from the sample's image grid, so they always match the resize the processor applied.
    Samples without pointer tokens add no pointer loss.
    """
    opts = _options(options)
    encoded = model.encode(**batch)
    metrics: dict[str, float] = {}
    total = torch.zeros((), device=encoded.hidden.device)
    lm_weight = 1.0 if opts.lm_weight is None else opts.lm_weight  # v2p.train sets it by stage
    if lm_weight > 0:
        lm = _lm_loss(model, encoded.hidden, batch["labels"], batch["input_ids"])
        total = total + lm_weight * lm
        metrics["lm_loss"] = float(lm.detach())
    losses, kls, outside, hits = [], [], [], []
    boxes = batch["pointer_boxes"]
    for logits, grid, sample_boxes in zip(
        model.pointer_logits(encoded), encoded.grids, boxes, strict=True
    ):
        if logits is None:
            continue
        labels, regions = pointer_targets(sample_boxes, grid, opts, n=logits.shape[0])
        loss_i, parts = pointer_loss(logits, labels, regions, suppression=opts.suppression)
        losses.append(loss_i)
        kls.append(parts["kl"])
        outside.append(parts["out_of_box_mass"])
        argmax = logits.argmax(dim=-1)
        hits.append(regions.gather(1, argmax[:, None]).float().mean())
    if losses:
        pointer = torch.stack(losses).mean()
        metrics.update(
            pointer_loss=float(pointer.detach()),
            pointer_kl=float(torch.stack(kls).mean()),
            out_of_box_mass=float(torch.stack(outside).mean()),
            top1_patch_in_box=float(torch.stack(hits).mean()),
        )
    else:  # keep the head in the graph (DDP expects every parameter to get a gradient)
        pointer = sum(p.sum() for p in model.multi_patch_pointer_head.parameters()) * 0.0
    total = total + opts.pointer_weight * pointer
    return total, metrics


def pointer_targets(
    boxes: Any, grid: tuple[int, int], opts: PointerLossOptions, n: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """(labels, in-box masks), both (n, patches), for a sample's boxes on its grid."""
    rows, cols = grid
    size = (rows * PATCH, cols * PATCH)
    boxes = torch.as_tensor(boxes, dtype=torch.float64).reshape(-1, 4)
    if boxes.shape[0] != n:
        raise ValueError(
            f"a sample has {n} pointer token(s) but {boxes.shape[0]} box(es) in pointer_boxes"
        )
    labels, regions = [], []
    for box in boxes.tolist():
        pixels = to_resized_pixels(box, (cols * PATCH, rows * PATCH))
        label = patch_labels(
            pixels, size, style=opts.label_style, sigma_factor=opts.sigma_factor
        ).flatten()
        if opts.suppression_region == "label":
            region = label > 0
        else:
            region = patch_labels(pixels, size, style="all").flatten() > 0
        labels.append(label)
        regions.append(region)
    return torch.stack(labels), torch.stack(regions)


def _lm_loss(model: Any, hidden: torch.Tensor, labels: torch.Tensor, input_ids: torch.Tensor):
    labels = labels.masked_fill(input_ids == model.config.pointer_end_token_id, IGNORE)
    target = labels[:, 1:]
    keep = target != IGNORE
    if not keep.any():
        return hidden.sum() * 0.0
    logits = model.lm_head(hidden[:, :-1][keep])
    return F.cross_entropy(logits.float(), target[keep])


def _options(options: Mapping[str, Any]) -> PointerLossOptions:
    known = {f.name for f in fields(PointerLossOptions)}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ValueError(
            f"unknown v2p.pointer loss option(s) {unknown}: use {', '.join(sorted(known))}"
        )
    return PointerLossOptions(**options)
