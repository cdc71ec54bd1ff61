"""Per-GPU memory of full-parameter SFT of a causal LM, for dry runs (an estimate, not a
measurement): bf16 weights and gradients and fp32 AdamW state (master copy, m, v) sharded over
the GPUs under ZeRO-3, plus activations and the logits a token loss works on.

- activations, with gradient checkpointing: each layer's bf16 input (tokens x hidden) kept,
  plus one layer's working set recomputed (~34 x tokens x hidden bytes, flash attention: no
  seq^2 term); without it, that working set for every layer;
- logits: bf16 logits, their fp32 copy for the cross-entropy and its fp32 gradient
  (2 + 4 + 4 bytes per token per vocabulary entry): at 8k tokens and a 152k vocabulary this is
  the largest single term.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from aworld_rl_core.errors import ConfigError

GIB = 1024**3


@dataclass(frozen=True)
class ModelShape:
    """What the estimate needs from a model's ``config.json``."""

    params: float
    hidden: int
    layers: int
    vocab: int


KNOWN_SHAPES = {  # from the models' config.json files (no hub access at run time)
    "Qwen/Qwen2.5-Coder-7B-Instruct": ModelShape(7.62e9, 3584, 28, 152064),
    "Qwen/Qwen2.5-7B-Instruct": ModelShape(7.62e9, 3584, 28, 152064),
    "meta-llama/Llama-3.2-3B-Instruct": ModelShape(3.21e9, 3072, 28, 128256),
    "Qwen/Qwen3-4B-Instruct-2507": ModelShape(4.02e9, 2560, 36, 151936),
}


def model_shape(name_or_path: str, params: float | None = None) -> ModelShape:
    """The shape of a known model, or read from a local model directory's ``config.json``
    (``params`` then estimated from it unless given)."""
    if name_or_path in KNOWN_SHAPES:
        return KNOWN_SHAPES[name_or_path]
    config = Path(name_or_path) / "config.json"
    if not config.is_file():
        raise ConfigError(
            f"no shape known for '{name_or_path}' (known: {', '.join(sorted(KNOWN_SHAPES))}); "
            "point model.name_or_path at a local model directory with a config.json"
        )
    cfg = json.loads(config.read_text(encoding="utf-8"))
    cfg = cfg.get("text_config", cfg)
    hidden, layers, vocab = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["vocab_size"]
    if params is None:
        inter = cfg.get("intermediate_size", 4 * hidden)
        tied = cfg.get("tie_word_embeddings", False)
        params = layers * (4 * hidden * hidden + 3 * hidden * inter) + vocab * hidden * (
            1 if tied else 2
        )
    return ModelShape(float(params), hidden, layers, vocab)


def sft_memory_per_gpu(
    shape: ModelShape,
    *,
    gpus: int,
    micro_batch: int,
    seq_len: int,
    zero3: bool = True,
    gradient_checkpointing: bool = True,
) -> dict[str, float]:
    """GiB on one GPU, by part, and ``total_gib``."""
    if gpus < 1 or micro_batch < 1 or seq_len < 1:
        raise ValueError("gpus, micro_batch and seq_len must be >= 1")
    shard = gpus if zero3 else 1
    tokens = micro_batch * seq_len
    layer_work = 34 * tokens * shape.hidden
    if gradient_checkpointing:
        activations = shape.layers * tokens * shape.hidden * 2 + layer_work
    else:
        activations = shape.layers * layer_work
    out = {
        "weights_gib": 2 * shape.params / shard / GIB,
        "grads_gib": 2 * shape.params / shard / GIB,
        "optimizer_gib": 12 * shape.params / shard / GIB,
        "activations_gib": activations / GIB,
        "logits_gib": 10 * tokens * shape.vocab / GIB,
    }
    out["total_gib"] = sum(out.values())
    return out
