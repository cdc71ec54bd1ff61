"""Loading a V2P model (or a plain Qwen2.5-VL, which gets the pointer tokens and a new head).

- Both key layouts load: the Hub / released layout (``model.layers.*``, ``visual.*``, as
  Qwen2.5-VL-7B-Instruct, GUI-Actor and V2P-7B are saved) and transformers 5's
  (``model.language_model.*``, ``model.visual.*``); saves are written in the Hub layout, so
  the released code reads them (``V2PForConditionalGeneration`` inherits Qwen2.5-VL's key
  conversions).
- Every backbone weight must come from the checkpoint: a missing one is an error, never a
  random tensor. Only the action head may be missing (a plain Qwen2.5-VL): it is then fresh,
  ``config.pointer_head_trained`` is False, and ``require_trained_head`` refuses it.
- ``device`` / ``dtype``: ``auto`` = CUDA in bfloat16 where a GPU is present, else CPU in
  float32 (core's ``resolve_device``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

TINY = "tiny:qwen2_5_vl"


class UntrainedHeadError(ValueError):
    """The model's action head is untrained (fresh), and a trained one was required."""


def load_v2p(
    name_or_path: str,
    *,
    dtype: str = "auto",
    device: str = "auto",
    require_trained_head: bool = False,
    head_seed: int | None = None,
) -> tuple[Any, Any, Any]:
    """(model, tokenizer, image processor) from a saved directory, a hub id, or ``tiny:``.

    ``tiny:qwen2_5_vl`` is core's tiny random Qwen2.5-VL (``aworld_rl_core.models``) with a
    fresh head. A checkpoint without pointer tokens (the base Qwen2.5-VL) gets them, with a
    fresh head. ``dtype``: ``auto``, ``float32``, ``bfloat16`` or ``float16``; ``device``:
    ``auto``, ``cpu``, ``cuda`` or ``cuda:N``. ``require_trained_head``: raise
    ``UntrainedHeadError`` when the head is fresh (evaluation and clicking ask for it).
    ``head_seed``: draw what is fresh (the head, new pointer-token rows) from this seed, so
    every process that loads the same checkpoint gets the same model (a resumed evaluation
    predicts as the run it continues); None: from torch's global RNG (training seeds it).
    """
    import torch

    from aworld_rl_core.models import from_pretrained_strict, resolve_device
    from aworld_rl_v2p.modeling import (
        HEAD_PREFIX,
        V2PForConditionalGeneration,
        add_pointer_tokens,
        from_base,
        head_trained,
    )

    device, dtype = resolve_device(device, dtype)
    torch_dtype = getattr(torch, dtype)
    with _fresh_head_seed(head_seed):  # the head and pointer-token rows drawn fresh
        if name_or_path.startswith("tiny:"):
            model, tokenizer, image_processor = _core_tiny(name_or_path)
            model = from_base(model, tokenizer)
        else:
            from transformers import AutoTokenizer
            from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import (
                Qwen2VLImageProcessorPil,
            )

            path = Path(name_or_path)
            if not (path / "config.json").is_file() and path.exists():
                raise FileNotFoundError(
                    f"'{path}' holds no config.json: give a saved model directory"
                )
            model, fresh = from_pretrained_strict(
                V2PForConditionalGeneration,
                name_or_path,
                allow_missing=(HEAD_PREFIX,),
                dtype=torch_dtype,
            )
            if fresh:
                model.config.pointer_head_trained = False
            tokenizer = AutoTokenizer.from_pretrained(name_or_path)
            try:
                image_processor = Qwen2VLImageProcessorPil.from_pretrained(name_or_path)
            except OSError:
                image_processor = Qwen2VLImageProcessorPil()
            if getattr(model.config, "v2p_token_ids", None) is None:  # base, or a released save
                add_pointer_tokens(model, tokenizer)
    if require_trained_head and not head_trained(model):
        raise UntrainedHeadError(
            f"'{name_or_path}' has no trained action head (a fresh, random one would point "
            "anywhere): give a V2P / GUI-Actor checkpoint or a v2p.train output, or set "
            "allow_untrained_head=true to run it anyway"
        )
    return model.to(device=device, dtype=torch_dtype).eval(), tokenizer, image_processor


@contextmanager
def _fresh_head_seed(seed: int | None) -> Iterator[None]:
    """Torch's RNG seeded with ``seed`` inside (None: untouched), the caller's RNG kept."""
    import torch

    if seed is None:
        yield
        return
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def save_v2p(model: Any, tokenizer: Any, image_processor: Any, path: Path) -> Path:
    """Everything ``load_v2p`` needs, in one directory (weights in the Hub / released layout)."""
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
