"""Vision-language SFT data: records with image content parts -> processor batches.

A record's messages carry images as OpenAI content lists::

    {"role": "user", "content": [{"type": "image", "image": "shot.png"},
                                 {"type": "text", "text": "Click the search box."}]}

(``image`` is a local path, bytes or a PIL image; ``{"type": "image_url", "image_url": {"url":
"file://..." | "data:image/png;base64,..."}}`` works too). :class:`VisionCollator` renders the
conversation with the chat template (image parts become ``<|image_pad|>`` placeholders),
expands each placeholder to the image's patch count (Qwen2-VL's rule), labels the assistant's
tokens only, marks segments, and passes the row's other fields through under their own names
for a model-level loss (V2P's ``pointer_boxes``). Images are loaded per batch.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from aworld_rl_core.records.record import RecordError
from aworld_rl_core.segments import DEFAULT_SEGMENTS, IGNORE_INDEX

ROW_KEYS = frozenset({"messages", "tools", "id"})
"""Row fields the collator consumes; every other field is passed through to the batch."""


def image_parts(messages: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The image content parts of a conversation, in order."""
    parts = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            parts += [p for p in content if p.get("type") in ("image", "image_url")]
    return parts


def has_images(rows: Sequence[Mapping[str, Any]]) -> bool:
    return any(isinstance(r, Mapping) and image_parts(r.get("messages") or []) for r in rows)


def load_image(part: Mapping[str, Any]) -> Any:
    """The PIL image (RGB) of an image part; a clear error for what cannot be read here."""
    from PIL import Image

    if part.get("type") == "image_url":
        url = (part.get("image_url") or {}).get("url", "")
        if url.startswith("data:"):
            source: Any = io.BytesIO(base64.b64decode(url.split(",", 1)[1]))
        elif url.startswith("file://"):
            source = url[len("file://") :]
        else:
            raise RecordError(
                f"image_url {url[:60]!r}: only file:// and data: URLs are read (download remote "
                "images first)"
            )
    else:
        source = part.get("image")
        if isinstance(source, bytes):
            source = io.BytesIO(source)
        elif hasattr(source, "convert"):  # already a PIL image
            return source.convert("RGB")
        elif not isinstance(source, (str, Path)):
            raise RecordError(f"an image part needs 'image' (a path, bytes or PIL image): {part}")
    try:
        with Image.open(source) as image:
            return image.convert("RGB")
    except (OSError, ValueError) as exc:
        raise RecordError(f"cannot read the image {str(source)[:80]!r}: {exc}") from None


class VisionCollator:
    """Records with images -> ``input_ids``, ``attention_mask``, ``labels`` (assistant tokens
    only), ``segment_<name>`` masks, ``pixel_values``, ``image_grid_thw``, ``mm_token_type_ids``
    (1 at image pads: Qwen2.5-VL computes its 3-D M-RoPE positions only when they are given)
    and the rows' other fields (as lists).

    ``processor`` has a ``tokenizer`` (with the chat template) and an ``image_processor`` of the
    Qwen2-VL family (``models.load_processor`` gives one on CPU and GPU). ``max_pixels`` /
    ``min_pixels`` override the image processor's resize bounds. A sample longer than
    ``max_length`` is an error (an image's tokens cannot be cut).
    """

    def __init__(
        self,
        processor: Any,
        *,
        max_length: int = 8192,
        segments: Mapping[str, tuple[str, str]] = DEFAULT_SEGMENTS,
        max_pixels: int | None = None,
        min_pixels: int | None = None,
    ) -> None:
        self.tokenizer = processor.tokenizer
        self.image_processor = processor.image_processor
        self.image_token = getattr(processor, "image_token", None) or "<|image_pad|>"
        self.image_token_id = self.tokenizer.convert_tokens_to_ids(self.image_token)
        self.max_length = max_length
        self.segments = dict(segments)
        self.size: dict[str, int] = {}
        if max_pixels is not None:
            self.size["longest_edge"] = max_pixels
        if min_pixels is not None:
            self.size["shortest_edge"] = min_pixels

    def encode(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """One row's features (text side as lists, image side as tensors)."""
        from aworld_rl_core.backends.sft_data import (
            SEGMENT_PREFIX,
            conversation_texts,
            row_messages_and_tools,
            text_sample,
        )

        messages, tools = row_messages_and_tools(row)
        [(text, spans)] = conversation_texts(self.tokenizer, messages, tools, per_turn=False)
        images = [load_image(p) for p in image_parts(messages)]
        pad = self.image_token
        if text.count(pad) != len(images):
            raise RecordError(
                f"the chat template rendered {text.count(pad)} {pad} placeholders for "
                f"{len(images)} images: use a template that renders image parts (core's does)"
            )
        vision: dict[str, Any] = {}
        if images:
            kwargs = {"size": {**self._default_size(), **self.size}} if self.size else {}
            vision = dict(self.image_processor(images=images, return_tensors="pt", **kwargs))
            merge = self.image_processor.merge_size**2
            counts = [int(grid.prod()) // merge for grid in vision["image_grid_thw"]]
            text, spans = expand_placeholders(text, spans, pad, counts)
        sample = text_sample(self.tokenizer, text, spans, self.segments)
        if len(sample.input_ids) > self.max_length:
            raise RecordError(
                f"row {row.get('id', '')!r}: {len(sample.input_ids)} tokens (images included) "
                f"exceed trainer.sft.max_length={self.max_length}; raise it or lower max_pixels"
            )
        extras = {k: v for k, v in row.items() if k not in ROW_KEYS}
        masks = {SEGMENT_PREFIX + n: bits for n, bits in sample.segments.items()}
        return {"input_ids": sample.input_ids, "labels": sample.labels, **masks, **vision, **extras}

    def _default_size(self) -> dict[str, int]:
        size = getattr(self.image_processor, "size", None)
        return {k: v for k, v in dict(size or {}).items() if v is not None}

    def __call__(self, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        import torch

        from aworld_rl_core.backends.sft_data import SEGMENT_PREFIX

        features = [self.encode(row) for row in rows]
        width = max(len(f["input_ids"]) for f in features)
        pad_id = self.tokenizer.pad_token_id

        def pad(key: str, value: int) -> Any:
            return torch.tensor(
                [list(f[key]) + [value] * (width - len(f[key])) for f in features],
                dtype=torch.long,
            )

        batch: dict[str, Any] = {
            "input_ids": pad("input_ids", pad_id),
            "attention_mask": torch.tensor(
                [[1] * len(f["input_ids"]) + [0] * (width - len(f["input_ids"])) for f in features]
            ),
            "labels": pad("labels", IGNORE_INDEX),
        }
        batch.update({k: pad(k, 0) for k in features[0] if k.startswith(SEGMENT_PREFIX)})
        with_images = [f for f in features if "pixel_values" in f]
        if with_images:
            batch["pixel_values"] = torch.cat([f["pixel_values"] for f in with_images])
            batch["image_grid_thw"] = torch.cat([f["image_grid_thw"] for f in with_images])
            batch["mm_token_type_ids"] = mm_token_type_ids(batch["input_ids"], self.image_token_id)
        for key in sorted({k for f in features for k in f} - set(batch)):
            if key in ("pixel_values", "image_grid_thw") or key.startswith(SEGMENT_PREFIX):
                continue
            batch[key] = [f.get(key) for f in features]
        return batch


def expand_placeholders(
    text: str, spans: Sequence[tuple[int, int]], pad: str, counts: Sequence[int]
) -> tuple[str, list[tuple[int, int]]]:
    """Replace the k-th ``pad`` with ``counts[k]`` pads, shifting the character ``spans``."""
    pieces, shifts, at = [], [], 0
    for count in counts:
        found = text.index(pad, at)
        pieces.append(text[at:found] + pad * count)
        shifts.append((found + len(pad), (count - 1) * len(pad)))
        at = found + len(pad)
    pieces.append(text[at:])

    def moved(position: int) -> int:
        return position + sum(extra for where, extra in shifts if where <= position)

    return "".join(pieces), [(moved(s), moved(e)) for s, e in spans]


def mm_token_type_ids(input_ids: Any, image_token_id: int) -> Any:
    """Modality types per token, as transformers' processors make them: 1 at image pads, 0
    elsewhere (a ``[B, T]`` long tensor)."""
    return (input_ids == image_token_id).long()
