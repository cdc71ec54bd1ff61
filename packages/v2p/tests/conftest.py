import pytest


@pytest.fixture(scope="session")
def tiny_v2p():
    """A tiny random V2P model (core's tiny Qwen2.5-VL + pointer tokens + head) and its parts."""
    from aworld_rl_core.testing.tiny import tiny_vl_model
    from aworld_rl_v2p.modeling import from_base

    vl = tiny_vl_model(seed=0)
    model = from_base(vl.model, vl.tokenizer)
    model.eval()
    return model, vl.tokenizer, vl.image_processor
