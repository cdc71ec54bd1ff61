"""TEST DOUBLE for aworld-rl-funreason's loss: a plugin registering a token loss under the name
``funreason.srml`` (cross-entropy that counts its calls), to test resolution through the registry
without importing that package."""

from __future__ import annotations

from aworld_rl_core import hookimpl

CALLS: list[dict] = []


class CountingCrossEntropy:
    def __init__(self, alpha: float = 0.7) -> None:
        self.alpha = alpha

    def __call__(self, logits, labels, segments):
        import torch

        CALLS.append({"alpha": self.alpha, "think_tokens": int(segments["think"].sum())})
        return torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100
        )


class SrmlDouble:
    @hookimpl
    def register_losses(self, register):
        register(
            "funreason.srml",
            "srml_double:CountingCrossEntropy",
            kind="token",
            help="test double of FunReason's SRML loss",
        )
