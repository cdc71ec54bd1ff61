"""SRML (v1) / SSB (v3): cross-entropy mixed as ``alpha * L_think + (1 - alpha) * L_result``.

The reasoning mask comes from core's segment marker (``segments["think"]``, found in the
supervised text by character offsets in every SFT backend).

Plain SFT weights each part by its token share, so the ~10x longer reasoning drowns the call.
SRML averages the token losses of each part separately, then mixes the two means with ``alpha``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Literal

import torch
import torch.nn.functional as F

from aworld_rl_core.segments import IGNORE_INDEX

Reduction = Literal["per_sample", "pooled"]
DEFAULT_ALPHA = 0.7
DEFAULT_ALPHA_LR = 1e-3
"""A learnable alpha's own learning rate (not in the paper; see :class:`SRMLLoss`)."""


def token_cross_entropy(
    logits: torch.Tensor, labels: torch.Tensor, ignore_index: int = IGNORE_INDEX
) -> torch.Tensor:
    """Per-token cross-entropy ``[B, T]`` (0 where the label is ``ignore_index``)."""
    vocab = logits.shape[-1]
    losses = F.cross_entropy(
        logits.reshape(-1, vocab).float(),
        labels.reshape(-1),
        ignore_index=ignore_index,
        reduction="none",
    )
    return losses.view(labels.shape)


def _mix(
    l_think: torch.Tensor,
    l_result: torch.Tensor,
    n_think: torch.Tensor,
    n_result: torch.Tensor,
    alpha: float | torch.Tensor,
) -> torch.Tensor:
    """alpha-mix the part means; a missing part leaves the other alone."""
    mixed = alpha * l_think + (1 - alpha) * l_result
    mixed = torch.where(n_think == 0, l_result, mixed)
    return torch.where(n_result == 0, l_think, mixed)


def srml_loss(
    logits: torch.Tensor,
    labels: torch.Tensor,
    think_mask: torch.Tensor,
    alpha: float | torch.Tensor = DEFAULT_ALPHA,
    *,
    reduction: Reduction = "per_sample",
    ignore_index: int = IGNORE_INDEX,
) -> torch.Tensor:
    """The SRML loss; ``logits[b, t]`` predicts ``labels[b, t]`` (the caller shifts).

    ``think_mask[b, t]`` is true where the label belongs to the reasoning segment (``<think>``
    through ``</think>``); ``ignore_index`` positions count for neither part.

    ``per_sample``: per sample, the mean CE over reasoning tokens (L_think) and over the other
    valid tokens (L_result) are mixed as ``alpha * L_think + (1 - alpha) * L_result`` (one part
    alone when the other is empty); the result is the mean over samples with any valid label.
    ``pooled``: the two means are taken over all positions of the batch, then mixed.
    """
    if logits.dim() != 3 or labels.dim() != 2 or logits.shape[:2] != labels.shape:
        raise ValueError(
            f"srml_loss expects logits [B, T, V] and labels [B, T]; got {tuple(logits.shape)} "
            f"and {tuple(labels.shape)} (shift the labels before calling)"
        )
    if think_mask.shape != labels.shape:
        raise ValueError(
            f"think_mask shape {tuple(think_mask.shape)} must equal labels shape "
            f"{tuple(labels.shape)}"
        )
    if reduction not in ("per_sample", "pooled"):
        raise ValueError(f"reduction must be 'per_sample' or 'pooled', got {reduction!r}")
    if isinstance(alpha, (int, float)) and not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must lie in [0, 1], got {alpha}")

    tok = token_cross_entropy(logits, labels, ignore_index)
    valid = labels != ignore_index
    think = valid & think_mask.bool()
    result = valid & ~think_mask.bool()
    think_f, result_f = think.to(tok.dtype), result.to(tok.dtype)

    if reduction == "pooled":
        n_t, n_r = think_f.sum(), result_f.sum()
        l_t = (tok * think_f).sum() / n_t.clamp(min=1)
        l_r = (tok * result_f).sum() / n_r.clamp(min=1)
        return _mix(l_t, l_r, n_t, n_r, alpha)

    n_t, n_r = think_f.sum(dim=1), result_f.sum(dim=1)
    l_t = (tok * think_f).sum(dim=1) / n_t.clamp(min=1)
    l_r = (tok * result_f).sum(dim=1) / n_r.clamp(min=1)
    per_sample = _mix(l_t, l_r, n_t, n_r, alpha)
    has_any = ((n_t + n_r) > 0).to(tok.dtype)
    return (per_sample * has_any).sum() / has_any.sum().clamp(min=1)


class LearnableAlpha(torch.nn.Module):
    """A trainable alpha kept in [0, 1] (v3 SSB), initialised at ``init`` (0.7).

    ``sigmoid``: alpha = sigmoid(w), w initialised at logit(init) (smooth, never exactly 0 or
    1). ``clamp``: alpha = clamp(w, 0, 1), w initialised at ``init`` (gradient stops at the
    bounds). Trained on the same loss, dL/dalpha = L_think - L_result: alpha drifts towards the
    currently easier part.
    """

    def __init__(
        self, init: float = DEFAULT_ALPHA, parametrization: Literal["sigmoid", "clamp"] = "sigmoid"
    ) -> None:
        super().__init__()
        if parametrization not in ("sigmoid", "clamp"):
            raise ValueError(
                f"parametrization must be 'sigmoid' or 'clamp', got {parametrization!r}"
            )
        if parametrization == "sigmoid" and not 0.0 < init < 1.0:
            raise ValueError(f"a sigmoid alpha needs 0 < init < 1, got {init}")
        if parametrization == "clamp" and not 0.0 <= init <= 1.0:
            raise ValueError(f"alpha init must lie in [0, 1], got {init}")
        self.parametrization = parametrization
        raw = math.log(init / (1 - init)) if parametrization == "sigmoid" else init
        self.raw = torch.nn.Parameter(torch.tensor(float(raw)))

    def forward(self) -> torch.Tensor:
        if self.parametrization == "sigmoid":
            return torch.sigmoid(self.raw)
        return self.raw.clamp(0.0, 1.0)


class SRMLLoss(torch.nn.Module):
    """SRML in core's loss-hook shape: ``loss(logits, labels, segments)``, with segments["think"].

    With ``learnable=True`` the module owns a :class:`LearnableAlpha`; core's SFT backends
    register it on the model (so DDP / DeepSpeed keep it the same on every rank) and train it in
    its own optimizer group, without weight decay, at ``alpha_lr`` (``learning_rate``; None: the
    model's). The paper states no alpha learning rate: at the model's 4e-5 AdamW moves alpha by
    about 1e-5 a step, so it stays where it starts. :meth:`log_metrics` gives the reasoning
    and call token counts seen since the last log (``think_tokens``, ``call_tokens``).
    """

    def __init__(
        self,
        alpha: float = DEFAULT_ALPHA,
        *,
        learnable: bool = False,
        parametrization: Literal["sigmoid", "clamp"] = "sigmoid",
        reduction: Reduction = "per_sample",
        ignore_index: int = IGNORE_INDEX,
        alpha_lr: float | None = DEFAULT_ALPHA_LR,
    ) -> None:
        super().__init__()
        if reduction not in ("per_sample", "pooled"):
            raise ValueError(f"reduction must be 'per_sample' or 'pooled', got {reduction!r}")
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"alpha must lie in [0, 1], got {alpha}")
        self.alpha_module = LearnableAlpha(alpha, parametrization) if learnable else None
        self.fixed_alpha = float(alpha)
        self.reduction: Reduction = reduction
        self.ignore_index = ignore_index
        if alpha_lr is not None and not alpha_lr > 0:
            raise ValueError(f"alpha_lr must be > 0 (or null: the model's), got {alpha_lr}")
        self.learning_rate = alpha_lr if learnable else None
        self._counts = [0, 0]  # think, call tokens since the last log_metrics()

    def log_metrics(self) -> dict[str, float]:
        """Reasoning and call (other supervised) token counts since the last call."""
        think, call = self._counts
        self._counts = [0, 0]
        return {"think_tokens": float(think), "call_tokens": float(call)}

    def alpha(self) -> float | torch.Tensor:
        """The current alpha (a tensor with a gradient when learnable)."""
        return self.alpha_module() if self.alpha_module is not None else self.fixed_alpha

    def alpha_value(self) -> float:
        """The current alpha as a plain float (for logging)."""
        alpha = self.alpha()
        return float(alpha.detach()) if isinstance(alpha, torch.Tensor) else alpha

    def forward(
        self, logits: torch.Tensor, labels: torch.Tensor, segments: Mapping[str, torch.Tensor]
    ) -> torch.Tensor:
        if "think" not in segments:
            raise KeyError(
                "SRML needs segments['think'] (the reasoning mask); the backend gave "
                f"{sorted(segments)}"
            )
        if torch.is_grad_enabled():  # training steps, not evaluation
            valid = labels != self.ignore_index
            think = int((segments["think"].bool() & valid).sum())
            self._counts[0] += think
            self._counts[1] += int(valid.sum()) - think
        return srml_loss(
            logits,
            labels,
            segments["think"],
            self.alpha(),
            reduction=self.reduction,
            ignore_index=self.ignore_index,
        )
