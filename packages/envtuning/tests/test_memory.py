"""The per-GPU memory estimate of a verl stage (the README's arithmetic, by hand)."""

import json

import pytest

from aworld_rl_envtuning.memory import GIB, KNOWN_SHAPES, ModelShape, estimate, model_shape

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
    (tmp_path / "config.json").write_text(json.dumps(QWEN25_7B))
    assert model_shape(str(tmp_path)) == shape
    assert model_shape("no/such-model") is None


def test_paper_setting_fits_80_gb_with_dynamic_batching_and_not_without():
    shape = KNOWN_SHAPES["Qwen/Qwen2.5-7B-Instruct"]
    p, t = 7.62e9, 65536
    result = estimate(shape, gpus=8, gpu_gib=80, tokens_per_gpu=t, rollout_fraction=0.8)
    assert result.training["Adam moments (shard)"] == pytest.approx(8 * p / 8 / GIB)
    assert result.training["checkpointed activations"] == pytest.approx(t * 3584 * 2 * 28 / GIB)
    layer = 2 * t * (2 * 3584 + 28 * 128 + 2 * 4 * 128 + 3 * 18944) * 2
    assert result.training["one layer forward + backward"] == pytest.approx(layer / GIB)
    assert result.peak("training") == pytest.approx(49.85, abs=0.01)
    assert result.peak("rollout") == pytest.approx(64 + 14 * p / 8 / GIB + 2, abs=1e-6)
    assert result.fits and "fits in 80 GiB" in result.table()
    assert result.kv_tokens == pytest.approx((64 * GIB - 2 * p) / 57344)
    # the old preset: 16 sequences of 8,192 + 10,000 tokens per micro-batch, unfused logits
    padded = estimate(
        shape,
        gpus=8,
        gpu_gib=80,
        tokens_per_gpu=16 * 18192,
        rollout_fraction=0.8,
        fused_kernels=False,
    )
    assert not padded.fits and "does NOT fit" in padded.table()
