"""The one segment marker: think / call / custom spans of supervised text, as token masks.

Spans are found in the *text* (``<think>...</think>`` by default; an unclosed block runs to the
end) and mapped to tokens through character offsets, so they are right whatever the tokenizer
does at the tags' edges: with Qwen2.5- or Llama-3-style pre-tokenizers ``</think>`` merges with
the characters after it (``</think>\\n\\n`` is one token), which a search for the tags' token ids
never finds. hf-sft, LLaMA-Factory and every token loss get their masks here:
``segments[name]`` is the supervised tokens of that span kind and ``segments["call"]`` every other
supervised token. Supervised text that holds reasoning but gets no reasoning tokens is an error
(:class:`SegmentError`), never a silent plain cross-entropy.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from aworld_rl_core.errors import AworldError

IGNORE_INDEX = -100
"""The label of a position that carries no loss (PyTorch's cross-entropy default)."""
THINK_TAGS = ("<think>", "</think>")
DEFAULT_SEGMENTS: Mapping[str, tuple[str, str]] = {"think": THINK_TAGS}
Span = tuple[int, int]


class SegmentError(AworldError):
    """Segment masks do not match the text (reasoning text without reasoning tokens)."""


def tag_spans(text: str, open_tag: str, close_tag: str) -> list[Span]:
    """Character spans ``[start, end)`` of ``open_tag ... close_tag`` blocks, tags included; an
    unclosed block runs to the end of the text, and a close tag before any open tag ends a block
    that began before the text (a template whose generation prompt opens the reasoning)."""
    pattern = re.compile(re.escape(open_tag) + r".*?(?:" + re.escape(close_tag) + r"|\Z)", re.S)
    spans = [m.span() for m in pattern.finditer(text)]
    first_close = text.find(close_tag)
    if first_close >= 0 and (not spans or first_close < spans[0][0]):
        spans.insert(0, (0, first_close + len(close_tag)))
    return spans


def tokens_in(offsets: Sequence[tuple[int, int]], spans: Sequence[Span]) -> list[int]:
    """1 for every token whose characters overlap one of ``spans`` (0 for empty tokens)."""
    return [int(any(s < b and e > a for a, b in spans)) for s, e in offsets]


def text_masks(
    text: str,
    offsets: Sequence[tuple[int, int]],
    segments: Mapping[str, tuple[str, str]] = DEFAULT_SEGMENTS,
) -> dict[str, list[int]]:
    """Per segment kind, the tokens (by ``offsets`` into ``text``) inside its spans."""
    return {name: tokens_in(offsets, tag_spans(text, *tags)) for name, tags in segments.items()}


def token_offsets(tokenizer: Any, ids: Sequence[int]) -> tuple[str, list[tuple[int, int]]]:
    """The text of ``ids`` and each token's character span in it.

    Re-encoding the decoded text gives the offsets when it reproduces the ids (the usual case:
    the ids came from encoding a text); otherwise each token's span is grown from the decoded
    prefixes.
    """
    ids = list(ids)
    text = tokenizer.decode(ids, skip_special_tokens=False)
    encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    if list(encoded["input_ids"]) == ids:
        return text, [tuple(o) for o in encoded["offset_mapping"]]
    offsets, end = [], 0
    for k in range(1, len(ids) + 1):
        prefix = tokenizer.decode(ids[:k], skip_special_tokens=False)
        start, end = min(end, len(prefix)), max(end, len(prefix))
        offsets.append((start, end))
    return text, offsets


def require_marked(
    text: str,
    masks: Mapping[str, Sequence[int]],
    segments: Mapping[str, tuple[str, str]] = DEFAULT_SEGMENTS,
) -> None:
    """Raise when supervised ``text`` holds a segment's span but ``masks`` (the supervised
    tokens' bits) mark none of its tokens."""
    for name, tags in segments.items():
        spans = tag_spans(text, *tags)
        if spans and not any(masks[name]):
            raise SegmentError(
                f"the supervised text holds {len(spans)} {tags[0]}...{tags[1]} span(s) but no "
                f"{name!r} token was marked (the tokenizer's offsets do not cover the tags): "
                f"{text[:120]!r}"
            )


def label_segments(
    tokenizer: Any,
    labels: Any,
    segments: Mapping[str, tuple[str, str]] = DEFAULT_SEGMENTS,
    ignore_index: int = IGNORE_INDEX,
) -> dict[str, Any]:
    """Bool masks ``[B, T]`` aligned with ``labels`` (LLaMA-Factory's collator output: ids of
    supervised positions, ``ignore_index`` elsewhere): each kind's supervised tokens, and
    ``call`` = the other supervised tokens. Each run of supervised labels is decoded and marked
    by character offsets."""
    import torch

    if labels.dim() != 2:
        raise ValueError(f"labels must be [batch, length], got shape {tuple(labels.shape)}")
    masks = {name: torch.zeros(labels.shape, dtype=torch.bool) for name in segments}
    for b, row in enumerate(labels.tolist()):
        for start, end in runs([t != ignore_index for t in row]):
            text, offsets = token_offsets(tokenizer, row[start:end])
            marked = text_masks(text, offsets, segments)
            require_marked(text, marked, segments)
            for name, bits in marked.items():
                masks[name][b, start:end] = torch.tensor(bits, dtype=torch.bool)
    supervised = (labels != ignore_index).cpu()
    out = {name: (mask & supervised).to(labels.device) for name, mask in masks.items()}
    taken = torch.zeros(labels.shape, dtype=torch.bool)
    for mask in out.values():
        taken |= mask.cpu()
    out["call"] = (supervised & ~taken).to(labels.device)
    return out


def shift_segments(logits: Any, labels: Any, masks: Mapping[str, Any]) -> tuple[Any, Any, dict]:
    """Align for next-token loss: ``logits[:, t]`` predicts ``labels[:, t]``.

    ``masks`` are token masks aligned with the unshifted sequence (hf-sft's, from the text);
    returns ``(logits[:, :-1], labels[:, 1:], segments)`` with each kind's supervised positions
    and ``call`` = the other supervised positions.
    """
    labels = labels[:, 1:]
    supervised = labels != IGNORE_INDEX
    out, taken = {}, None
    for name, mask in masks.items():
        marked = supervised & mask[:, 1:].bool()
        out[name] = marked
        taken = marked if taken is None else taken | marked
    out["call"] = supervised & ~taken if taken is not None else supervised
    return logits[:, :-1, :], labels, out


def runs(bits: Sequence[Any]) -> list[Span]:
    """[start, end) index ranges where ``bits`` is true."""
    runs, start = [], None
    for i, bit in enumerate([*bits, False]):
        if bit and start is None:
            start = i
        elif not bit and start is not None:
            runs.append((start, i))
            start = None
    return runs
