"""Models, tokenizers and processors: loading what ``model.name_or_path`` names, the ``tiny:``
scheme (tiny random models built offline) and core's training chat template.

Importing this package imports neither torch nor transformers.
"""

from aworld_rl_core.models.loading import (
    check_source,
    from_pretrained_strict,
    inherit_weight_conversions,
    is_tiny,
    load_model_and_tokenizer,
    load_processor,
    load_tokenizer,
    load_vision_model,
    model_dir,
    resolve_device,
    tiny_arch,
    tiny_spec,
)
from aworld_rl_core.models.processor import ImageTextProcessor
from aworld_rl_core.models.tiny import (
    TINY_ARCHS,
    TINY_PREFIX,
    TinySize,
    TinyVL,
    chat_template,
    parse_tiny,
    qwen3_tokenizer_dir,
    tiny_causal_lm,
    tiny_model_dir,
    tiny_tokenizer,
    tiny_vl_model,
)

__all__ = [
    "TINY_ARCHS",
    "TINY_PREFIX",
    "ImageTextProcessor",
    "TinySize",
    "TinyVL",
    "chat_template",
    "check_source",
    "from_pretrained_strict",
    "inherit_weight_conversions",
    "is_tiny",
    "load_model_and_tokenizer",
    "load_processor",
    "load_tokenizer",
    "load_vision_model",
    "model_dir",
    "parse_tiny",
    "qwen3_tokenizer_dir",
    "resolve_device",
    "tiny_arch",
    "tiny_causal_lm",
    "tiny_model_dir",
    "tiny_spec",
    "tiny_tokenizer",
    "tiny_vl_model",
]
