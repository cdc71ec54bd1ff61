"""Per-GPU memory estimates for dry runs (estimates from a model's shape, not measurements).

One ``ModelShape`` (from a table of known models or a local ``config.json``), the shared
arithmetic, and two estimates built on it:

- ``sft_memory_per_gpu``: full or partial SFT of a causal LM: bf16 weights, bf16 gradients and
  fp32 AdamW state (master copy, m, v) of the *trainable* parameters, sharded over the GPUs
  under ZeRO-3; activations; the logits a token loss works on;
- ``rl_memory_per_gpu``: a colocated verl run (FSDP actor + bf16 reference + rollout engine),
  its two alternating phases (training with the engine asleep; rollout with the training state
  resident).

The shared terms:

- ``state_bytes``: weights 2 B/param, gradients 2 B and AdamW 12 B per trainable param (SFT);
- ``checkpointed_activation_bytes``: with gradient checkpointing each layer's bf16 input
  (tokens x hidden) is kept;
- ``layer_activation_bytes``: one layer's stored activations, ~34 x tokens x hidden bytes
  (flash attention: no seq^2 term), recomputed under checkpointing, kept for every layer
  without it;
- ``logits_bytes``: bf16 logits, their fp32 copy for the cross-entropy and its fp32 gradient
  (2 + 4 + 4 bytes per token per vocabulary entry): at 8k tokens and a 152k vocabulary this is
  the largest single term.

Left out: what is small next to these (biases, norms, attention with flash kernels).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aworld_rl_core.errors import ConfigError

GIB = 1024**3
RL_OVERHEAD_GIB = {"training": 3.0, "rollout": 2.0}
"""CUDA context, NCCL buffers and allocator fragmentation of an RL run (a rule of thumb)."""


@dataclass(frozen=True)
class ModelShape:
    """What the estimates need of a decoder-only transformer (``params``: all of them, a
    vision tower included)."""

    params: float
    hidden: int
    layers: int
    intermediate: int
    vocab: int
    heads: int
    kv_heads: int
    head_dim: int
    tied_embeddings: bool = False

    @property
    def embedding_params(self) -> float:
        """The input embedding and (untied) output head."""
        return self.vocab * self.hidden * (1 if self.tied_embeddings else 2)

    @property
    def layer_params(self) -> float:
        return (self.params - self.embedding_params) / self.layers

    @property
    def kv_bytes_per_token(self) -> int:
        return 2 * self.layers * self.kv_heads * self.head_dim * 2  # K and V, bf16

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> ModelShape:
        """From a HF ``config.json`` (its ``text_config`` if it has one; the parameter count
        computed from the shapes, biases left out)."""
        config = config.get("text_config") or config
        hidden, layers = int(config["hidden_size"]), int(config["num_hidden_layers"])
        inter, vocab = int(config["intermediate_size"]), int(config["vocab_size"])
        heads = int(config["num_attention_heads"])
        kv_heads = int(config.get("num_key_value_heads") or heads)
        head_dim = int(config.get("head_dim") or hidden // heads)
        tied = bool(config.get("tie_word_embeddings", False))
        attention = hidden * head_dim * (heads + 2 * kv_heads) + heads * head_dim * hidden
        per_layer = attention + 3 * hidden * inter + 2 * hidden
        embeddings = vocab * hidden * (1 if tied else 2)
        return cls(
            params=float(layers * per_layer + embeddings + hidden),
            hidden=hidden,
            layers=layers,
            intermediate=inter,
            vocab=vocab,
            heads=heads,
            kv_heads=kv_heads,
            head_dim=head_dim,
            tied_embeddings=tied,
        )


_QWEN25_7B = ModelShape(7.62e9, 3584, 28, 18944, 152064, 28, 4, 128)
_LLAMA31_8B = ModelShape(8.03e9, 4096, 32, 14336, 128256, 32, 8, 128)
KNOWN_SHAPES = {  # from the models' published config.json (no hub access at run time)
    "Qwen/Qwen2.5-7B-Instruct": _QWEN25_7B,
    "Qwen/Qwen2.5-Coder-7B-Instruct": _QWEN25_7B,
    "Qwen/Qwen3-4B-Instruct-2507": ModelShape(4.02e9, 2560, 36, 9728, 151936, 32, 8, 128, True),
    "meta-llama/Llama-3.2-3B-Instruct": ModelShape(
        3.21e9, 3072, 28, 8192, 128256, 24, 8, 128, True
    ),
    "meta-llama/Llama-3.1-8B-Instruct": _LLAMA31_8B,
    "watt-ai/watt-tool-8B": _LLAMA31_8B,
    "Team-ACE/ToolACE-2-Llama-3.1-8B": _LLAMA31_8B,
    # vision-language: params include the vision tower, the rest is the language model's
    "Qwen/Qwen2.5-VL-7B-Instruct": ModelShape(8.29e9, 3584, 28, 18944, 152064, 28, 4, 128),
    "Qwen/Qwen2.5-VL-3B-Instruct": ModelShape(3.75e9, 2048, 36, 11008, 151936, 16, 2, 128, True),
}


def model_shape(name_or_path: str) -> ModelShape:
    """A known model's shape, or one read from a local model directory's ``config.json``."""
    if name_or_path in KNOWN_SHAPES:
        return KNOWN_SHAPES[name_or_path]
    config = Path(name_or_path) / "config.json"
    if not config.is_file():
        raise ConfigError(
            f"no memory estimate for model '{name_or_path}': its shape is not known (known: "
            f"{', '.join(sorted(KNOWN_SHAPES))}); point model.name_or_path at a local model "
            "directory with a config.json"
        )
    return ModelShape.from_config(json.loads(config.read_text(encoding="utf-8")))


def state_bytes(params: float, trainable: float, shard: int) -> dict[str, float]:
    """bf16 weights of all ``params``, bf16 gradients and fp32 AdamW (master, m, v) of the
    ``trainable`` ones, each split ``shard`` ways (ZeRO-3: the GPUs; else 1)."""
    return {
        "weights": 2 * params / shard,
        "grads": 2 * trainable / shard,
        "optimizer": 12 * trainable / shard,
    }


def checkpointed_activation_bytes(shape: ModelShape, tokens: int) -> float:
    """Each layer's bf16 input, kept under gradient checkpointing."""
    return shape.layers * tokens * shape.hidden * 2


def layer_activation_bytes(shape: ModelShape, tokens: int) -> float:
    """One layer's stored activations (~34 bytes per token per hidden unit, flash attention)."""
    return 34 * tokens * shape.hidden


def activation_bytes(shape: ModelShape, tokens: int, *, gradient_checkpointing: bool) -> float:
    """Checkpointed: the layer inputs plus one layer recomputed; else every layer's."""
    if gradient_checkpointing:
        return checkpointed_activation_bytes(shape, tokens) + layer_activation_bytes(shape, tokens)
    return shape.layers * layer_activation_bytes(shape, tokens)


def logits_bytes(shape: ModelShape, tokens: int) -> float:
    """bf16 logits, their fp32 copy and its fp32 gradient over the whole vocabulary."""
    return tokens * shape.vocab * (2 + 4 + 4)


def sft_memory_per_gpu(
    shape: ModelShape,
    *,
    gpus: int,
    micro_batch: int,
    seq_len: int,
    trainable_params: float | None = None,
    zero3: bool = True,
    gradient_checkpointing: bool = True,
    logits: bool = True,
) -> dict[str, float]:
    """GiB on one GPU, by part (``<part>_gib``), and ``total_gib``.

    ``trainable_params``: what gets gradients and AdamW state (default: all of
    ``shape.params``); ``logits=False`` leaves out the logits term (a loss that computes
    logits only at a few positions)."""
    if gpus < 1 or micro_batch < 1 or seq_len < 1:
        raise ValueError("gpus, micro_batch and seq_len must be >= 1")
    trainable = shape.params if trainable_params is None else trainable_params
    tokens = micro_batch * seq_len
    parts = state_bytes(shape.params, trainable, gpus if zero3 else 1)
    parts["activations"] = activation_bytes(
        shape, tokens, gradient_checkpointing=gradient_checkpointing
    )
    if logits:
        parts["logits"] = logits_bytes(shape, tokens)
    out = {f"{k}_gib": v / GIB for k, v in parts.items()}
    out["total_gib"] = sum(out.values())
    return out


@dataclass(frozen=True)
class MemoryEstimate:
    """Per-GPU GiB of each part, by phase, and the GPU's size."""

    training: dict[str, float]
    rollout: dict[str, float]
    gpu_gib: float
    kv_tokens: float

    def peak(self, phase: str) -> float:
        return sum(getattr(self, phase).values())

    @property
    def fits(self) -> bool:
        return max(self.peak("training"), self.peak("rollout")) <= self.gpu_gib

    def table(self) -> str:
        lines = ["| phase | part | GiB per GPU |", "|---|---|---|"]
        for phase in ("training", "rollout"):
            for part, gib in getattr(self, phase).items():
                lines.append(f"| {phase} | {part} | {gib:.2f} |")
            lines.append(f"| {phase} | **total** | **{self.peak(phase):.2f}** |")
        verdict = "fits" if self.fits else "does NOT fit"
        lines.append(
            f"\n{verdict} in {self.gpu_gib:.0f} GiB; the rollout engine's KV cache holds about "
            f"{self.kv_tokens / 1000:.0f}k tokens per GPU"
        )
        return "\n".join(lines)


def rl_memory_per_gpu(
    shape: ModelShape,
    *,
    gpus: int,
    gpu_gib: float,
    tokens_per_gpu: int,
    rollout_fraction: float,
    tensor_parallel: int = 1,
    fused_kernels: bool = True,
    param_offload: bool = False,
    optimizer_offload: bool = False,
) -> MemoryEstimate:
    """A colocated verl run (FSDP actor + bf16 reference + rollout engine), per GPU:

    - **training** (the rollout engine asleep): FSDP shards of the fp32 parameters, fp32
      gradients and Adam's two moments over all GPUs; the bf16 reference shard; the bf16
      layers gathered for the current and the prefetched layer, plus the unsharded output
      head; with gradient checkpointing the layer inputs of one micro-batch of
      ``tokens_per_gpu`` tokens (``checkpointed_activation_bytes``), plus one layer's
      working set in forward and backward (its MLP activations dominate); the logits (none
      with fused kernels, else ``logits_bytes``); ``RL_OVERHEAD_GIB``.
    - **rollout** (training state resident, gradients freed): the engine's share of the GPU
      (``rollout_fraction``: weights plus KV cache), the fp32 parameter and Adam shards
      unless offloaded, the reference shard, ``RL_OVERHEAD_GIB``.
    """
    p, t = shape.params, tokens_per_gpu
    shard = {
        "fp32 parameters (shard)": 0.0 if param_offload else 4 * p / gpus,
        "fp32 gradients (shard)": 4 * p / gpus,
        "Adam moments (shard)": 0.0 if optimizer_offload else 8 * p / gpus,
        "reference bf16 (shard)": 2 * p / gpus,
    }
    layer_io = 2 * shape.hidden + shape.heads * shape.head_dim + 2 * shape.kv_heads * shape.head_dim
    training = {
        **shard,
        "gathered layers + output head bf16": (2 * 2 * shape.layer_params)
        + 2 * shape.vocab * shape.hidden,
        "checkpointed activations": checkpointed_activation_bytes(shape, t),
        "one layer forward + backward": 2 * t * (layer_io + 3 * shape.intermediate) * 2,
        "logits": 0.0 if fused_kernels else logits_bytes(shape, t),
    }
    engine = rollout_fraction * gpu_gib * GIB
    rollout = {
        "rollout engine (weights + KV cache)": engine,
        "fp32 parameters (shard)": shard["fp32 parameters (shard)"],
        "Adam moments (shard)": shard["Adam moments (shard)"],
        "reference bf16 (shard)": shard["reference bf16 (shard)"],
    }
    kv_tokens = max(0.0, engine - 2 * p / tensor_parallel) / shape.kv_bytes_per_token
    training_gib = {k: v / GIB for k, v in training.items()}
    training_gib["overhead"] = RL_OVERHEAD_GIB["training"]
    rollout_gib = {k: v / GIB for k, v in rollout.items()}
    rollout_gib["overhead"] = RL_OVERHEAD_GIB["rollout"]
    return MemoryEstimate(training_gib, rollout_gib, gpu_gib, kv_tokens)
