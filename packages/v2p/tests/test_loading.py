import pytest

from aworld_rl_v2p.loading import load_v2p


def test_plain_qwen25_vl_checkpoint_gets_pointer_tokens_and_a_head(tmp_path):
    from aworld_rl_core.models import tiny_vl_model

    vl = tiny_vl_model(seed=1)
    vl.model.save_pretrained(tmp_path)
    vl.tokenizer.save_pretrained(tmp_path)
    vl.image_processor.save_pretrained(tmp_path)
    model, tokenizer, image_processor = load_v2p(str(tmp_path))
    assert model.config.pointer_pad_token_id == tokenizer.convert_tokens_to_ids("<|pointer_pad|>")
    assert image_processor.merge_size == 2
    assert not model.training


def test_tiny_model_is_core_tiny_qwen25_vl_with_pointer_tokens_in_the_dtype_asked():
    import torch

    from aworld_rl_core.models import tiny_vl_model

    model, tokenizer, _ = load_v2p("tiny:qwen2_5_vl", dtype="bfloat16")
    base = dict(tiny_vl_model().model.named_parameters())
    assert model.dtype == torch.bfloat16
    assert model.config.pointer_pad_token_id == tokenizer.convert_tokens_to_ids("<|pointer_pad|>")
    ours = dict(model.named_parameters())
    name = "model.language_model.layers.0.mlp.up_proj.weight"
    assert torch.equal(ours[name], base[name].to(torch.bfloat16))  # core's fixed tiny weights


def test_not_a_model_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="no config.json"):
        load_v2p(str(tmp_path))
    with pytest.raises(ValueError, match="unknown tiny model"):
        load_v2p("tiny:qwen3")
