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

import torch
import torch.nn.functional as F


def suppression_loss(logits: torch.Tensor, in_box: torch.Tensor) -> torch.Tensor:
    """Mean over pointer tokens of the softmax mass on patches outside the box.

    ``logits``: (pointer tokens, patches); ``in_box``: (patches,) bool.
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
    in_box = in_box.reshape(-1).to(torch.bool)
    if logits.shape[-1] != in_box.numel():
        raise ValueError(
            f"logits cover {logits.shape[-1]} patches but in_box has {in_box.numel()}: "
            "build both from the same image grid"
        )
    return logits, in_box
