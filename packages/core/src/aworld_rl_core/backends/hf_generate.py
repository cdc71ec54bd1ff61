"""Batched sampling with a transformers causal LM, in the shape ``rollout.Generate`` expects."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class HfGenerator:
    """Samples continuations of token prompts (left-padded into one batch).

    Returns each row's new tokens, cut after the first stop token, and ``None`` for the
    log-probabilities (trainers recompute them; keeping every step's logits over a 150k vocabulary
    would cost gigabytes). ``temperature=0`` means greedy decoding.
    """

    def __init__(
        self,
        model: Any,
        *,
        pad_id: int,
        stop_ids: Sequence[int],
        temperature: float = 1.0,
        top_p: float = 1.0,
    ) -> None:
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature}")
        if not stop_ids:
            raise ValueError("stop_ids must hold at least the end-of-turn token id")
        self.model = model
        self.pad_id = pad_id
        self.stop_ids = list(stop_ids)
        self.temperature = temperature
        self.top_p = top_p

    def __call__(
        self, prompts: Sequence[Sequence[int]], max_new_tokens: int
    ) -> list[tuple[list[int], list[float] | None]]:
        import torch

        if not prompts:
            return []
        device = next(self.model.parameters()).device
        width = max(len(p) for p in prompts)
        input_ids = torch.full((len(prompts), width), self.pad_id, dtype=torch.long)
        attention = torch.zeros((len(prompts), width), dtype=torch.long)
        for row, prompt in enumerate(prompts):
            input_ids[row, width - len(prompt) :] = torch.tensor(list(prompt), dtype=torch.long)
            attention[row, width - len(prompt) :] = 1
        sampling = self.temperature > 0
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                out = self.model.generate(
                    input_ids=input_ids.to(device),
                    attention_mask=attention.to(device),
                    max_new_tokens=max_new_tokens,
                    do_sample=sampling,
                    temperature=self.temperature if sampling else None,
                    top_p=self.top_p if sampling else None,
                    top_k=0 if sampling else None,
                    repetition_penalty=1.0,  # sample the policy itself, not a checkpoint's
                    min_p=None,  # generation_config defaults (Qwen ships top_k/penalties)
                    eos_token_id=self.stop_ids,
                    pad_token_id=self.pad_id,
                )
        finally:
            self.model.train(was_training)
        return [(self._trim(row.tolist()), None) for row in out[:, width:].cpu()]

    def _trim(self, ids: list[int]) -> list[int]:
        """Cut after the first stop token (generate pads finished rows)."""
        for position, token in enumerate(ids):
            if token in self.stop_ids:
                return ids[: position + 1]
        return ids
