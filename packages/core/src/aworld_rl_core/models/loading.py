"""Loading the model, tokenizer and processor a ``ModelConfig`` names.

``model.name_or_path`` is a local directory, a Hugging Face hub id (``Qwen/Qwen2.5-7B-Instruct``;
with ``HF_HUB_OFFLINE=1`` only what the local cache holds) or ``tiny:<arch>`` (a tiny random
model, built offline: ``tiny:qwen3``, ``tiny:qwen2``, ``tiny:qwen2_5_vl``; the text ones take a
size, ``tiny:qwen3:hidden=128,layers=4``). Like a hub id, a tiny name means fixed weights
(``seed`` 0 by default). Anything else is an error that names the
value and the options.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aworld_rl_core.errors import ConfigError
from aworld_rl_core.models.tiny import (
    TEXT_ARCHS,
    TINY_ARCHS,
    TINY_PREFIX,
    VISION_ARCHS,
    parse_tiny,
    tiny_image_processor,
    tiny_model_dir,
    tiny_tokenizer,
)

if TYPE_CHECKING:
    from aworld_rl_core.models.config import ModelConfig

_DTYPES = {"float32", "bfloat16", "float16"}


def is_tiny(name_or_path: str) -> bool:
    return name_or_path.startswith(TINY_PREFIX)


def tiny_arch(name: str, allowed: tuple[str, ...] = TINY_ARCHS) -> str:
    """The architecture of a ``tiny:<arch>[:<size>]`` name, or a clear error."""
    return parse_tiny(tiny_spec(name, allowed), allowed)[0]


def tiny_spec(name: str, allowed: tuple[str, ...] = TINY_ARCHS) -> str:
    """What follows ``tiny:`` (the architecture and any size), checked: the argument of
    :func:`tiny_model_dir`."""
    spec = name[len(TINY_PREFIX) :]
    arch = spec.partition(":")[0]
    if arch not in allowed:
        raise ValueError(
            f"unknown tiny model {name!r}: use one of "
            + ", ".join(TINY_PREFIX + a for a in allowed)
            + f" (a text model may take a size: {TINY_PREFIX}qwen3:hidden=128,layers=4)"
        )
    parse_tiny(spec, allowed)
    return spec


def check_source(value: str, key: str = "model.name_or_path") -> str:
    """``value`` if it is ``tiny:<arch>``, an existing directory or a valid hub id."""
    if is_tiny(value):
        tiny_arch(value)
        return value
    path = Path(value).expanduser()
    if path.is_dir():
        return value
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(value)
    except HFValidationError:
        where = "does not exist" if not path.exists() else "is a file, not a model directory"
        raise ConfigError(
            f"{key}={value!r} is neither an existing directory ({where}) nor a valid Hugging "
            "Face hub id: give the path of a model directory (config.json, weights, tokenizer) "
            "or a hub id such as Qwen/Qwen2.5-0.5B-Instruct (tiny:qwen3 for a tiny random model)"
        ) from None
    return value


def offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").lower() in {"1", "true", "yes", "on"}


def _from_pretrained(loader: Any, source: str | Path, key: str, **kwargs: Any) -> Any:
    try:
        return loader.from_pretrained(source, local_files_only=offline(), **kwargs)
    except OSError as exc:
        cache = " and HF_HUB_OFFLINE=1 allows only the local cache" if offline() else ""
        raise OSError(
            f"cannot load {key}={str(source)!r} ({type(exc).__name__}: {str(exc)[:300]}): it is "
            f"not a local directory here{cache}; give a model directory or a hub id you can "
            "download"
        ) from exc


def _torch_dtype(name: str) -> Any:
    import torch

    return getattr(torch, name) if name in _DTYPES else "auto"


def load_tokenizer(model_cfg: ModelConfig) -> Any:
    """The tokenizer a ``ModelConfig`` names (tiny, its own path, or ``model.tokenizer``)."""
    key = "model.tokenizer" if model_cfg.tokenizer else "model.name_or_path"
    source = check_source(model_cfg.tokenizer or model_cfg.name_or_path, key)
    if is_tiny(source):
        tokenizer = tiny_tokenizer(parse_tiny(tiny_spec(source))[1].vocab)
    else:
        from transformers import AutoTokenizer

        tokenizer = _from_pretrained(AutoTokenizer, source, key)
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


def model_dir(model_cfg: ModelConfig, seed: int = 0) -> str | Path:
    """Where the model's weights load from: the tiny model's saved directory, or the value."""
    source = check_source(model_cfg.name_or_path)
    if is_tiny(source):
        # From its saved directory, so the model has a real name_or_path (TRL rebuilds reference
        # models from it); the weights equal the tiny builder's with this seed.
        return tiny_model_dir(tiny_spec(source), seed)
    return source


def load_model_and_tokenizer(model_cfg: ModelConfig, seed: int = 0) -> tuple[Any, Any]:
    """The causal LM and tokenizer a ``ModelConfig`` names (``tiny:qwen3`` / ``tiny:qwen2``
    build the tiny random model; anything else goes to ``AutoModelForCausalLM``)."""
    from transformers import AutoModelForCausalLM

    return _load(AutoModelForCausalLM, model_cfg, seed, TEXT_ARCHS, load_tokenizer)


def _load(loader: Any, model_cfg: ModelConfig, seed: int, archs: tuple, companion: Any) -> Any:
    """``(model, companion(model_cfg))`` with the weights from :func:`model_dir`."""
    if is_tiny(model_cfg.name_or_path):
        tiny_arch(model_cfg.name_or_path, archs)
    other = companion(model_cfg)
    dtype = _torch_dtype(model_cfg.dtype)
    source = model_dir(model_cfg, seed)
    return _from_pretrained(loader, source, "model.name_or_path", dtype=dtype), other


def load_processor(model_cfg: ModelConfig) -> Any:
    """The processor of a vision-language model: transformers' ``AutoProcessor`` where it loads
    (it needs torchvision for Qwen2-VL's video half), else an :class:`ImageTextProcessor` of the
    tokenizer and the PIL image processor (CPU)."""
    from aworld_rl_core.models.processor import ImageTextProcessor

    source = check_source(model_cfg.name_or_path)
    tokenizer = load_tokenizer(model_cfg)
    if is_tiny(source):
        tiny_arch(source, VISION_ARCHS)
        return ImageTextProcessor(tokenizer, tiny_image_processor())
    from transformers import AutoProcessor

    try:
        processor = _from_pretrained(AutoProcessor, source, "model.name_or_path")
    except (ImportError, ValueError, AttributeError):  # no torchvision: the image half only
        from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import (
            Qwen2VLImageProcessorPil,
        )

        image_processor = _from_pretrained(Qwen2VLImageProcessorPil, source, "model.name_or_path")
        return ImageTextProcessor(tokenizer, image_processor)
    processor.tokenizer = tokenizer  # model.tokenizer / model.chat_template apply here too
    return processor


def load_vision_model(model_cfg: ModelConfig, seed: int = 0) -> tuple[Any, Any]:
    """The vision-language model and its processor (``tiny:qwen2_5_vl``: the tiny Qwen2.5-VL)."""
    from transformers import AutoModelForImageTextToText

    return _load(AutoModelForImageTextToText, model_cfg, seed, VISION_ARCHS, load_processor)


def inherit_weight_conversions(cls: type) -> type:
    """Give a subclass of a transformers model its base class's checkpoint key conversions.

    transformers looks the Hub-layout renaming up by the class name (``model.layers.*`` ->
    ``model.language_model.layers.*`` for the Qwen VL family, for example) and applies it on
    load and, reversed, on save. A subclass with another name gets none, so a Hub-layout
    checkpoint loads with its language model freshly initialised. This registers, under the
    subclass's name, the conversions of the nearest base class that has some (idempotent; a
    class decorator). Returns ``cls``.
    """
    from transformers import conversion_mapping as cm

    if cm.get_checkpoint_conversion_mapping(cls.__name__) is not None:
        return cls
    for base in cls.__mro__[1:]:
        conversions = cm.get_checkpoint_conversion_mapping(base.__name__)
        if conversions is not None:
            cm.register_checkpoint_conversion_mapping(cls.__name__, conversions)
            break
    return cls


def from_pretrained_strict(
    cls: Any, source: str | Path, *, allow_missing: tuple[str, ...] = (), **kwargs: Any
) -> tuple[Any, list[str]]:
    """``cls.from_pretrained(source)`` where a weight missing from the checkpoint is an error.

    transformers only logs missing weights (they are freshly initialised); here any missing
    key that does not start with one of ``allow_missing`` raises, naming the keys. Returns the
    model and the allowed keys that were missing (so a caller knows what is untrained).
    Unexpected (unused) checkpoint keys are errors too: they mean a layout mismatch.
    """
    model, info = _from_pretrained(
        cls, source, "model.name_or_path", output_loading_info=True, **kwargs
    )
    missing = sorted(info.get("missing_keys") or ())
    unexpected = sorted(info.get("unexpected_keys") or ())
    allowed = [k for k in missing if k.startswith(allow_missing)] if allow_missing else []
    bad = [k for k in missing if k not in allowed]
    mismatched = sorted(str(k) for k in info.get("mismatched_keys") or ())
    if bad or unexpected or mismatched:
        parts = [
            f"{len(bad)} weight(s) missing from the checkpoint (e.g. {bad[:4]})" if bad else "",
            f"{len(unexpected)} unused checkpoint key(s) (e.g. {unexpected[:4]})"
            if unexpected
            else "",
            f"shape mismatches {mismatched[:4]}" if mismatched else "",
        ]
        raise ValueError(
            f"'{source}' does not fit {cls.__name__}: "
            + "; ".join(p for p in parts if p)
            + ". The checkpoint is of another architecture or key layout; loading it would "
            "leave these weights random"
        )
    return model, allowed


def resolve_device(device: str = "auto", dtype: str = "auto") -> tuple[str, str]:
    """(device, dtype) with ``auto`` resolved: CUDA in bfloat16 where a GPU is present, else
    CPU in float32. An explicit ``cuda`` without a GPU is an error naming the fix."""
    import torch

    has_cuda = torch.cuda.is_available()
    if device == "auto":
        device = "cuda" if has_cuda else "cpu"
    if device.startswith("cuda") and not has_cuda:
        raise ValueError(f"device={device!r} but no CUDA GPU is visible: use device=cpu or auto")
    if device.split(":")[0] not in ("cpu", "cuda", "mps"):
        raise ValueError(f"unknown device {device!r}: use auto, cpu, cuda or cuda:N")
    if dtype == "auto":
        dtype = "bfloat16" if device.startswith("cuda") else "float32"
    if dtype not in _DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}: use auto, {', '.join(sorted(_DTYPES))}")
    return device, dtype
