"""Qwen2.5-VL with V2P's action head (GUI-Actor's design).

- Keys: the post-merger visual embeddings (one per 28x28 patch, the features placed at the
  ``<|image_pad|>`` positions), contextualised by 8-head self-attention with a residual and
  LayerNorm, then a two-layer GELU MLP.
- Queries: the last hidden state at each ``<|pointer_pad|>`` token through another MLP.
- Logits: scaled dot products ``q . k / sqrt(d)`` over the sample's patches.

The head lives at ``multi_patch_pointer_head`` with the released checkpoints' parameter names,
so ``from_pretrained`` loads them; the pointer token ids are stored in the config.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from transformers import Qwen2_5_VLForConditionalGeneration

from aworld_rl_core.models import inherit_weight_conversions
from aworld_rl_v2p.prompts import POINTER_PAD, SPECIAL_TOKENS


class ActionHead(nn.Module):
    """Attention from pointer-token states to visual patches: ``(queries, patches) -> logits``."""

    def __init__(self, d_model: int, *, heads: int = 8, dropout: float = 0.1) -> None:
        super().__init__()
        if d_model % heads:
            raise ValueError(f"hidden size {d_model} is not divisible by {heads} head(s)")
        self.d_model = d_model
        self.self_attention = nn.MultiheadAttention(
            d_model, heads, dropout=dropout, batch_first=True
        )
        self.layer_norm = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.projection_enc = _mlp(d_model)
        self.projection_dec = _mlp(d_model)

    def forward(self, patches: torch.Tensor, queries: torch.Tensor) -> torch.Tensor:
        """``patches`` (M, d), ``queries`` (N, d) -> logits (N, M)."""
        x = patches.unsqueeze(0)
        mixed, _ = self.self_attention(x, x, x, need_weights=False)
        keys = self.projection_enc(self.layer_norm(x + self.dropout(mixed)).squeeze(0))
        return self.projection_dec(queries) @ keys.T / self.d_model**0.5


def _mlp(d: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.Linear(d, d))


@dataclass
class Encoded:
    """One prefill of a batch: last hidden states and each sample's patch embeddings and grid."""

    hidden: torch.Tensor  # (batch, seq, d)
    input_ids: torch.Tensor  # (batch, seq)
    patches: list[torch.Tensor]  # per sample (M_i, d)
    grids: list[tuple[int, int]]  # per sample (rows, cols) of merged patches


HEAD_PREFIX = "multi_patch_pointer_head."


# Hub-layout keys (model.layers.*, visual.*) load and save as Qwen2.5-VL's
@inherit_weight_conversions
class V2PForConditionalGeneration(Qwen2_5_VLForConditionalGeneration):
    """Qwen2.5-VL plus the action head; ``pointer_logits`` gives per-sample patch logits.

    ``config.pointer_head_trained``: False for a fresh head (``from_base``, or a plain
    Qwen2.5-VL checkpoint); True once ``v2p.train`` trained it; a released checkpoint whose
    weights hold the head (no such key in its config) counts as trained.
    """

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        self.multi_patch_pointer_head = ActionHead(
            config.text_config.hidden_size,
            heads=getattr(config, "pointer_heads", 8),
            dropout=getattr(config, "pointer_dropout", 0.1),
        )
        self.post_init()

    @property
    def pointer_pad_token_id(self) -> int:
        token = getattr(self.config, "pointer_pad_token_id", None)
        if token is None:
            raise ValueError(
                "the model has no pointer tokens: add them with "
                "aworld_rl_v2p.modeling.add_pointer_tokens"
            )
        return int(token)

    def encode(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        pixel_values: torch.Tensor,
        image_grid_thw: torch.Tensor,
        mm_token_type_ids: torch.Tensor | None = None,
        **_: Any,
    ) -> Encoded:
        """One forward pass of the backbone (no LM head): hidden states and visual patches."""
        image_id = self.config.image_token_id
        if mm_token_type_ids is None:  # without them Qwen2.5-VL silently uses 1-D positions
            mm_token_type_ids = (input_ids == image_id).int()
        out = self.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            pixel_values=pixel_values,
            image_grid_thw=image_grid_thw,
            mm_token_type_ids=mm_token_type_ids,
            use_cache=False,
        )
        per_image = list(out.image_outputs.pooler_output) if out.image_outputs else []
        counts = (input_ids == image_id).sum(dim=1).tolist()
        merge = self.config.vision_config.spatial_merge_size
        patches, grids, cursor = [], [], 0
        for i, count in enumerate(counts):
            if count and cursor < len(per_image) and per_image[cursor].shape[0] == count:
                _t, h, w = (int(v) for v in image_grid_thw[cursor])
                patches.append(per_image[cursor])
                grids.append((h // merge, w // merge))
                cursor += 1
            else:
                raise ValueError(
                    f"sample {i} has {count} image tokens: the action head needs exactly one "
                    "image per sample"
                )
        return Encoded(out.last_hidden_state, input_ids, patches, grids)

    def pointer_logits(self, encoded: Encoded) -> list[torch.Tensor | None]:
        """Per sample, logits (pointer tokens, patches); ``None`` for a sample without pointer."""
        pad = self.pointer_pad_token_id
        head = self.multi_patch_pointer_head
        out: list[torch.Tensor | None] = []
        for i, patches in enumerate(encoded.patches):
            where = encoded.input_ids[i] == pad
            if not where.any():
                out.append(None)
                continue
            queries = encoded.hidden[i][where]
            out.append(head(patches.to(queries.dtype), queries))
        return out


def add_pointer_tokens(model: Any, tokenizer: Any) -> dict[str, int]:
    """Add V2P's special tokens; new embedding rows (input and output) = mean of the old rows.

    Idempotent: a tokenizer that has them already changes nothing. Sets the config's
    ``pointer_{start,end,pad}_token_id``. Returns token -> id.
    """
    rows = model.get_input_embeddings().weight.shape[0]
    added = tokenizer.add_special_tokens(
        {"additional_special_tokens": list(SPECIAL_TOKENS)}, replace_extra_special_tokens=False
    )
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS}
    if added:
        # Qwen2.5-VL-7B has spare rows past the tokenizer (152,064 > 151,665): use them first
        if max(ids.values()) >= rows:
            model.resize_token_embeddings(len(tokenizer), mean_resizing=False)
        new = sorted(ids.values())
        with torch.no_grad():
            for embedding in _embedding_matrices(model):
                embedding[new] = embedding[: new[0]].mean(dim=0, keepdim=True)
    for name, token in (("start", "<|pointer_start|>"), ("end", "<|pointer_end|>")):
        setattr(model.config, f"pointer_{name}_token_id", ids[token])
    model.config.pointer_pad_token_id = ids[POINTER_PAD]
    model.config.v2p_token_ids = sorted(ids.values())
    return ids


def new_token_rows(model: Any) -> torch.Tensor:
    """Bool mask over embedding rows: True for V2P's special tokens (trained in warm-up)."""
    rows = torch.zeros(model.get_input_embeddings().weight.shape[0], dtype=torch.bool)
    rows[list(model.config.v2p_token_ids)] = True
    return rows


def from_base(base: Any, tokenizer: Any) -> V2PForConditionalGeneration:
    """A V2P model from an in-memory Qwen2.5-VL (its weights, a fresh head, pointer tokens)."""
    model = V2PForConditionalGeneration(base.config)
    missing, unexpected = model.load_state_dict(base.state_dict(), strict=False)
    if unexpected or any(not k.startswith("multi_patch_pointer_head.") for k in missing):
        raise ValueError(f"not a Qwen2.5-VL state dict: missing {missing}, unexpected {unexpected}")
    add_pointer_tokens(model, tokenizer)
    model.config.pointer_head_trained = False
    return model


def head_trained(model: Any) -> bool:
    """Whether the model's action head was trained (see ``V2PForConditionalGeneration``)."""
    return bool(getattr(model.config, "pointer_head_trained", True))


def _embedding_matrices(model: Any) -> list[torch.Tensor]:
    inputs = model.get_input_embeddings().weight
    outputs = model.get_output_embeddings().weight
    return [inputs] if outputs.data_ptr() == inputs.data_ptr() else [inputs, outputs]
