"""Model factory, setup and model-level loss for the hf-sft vision tests (module level, so
they are importable by path like a paper package's)."""

from __future__ import annotations

from typing import Any

EMBED = "model.language_model.embed_tokens.weight"
TRAINED_ROWS = (151645, 151667)  # <|im_end|> and <think>: the only embedding rows that learn


def tiny_vl_factory(model_cfg: Any) -> tuple[Any, Any]:
    """A model factory: core's tiny Qwen2.5-VL and its processor."""
    from aworld_rl_core.models import load_vision_model

    return load_vision_model(model_cfg)


def train_rows_only(model: Any) -> dict[str, Any]:
    """Freeze all but the embedding matrix, and let only ``TRAINED_ROWS`` of it change."""
    import torch

    for name, param in model.named_parameters():
        param.requires_grad_(name == EMBED)
    weight = dict(model.named_parameters())[EMBED]
    mask = torch.zeros(weight.shape[0], 1)
    mask[list(TRAINED_ROWS)] = 1.0
    return {EMBED: mask}


def compute_loss(model: Any, batch: dict[str, Any]) -> tuple[Any, dict[str, float]]:
    """A model-level loss: the model's own cross-entropy, and a metric from a passed-through
    row field (``target``)."""
    inputs = {k: batch[k] for k in ("input_ids", "attention_mask", "pixel_values",
                                    "image_grid_thw", "mm_token_type_ids", "labels")}  # fmt: skip
    out = model(**inputs)
    return out.loss, {"target_sum": float(sum(sum(t) for t in batch["target"]))}
