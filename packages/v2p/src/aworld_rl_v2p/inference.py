"""Batched grounding: one prefill per batch, the head run on that pass's hidden states.

The prompt holds the whole answer (``pyautogui.click(<pointer tokens>)``), so no token is
decoded: the backbone runs once over the padded batch, and the action head reads the hidden
state at each sample's ``<|pointer_pad|>`` and that sample's patch embeddings from the same
pass (no second ViT pass).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from aworld_rl_v2p.prompts import IMAGE, SYSTEM_PROMPT, render
from aworld_rl_v2p.readout import Point, RegionScore, predict_points

PAPER_MAX_PIXELS = 5_720_064  # 3192 x 1792 -> at most 7,296 visual tokens (the released scripts)
PAPER_MIN_PIXELS = 3136


@dataclass(frozen=True)
class Grounding:
    """The answer for one screenshot: ranked points and the attention map (rows, cols)."""

    points: list[Point]
    attention: np.ndarray
    resized: tuple[int, int]  # the model's view, (width, height) in pixels


@dataclass(frozen=True)
class ReadoutOptions:
    threshold: float = 0.3
    topk: int = 3
    region_score: RegionScore = "max"
    fallback: bool = False  # the peak patch when the centroid falls outside its region


def encode(
    tokenizer: Any,
    image_processor: Any,
    images: Sequence[Any],
    texts: Sequence[str],
    *,
    min_pixels: int,
    max_pixels: int,
) -> dict[str, torch.Tensor]:
    """Model inputs for (image, text) pairs; each text holds one image placeholder."""
    if len(images) != len(texts):
        raise ValueError(f"{len(images)} images but {len(texts)} texts")
    pad = "<|image_pad|>"
    vision = image_processor(
        images=[img.convert("RGB") for img in images],
        size={"shortest_edge": min_pixels, "longest_edge": max_pixels},
        return_tensors="pt",
    )
    merge = image_processor.merge_size**2
    expanded = []
    for text, grid in zip(texts, vision["image_grid_thw"], strict=True):
        if text.count(IMAGE) != 1:
            raise ValueError(f"each text needs exactly one {IMAGE} placeholder: {text[:80]!r}")
        expanded.append(text.replace(pad, pad * int(grid.prod().item() // merge)))
    enc = tokenizer(expanded, padding=True, padding_side="right", return_tensors="pt")
    image_id = tokenizer.convert_tokens_to_ids(pad)
    return {
        "input_ids": enc["input_ids"],
        "attention_mask": enc["attention_mask"],
        "mm_token_type_ids": (enc["input_ids"] == image_id).int(),
        "pixel_values": vision["pixel_values"],
        "image_grid_thw": vision["image_grid_thw"],
    }


class Grounder:
    """Predict click points for (screenshot, instruction) pairs with a V2P model."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        image_processor: Any,
        *,
        min_pixels: int = PAPER_MIN_PIXELS,
        max_pixels: int = PAPER_MAX_PIXELS,
        system: str = SYSTEM_PROMPT,
        readout: ReadoutOptions | None = None,
        calibration: Any = None,
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.image_processor = image_processor
        self.min_pixels, self.max_pixels = min_pixels, max_pixels
        self.system = system
        self.readout = readout or ReadoutOptions()
        self.calibration = calibration  # calibration.Calibration: confidence -> p(hit)

    def encode(self, images: Sequence[Any], instructions: Sequence[str]) -> dict[str, torch.Tensor]:
        texts = [render(i, system=self.system) for i in instructions]
        batch = encode(
            self.tokenizer,
            self.image_processor,
            images,
            texts,
            min_pixels=self.min_pixels,
            max_pixels=self.max_pixels,
        )
        device = next(self.model.parameters()).device
        return {k: v.to(device) for k, v in batch.items()}

    @torch.no_grad()
    def attention(self, images: Sequence[Any], instructions: Sequence[str]) -> list[np.ndarray]:
        """Each sample's attention map (rows, cols), from one prefill of the whole batch."""
        self.model.eval()
        encoded = self.model.encode(**self.encode(images, instructions))
        maps = []
        for logits, (rows, cols) in zip(
            self.model.pointer_logits(encoded), encoded.grids, strict=True
        ):
            probs = logits[0].float().softmax(-1)  # the first pointer token is the click
            maps.append(probs.reshape(rows, cols).cpu().numpy())
        return maps

    def predict(self, images: Sequence[Any], instructions: Sequence[str]) -> list[Grounding]:
        out = []
        for attn in self.attention(images, instructions):
            points = predict_points(
                attn,
                threshold=self.readout.threshold,
                topk=self.readout.topk,
                region_score=self.readout.region_score,
                fallback=self.readout.fallback,
            )
            if self.calibration is not None:
                points = [
                    dataclasses.replace(p, confidence=self.calibration.apply(p.confidence))
                    for p in points
                ]
            rows, cols = attn.shape
            out.append(Grounding(points, attn, (cols * 28, rows * 28)))
        return out
