"""Per-GPU memory of a colocated verl GRPO run (FSDP actor + reference + rollout engine).

An estimate from the model's shape and the launch settings, in GiB, for the two phases that
alternate on every GPU (the README shows the arithmetic for Qwen2.5-7B on 8 x 80 GB):

- **training** (the rollout engine asleep): FSDP shards of the fp32 parameters, fp32
  gradients and Adam's two moments over all GPUs; the bf16 reference shard; the bf16 layers
  gathered for the current and the prefetched layer, plus the unsharded output head; with
  gradient checkpointing the bf16 hidden state of every layer boundary for one micro-batch of
  ``tokens_per_gpu`` tokens, plus one layer's working set in forward and backward (its MLP
  activations dominate); the logits (none with fused kernels, else bf16 logits, fp32 log-
  softmax and its gradient over the whole vocabulary); a fixed overhead.
- **rollout** (training state resident, gradients freed): the engine's share of the GPU
  (``gpu_memory_utilization``: weights plus KV cache), the fp32 parameter and Adam shards
  unless offloaded, the reference shard, a fixed overhead.

It leaves out what is small next to these (attention with flash kernels, biases, norms).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

GIB = 2**30
OVERHEAD_GIB = {"training": 3.0, "rollout": 2.0}
"""CUDA context, NCCL buffers and allocator fragmentation (a rule of thumb)."""


@dataclass(frozen=True)
class ModelShape:
    """What the estimate needs of a decoder-only transformer."""

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
        return self.vocab * self.hidden * (1 if self.tied_embeddings else 2)

    @property
    def layer_params(self) -> float:
        return (self.params - self.embedding_params) / self.layers

    @property
    def kv_bytes_per_token(self) -> int:
        return 2 * self.layers * self.kv_heads * self.head_dim * 2  # K and V, bf16

    @classmethod
    def from_config(cls, config: dict) -> ModelShape:
        """From a HF ``config.json`` (the parameter count computed from the shapes)."""
        hidden, layers = int(config["hidden_size"]), int(config["num_hidden_layers"])
        inter, vocab = int(config["intermediate_size"]), int(config["vocab_size"])
        heads = int(config["num_attention_heads"])
        kv_heads = int(config.get("num_key_value_heads", heads))
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


KNOWN_SHAPES = {
    # the models of the paper's Table 1, from their published config.json
    "Qwen/Qwen2.5-7B-Instruct": ModelShape(7.62e9, 3584, 28, 18944, 152064, 28, 4, 128),
    "meta-llama/Llama-3.1-8B-Instruct": ModelShape(8.03e9, 4096, 32, 14336, 128256, 32, 8, 128),
    "watt-ai/watt-tool-8B": ModelShape(8.03e9, 4096, 32, 14336, 128256, 32, 8, 128),
    "Team-ACE/ToolACE-2-Llama-3.1-8B": ModelShape(8.03e9, 4096, 32, 14336, 128256, 32, 8, 128),
}


def model_shape(name_or_path: str) -> ModelShape | None:
    """A known model's shape, or one read from a local directory's ``config.json``."""
    if name_or_path in KNOWN_SHAPES:
        return KNOWN_SHAPES[name_or_path]
    config = Path(name_or_path) / "config.json"
    if config.is_file():
        data = json.loads(config.read_text(encoding="utf-8"))
        return ModelShape.from_config(data.get("text_config", data))
    return None


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


def estimate(
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
    """See the module docstring."""
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
        "checkpointed activations": t * shape.hidden * 2 * shape.layers,
        "one layer forward + backward": 2 * t * (layer_io + 3 * shape.intermediate) * 2,
        "logits": 0.0 if fused_kernels else t * shape.vocab * (2 + 4 + 4),
    }
    engine = rollout_fraction * gpu_gib * GIB
    rollout = {
        "rollout engine (weights + KV cache)": engine,
        "fp32 parameters (shard)": shard["fp32 parameters (shard)"],
        "Adam moments (shard)": shard["Adam moments (shard)"],
        "reference bf16 (shard)": shard["reference bf16 (shard)"],
    }
    kv_tokens = max(0.0, engine - 2 * p / tensor_parallel) / shape.kv_bytes_per_token
    to_gib = {k: v / GIB for k, v in training.items()}
    to_gib["overhead"] = OVERHEAD_GIB["training"]
    rollout_gib = {k: v / GIB for k, v in rollout.items()}
    rollout_gib["overhead"] = OVERHEAD_GIB["rollout"]
    return MemoryEstimate(to_gib, rollout_gib, gpu_gib, kv_tokens)
