"""The per-GPU memory estimates (backends/memory.py), by hand."""

from __future__ import annotations

import json

import pytest

from aworld_rl_core.backends.memory import (
    GIB,
    KNOWN_SHAPES,
    ModelShape,
    model_shape,
    rl_memory_per_gpu,
    sft_memory_per_gpu,
)
from aworld_rl_core.errors import ConfigError

QWEN25_7B = {  # Qwen/Qwen2.5-7B-Instruct's config.json (the fields the estimate reads)
    "hidden_size": 3584,
    "num_hidden_layers": 28,
    "intermediate_size": 18944,
    "vocab_size": 152064,
    "num_attention_heads": 28,
    "num_key_value_heads": 4,
    "tie_word_embeddings": False,
}


def test_shape_from_config_counts_the_published_parameters(tmp_path):
    shape = ModelShape.from_config(QWEN25_7B)
    # 7.62e9 published (the biases of q/k/v, ~1e6, are left out)
    assert shape.params == pytest.approx(7.62e9, rel=2e-3)
    assert shape.kv_bytes_per_token == 2 * 28 * 4 * 128 * 2
    assert ModelShape.from_config({"text_config": QWEN25_7B}) == shape  # a VL config
    (tmp_path / "config.json").write_text(json.dumps(QWEN25_7B))
    assert model_shape(str(tmp_path)) == shape


def test_known_shapes_match_their_config_arithmetic():
    for name, shape in KNOWN_SHAPES.items():
        if "VL" in name:  # params include the vision tower
            assert shape.params > shape.embedding_params + shape.layers * shape.hidden**2
            continue
        config = {
            "hidden_size": shape.hidden,
            "num_hidden_layers": shape.layers,
            "intermediate_size": shape.intermediate,
            "vocab_size": shape.vocab,
            "num_attention_heads": shape.heads,
            "num_key_value_heads": shape.kv_heads,
            "head_dim": shape.head_dim,
            "tie_word_embeddings": shape.tied_embeddings,
        }
        assert ModelShape.from_config(config).params == pytest.approx(shape.params, rel=5e-3), name


def test_unknown_model_is_a_config_error_that_says_what_to_do():
    with pytest.raises(ConfigError, match="no memory estimate for model 'no/such-model'.*config"):
        model_shape("no/such-model")


def test_sft_estimate_by_hand():
    shape = KNOWN_SHAPES["Qwen/Qwen2.5-Coder-7B-Instruct"]
    got = sft_memory_per_gpu(shape, gpus=8, micro_batch=2, seq_len=8192)
    tokens = 2 * 8192
    assert got["weights_gib"] == pytest.approx(2 * 7.62e9 / 8 / GIB)
    assert got["grads_gib"] == pytest.approx(2 * 7.62e9 / 8 / GIB)
    assert got["optimizer_gib"] == pytest.approx(12 * 7.62e9 / 8 / GIB)
    assert got["activations_gib"] == pytest.approx((28 * 2 + 34) * tokens * 3584 / GIB)
    assert got["logits_gib"] == pytest.approx(10 * tokens * 152064 / GIB)
    assert got["total_gib"] == pytest.approx(42.32, abs=0.01)
    unsharded = sft_memory_per_gpu(shape, gpus=8, micro_batch=2, seq_len=8192, zero3=False)
    assert unsharded["weights_gib"] + unsharded["grads_gib"] + unsharded[
        "optimizer_gib"
    ] == pytest.approx(16 * 7.62e9 / GIB)
    full = sft_memory_per_gpu(
        shape, gpus=8, micro_batch=2, seq_len=8192, gradient_checkpointing=False
    )
    assert full["activations_gib"] == pytest.approx(28 * 34 * tokens * 3584 / GIB)


def test_sft_estimate_of_a_trainable_subset_without_logits():
    shape = KNOWN_SHAPES["Qwen/Qwen2.5-VL-7B-Instruct"]
    subset = 2 * 152064 * 3584
    got = sft_memory_per_gpu(
        shape, gpus=1, micro_batch=1, seq_len=7600, trainable_params=subset, logits=False
    )
    assert got["weights_gib"] == pytest.approx(2 * 8.29e9 / GIB)  # all weights resident
    assert got["grads_gib"] == pytest.approx(2 * subset / GIB)
    assert got["optimizer_gib"] == pytest.approx(12 * subset / GIB)
    assert "logits_gib" not in got
    with pytest.raises(ValueError, match=">= 1"):
        sft_memory_per_gpu(shape, gpus=0, micro_batch=1, seq_len=1)


def test_rl_estimate_fits_80_gb_with_dynamic_batching_and_not_without():
    shape = KNOWN_SHAPES["Qwen/Qwen2.5-7B-Instruct"]
    p, t = 7.62e9, 65536
    result = rl_memory_per_gpu(shape, gpus=8, gpu_gib=80, tokens_per_gpu=t, rollout_fraction=0.8)
    assert result.training["Adam moments (shard)"] == pytest.approx(8 * p / 8 / GIB)
    assert result.training["checkpointed activations"] == pytest.approx(t * 3584 * 2 * 28 / GIB)
    layer = 2 * t * (2 * 3584 + 28 * 128 + 2 * 4 * 128 + 3 * 18944) * 2
    assert result.training["one layer forward + backward"] == pytest.approx(layer / GIB)
    assert result.peak("training") == pytest.approx(49.85, abs=0.01)
    assert result.peak("rollout") == pytest.approx(64 + 14 * p / 8 / GIB + 2, abs=1e-6)
    assert result.fits and "fits in 80 GiB" in result.table()
    assert result.kv_tokens == pytest.approx((64 * GIB - 2 * p) / 57344)
    offloaded = rl_memory_per_gpu(
        shape, gpus=8, gpu_gib=80, tokens_per_gpu=t, rollout_fraction=0.8, optimizer_offload=True
    )
    assert result.peak("rollout") - offloaded.peak("rollout") == pytest.approx(8 * p / 8 / GIB)
    # 16 sequences of 8,192 + 10,000 tokens per micro-batch, unfused logits
    padded = rl_memory_per_gpu(
        shape,
        gpus=8,
        gpu_gib=80,
        tokens_per_gpu=16 * 18192,
        rollout_fraction=0.8,
        fused_kernels=False,
    )
    assert padded.training["logits"] == pytest.approx(16 * 18192 * 152064 * 10 / GIB)
    assert not padded.fits and "does NOT fit" in padded.table()
