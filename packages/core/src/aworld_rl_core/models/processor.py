"""A processor for Qwen2-VL-family models made of a tokenizer and an image processor.

transformers' own ``Qwen2_5_VLProcessor`` needs a video processor, which needs torchvision (not
installable with the CPU torch build here). This class does the image half of what it does:
each ``<|image_pad|>`` placeholder in the text becomes as many pads as the image has merged
patches, and the image processor's ``pixel_values`` / ``image_grid_thw`` come along.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

IMAGE_PAD = "<|image_pad|>"


class ImageTextProcessor:
    """``processor(text=..., images=...)`` -> ``input_ids``, ``attention_mask``,
    ``pixel_values``, ``image_grid_thw`` (images in the order their placeholders appear) and
    ``mm_token_type_ids`` (1 at image pads, as ``Qwen2_5_VLProcessor`` gives them: without
    them Qwen2.5-VL silently falls back to 1-D positions)."""

    def __init__(self, tokenizer: Any, image_processor: Any, *, image_token: str = IMAGE_PAD):
        self.tokenizer = tokenizer
        self.image_processor = image_processor
        self.image_token = image_token

    @property
    def chat_template(self) -> str | None:
        return self.tokenizer.chat_template

    def apply_chat_template(self, conversation: Any, **kwargs: Any) -> Any:
        return self.tokenizer.apply_chat_template(conversation, **kwargs)

    def __call__(
        self,
        text: str | Sequence[str],
        images: Sequence[Any] | None = None,
        *,
        return_tensors: str | None = "pt",
        **tokenizer_kwargs: Any,
    ) -> dict[str, Any]:
        texts = [text] if isinstance(text, str) else list(text)
        images = list(images or [])
        pad = self.image_token
        placeholders = sum(t.count(pad) for t in texts)
        if placeholders != len(images):
            raise ValueError(
                f"text has {placeholders} {pad} placeholders but {len(images)} images were "
                "given: put one placeholder per image"
            )
        vision: dict[str, Any] = {}
        if images:
            vision = dict(self.image_processor(images=images, return_tensors=return_tensors))
            merge = self.image_processor.merge_size**2
            counts = iter(int(grid.prod()) // merge for grid in vision["image_grid_thw"])
            texts = [_expand(t, pad, counts) for t in texts]
        encoded = dict(self.tokenizer(texts, return_tensors=return_tensors, **tokenizer_kwargs))
        if images:
            pad_id = self.tokenizer.convert_tokens_to_ids(pad)
            encoded["mm_token_type_ids"] = (
                (encoded["input_ids"] == pad_id).long()
                if return_tensors == "pt"
                else [[int(t == pad_id) for t in ids] for ids in encoded["input_ids"]]
            )
        return {**encoded, **vision}

    def save_pretrained(self, path: str | Path) -> None:
        self.tokenizer.save_pretrained(path)
        self.image_processor.save_pretrained(path)


def _expand(text: str, pad: str, counts: Any) -> str:
    parts = text.split(pad)
    out = parts[0]
    for rest in parts[1:]:
        out += pad * next(counts) + rest
    return out
