"""core.models helpers for subclasses of transformers models and device/dtype choice."""

import pytest


def test_subclass_inherits_its_base_class_key_conversions():
    pytest.importorskip("transformers")
    from transformers import Qwen2_5_VLForConditionalGeneration
    from transformers.conversion_mapping import get_checkpoint_conversion_mapping

    from aworld_rl_core.models import inherit_weight_conversions

    class GroundingQwenSubclassForTest(Qwen2_5_VLForConditionalGeneration):
        pass

    name = GroundingQwenSubclassForTest.__name__
    assert get_checkpoint_conversion_mapping(name) is None  # transformers gives it none
    assert inherit_weight_conversions(GroundingQwenSubclassForTest) is GroundingQwenSubclassForTest
    inherit_weight_conversions(GroundingQwenSubclassForTest)  # idempotent
    ours = get_checkpoint_conversion_mapping(name)
    base = get_checkpoint_conversion_mapping("Qwen2_5_VLForConditionalGeneration")
    assert [repr(t) for t in ours] == [repr(t) for t in base] and ours


def test_resolve_device():
    import torch

    from aworld_rl_core.models import resolve_device

    assert resolve_device("cpu") == ("cpu", "float32")
    assert resolve_device("cpu", "bfloat16") == ("cpu", "bfloat16")
    expected = ("cuda", "bfloat16") if torch.cuda.is_available() else ("cpu", "float32")
    assert resolve_device() == expected
    with pytest.raises(ValueError, match="unknown device"):
        resolve_device("tpu")
