"""Loading a V2P model (or a plain Qwen2.5-VL, which gets the pointer tokens and a new head)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

TINY = "tiny:qwen2_5_vl"


def load_v2p(name_or_path: str, *, dtype: str = "auto") -> tuple[Any, Any, Any]:
    """(model, tokenizer, image processor) from a saved directory, a hub id, or ``tiny:``.

    ``tiny:qwen2_5_vl`` is core's tiny random Qwen2.5-VL (``aworld_rl_core.models``). A
    checkpoint without pointer tokens (the base Qwen2.5-VL) gets them, with a fresh head.
    ``dtype``: ``auto`` (the checkpoint's), ``float32``, ``bfloat16`` or ``float16``.
    """
    import torch

    from aworld_rl_v2p.modeling import V2PForConditionalGeneration, add_pointer_tokens, from_base

    torch_dtype = "auto" if dtype == "auto" else getattr(torch, dtype)
    if name_or_path.startswith("tiny:"):
        model, tokenizer, image_processor = _core_tiny(name_or_path)
        model = from_base(model, tokenizer)
        if dtype != "auto":
            model = model.to(torch_dtype)
        return model.eval(), tokenizer, image_processor
    from transformers import AutoTokenizer
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import (
        Qwen2VLImageProcessorPil,
    )

    path = Path(name_or_path)
    if not (path / "config.json").is_file() and path.exists():
        raise FileNotFoundError(f"'{path}' holds no config.json: give a saved model directory")
    model = V2PForConditionalGeneration.from_pretrained(name_or_path, dtype=torch_dtype)
    tokenizer = AutoTokenizer.from_pretrained(name_or_path)
    try:
        image_processor = Qwen2VLImageProcessorPil.from_pretrained(name_or_path)
    except OSError:
        image_processor = Qwen2VLImageProcessorPil()
    if getattr(model.config, "pointer_pad_token_id", None) is None:
        add_pointer_tokens(model, tokenizer)
    return model.eval(), tokenizer, image_processor


def save_v2p(model: Any, tokenizer: Any, image_processor: Any, path: Path) -> Path:
    """Everything ``load_v2p`` needs, in one directory."""
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    image_processor.save_pretrained(path)
    return path


def _core_tiny(name: str) -> tuple[Any, Any, Any]:
    if name != TINY:
        raise ValueError(f"unknown tiny model {name!r}: V2P needs {TINY}")
    import importlib

    try:
        models = importlib.import_module("aworld_rl_core.models")  # the core models seam
    except ImportError:
        raise ImportError(
            f"{TINY} comes from aworld_rl_core.models, which this aworld-rl-core does not have "
            "yet: upgrade aworld-rl-core, or give model.name_or_path=<a saved model directory>"
        ) from None
    vl = models.tiny_vl_model()
    return vl.model, vl.tokenizer, vl.image_processor
