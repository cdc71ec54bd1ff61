import importlib.util

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


@pytest.mark.skipif(
    importlib.util.find_spec("aworld_rl_core.models") is not None,
    reason="core has the models seam: tiny:qwen2_5_vl loads",
)
def test_tiny_model_without_core_models_seam_is_a_clear_error():
    with pytest.raises(ImportError, match="aworld_rl_core.models"):
        load_v2p("tiny:qwen2_5_vl")


def test_not_a_model_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="no config.json"):
        load_v2p(str(tmp_path))
    with pytest.raises(ValueError, match="unknown tiny model"):
        load_v2p("tiny:qwen3")
