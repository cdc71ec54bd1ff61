"""SFT data: render chat records, label the assistant's tokens, mark segments (``<think>``...).

Assistant spans come from the chat template's ``{% generation %}`` markers when it has them
(``return_assistant_tokens_mask``), otherwise from rendering prefixes: the text added by
``messages[:i+1]`` after ``messages[:i]`` plus the generation prompt is assistant turn ``i``
(up to and including the end-of-turn token). With ``per_turn`` a conversation with K assistant
turns gives K samples; sample k ends with turn k, and only turn k carries labels. Every span is
a character span of the rendered text, mapped to tokens by offsets; segment masks come from
``aworld_rl_core.segments`` (the one marker).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aworld_rl_core.records.record import RecordError, ToolUseRecord
from aworld_rl_core.segments import (
    DEFAULT_SEGMENTS,
    IGNORE_INDEX,
    Span,
    require_marked,
    runs,
    text_masks,
    tokens_in,
)

_GENERATION_TAG = re.compile(r"\{%-?\s*generation\s*-?%\}")
SEGMENT_PREFIX = "segment_"
"""Feature name prefix of a segment mask (``segment_think``)."""


@dataclass
class SftSample:
    """One training sequence: token ids, labels (-100 = no loss) and the segment masks."""

    input_ids: list[int]
    labels: list[int]
    segments: dict[str, list[int]]

    def as_features(self) -> dict[str, list[int]]:
        masks = {SEGMENT_PREFIX + name: bits for name, bits in self.segments.items()}
        return {"input_ids": self.input_ids, "labels": self.labels, **masks}

    def cut(self, length: int) -> SftSample:
        return SftSample(
            self.input_ids[:length],
            self.labels[:length],
            {name: bits[:length] for name, bits in self.segments.items()},
        )


@dataclass
class SftStats:
    """Counts from building samples."""

    rows: int = 0
    samples: int = 0
    truncated: int = 0
    dropped: int = 0
    supervised_tokens: int = 0
    notes: list[str] = field(default_factory=list)


def row_messages_and_tools(row: Mapping[str, Any]) -> tuple[list[dict], list[dict]]:
    """Validated ``messages`` and ``tools`` of a training row (a record dict or a TRL row)."""
    if not isinstance(row, Mapping) or "messages" not in row:
        raise RecordError(
            "an SFT row needs 'messages' (a core record dict, see aworld_rl_core.records)"
        )
    tools = row.get("tools") or []
    if isinstance(tools, str):
        tools = json.loads(tools) if tools.strip() else []
    record = ToolUseRecord(messages=row["messages"], tools=tools, id=str(row.get("id") or ""))
    return record.messages, record.tools


def has_generation_markers(tokenizer: Any) -> bool:
    """Whether the tokenizer's chat template marks assistant text with ``{% generation %}``."""
    template = tokenizer.chat_template
    return isinstance(template, str) and bool(_GENERATION_TAG.search(template))


def _render(tokenizer: Any, messages: Sequence[Mapping], tools: list, **kwargs: Any) -> str:
    return tokenizer.apply_chat_template(
        list(messages), tools=tools or None, tokenize=False, **kwargs
    )


def _encode(tokenizer: Any, text: str) -> tuple[list[int], list[tuple[int, int]]]:
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    return list(enc["input_ids"]), [tuple(o) for o in enc["offset_mapping"]]


def _turn_end(text: str, start: int, eos: str | None) -> int:
    """End of an assistant turn rendered from ``start``: after its end-of-turn token."""
    if eos:
        found = text.find(eos, start)
        if found >= 0:
            return found + len(eos)
    return len(text.rstrip("\n"))


def _prefix_spans(
    tokenizer: Any, messages: list[dict], tools: list, turns: list[int]
) -> list[tuple[str, list[tuple[int, int]]]]:
    """For each of ``turns`` (assistant indices): the text through that turn and its char span."""
    out = []
    for i in turns:
        prefix = _render(tokenizer, messages[:i], tools, add_generation_prompt=True)
        through = _render(tokenizer, messages[: i + 1], tools)
        if not through.startswith(prefix):
            raise RecordError(
                "the chat template renders an assistant turn differently from its generation "
                "prompt, so the assistant tokens cannot be located; set model.chat_template to a "
                "template with {% generation %} markers"
            )
        out.append((through, [(len(prefix), _turn_end(through, len(prefix), tokenizer.eos_token))]))
    return out


def conversation_texts(
    tokenizer: Any, messages: list[dict], tools: list, *, per_turn: bool
) -> list[tuple[str, list[Span]]]:
    """The rendered text of each sample of a conversation and its assistant character spans."""
    turns = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
    if not turns:
        raise RecordError("an SFT conversation needs at least one assistant message")
    messages = messages[: turns[-1] + 1]
    if has_generation_markers(tokenizer):
        text = _render(tokenizer, messages, tools)
        ids, offsets = _encode(tokenizer, text)
        marked = tokenizer.apply_chat_template(
            messages,
            tools=tools or None,
            tokenize=True,
            return_dict=True,
            return_assistant_tokens_mask=True,
        )
        if list(marked["input_ids"]) != ids:
            raise RecordError("the chat template's token ids differ from the rendered text's")
        marked_runs = runs(marked["assistant_masks"])
        if len(marked_runs) != len(turns):
            raise RecordError(
                f"the chat template marked {len(marked_runs)} assistant spans for {len(turns)} "
                "assistant messages; check its {% generation %} markers"
            )
        spans = [(offsets[start][0], offsets[end - 1][1]) for start, end in marked_runs]
        if per_turn:
            return [(text[:end], [(start, end)]) for start, end in spans]
        return [(text, spans)]
    if per_turn:  # end the sample with its turn, as above
        prefixes = _prefix_spans(tokenizer, messages, tools, turns)
        return [(through[: span[0][1]], span) for through, span in prefixes]
    text = _render(tokenizer, messages, tools)
    char_spans = []
    for through, span in _prefix_spans(tokenizer, messages, tools, turns):
        if not text.startswith(through):
            raise RecordError(
                "the chat template rewrites earlier turns (e.g. drops their <think> blocks), so "
                "a whole conversation cannot be one sample; use trainer.sft.per_turn=true or a "
                "template with {% generation %} markers"
            )
        char_spans += span
    return [(text, char_spans)]


def text_sample(
    tokenizer: Any,
    text: str,
    spans: Sequence[Span],
    segments: Mapping[str, tuple[str, str]] = DEFAULT_SEGMENTS,
) -> SftSample:
    """The sample of a rendered text: labels on the tokens of ``spans``, segment masks, and the
    check that supervised reasoning text got reasoning tokens."""
    ids, offsets = _encode(tokenizer, text)
    supervised = tokens_in(offsets, spans)
    masks = text_masks(text, offsets, segments)
    for start, end in spans:
        inside = [i for i, (a, b) in enumerate(offsets) if a < end and b > start]
        turn_masks = {name: [bits[i] for i in inside] for name, bits in masks.items()}
        require_marked(text[start:end], turn_masks, segments)
    labels = [t if bit else IGNORE_INDEX for t, bit in zip(ids, supervised, strict=True)]
    return SftSample(input_ids=list(ids), labels=labels, segments=masks)


def conversation_samples(
    tokenizer: Any,
    messages: list[dict],
    tools: list,
    *,
    per_turn: bool,
    segments: Mapping[str, tuple[str, str]] = DEFAULT_SEGMENTS,
) -> list[SftSample]:
    """Samples for one conversation (labels only on assistant tokens)."""
    return [
        text_sample(tokenizer, text, spans, segments)
        for text, spans in conversation_texts(tokenizer, messages, tools, per_turn=per_turn)
    ]


def build_samples(
    rows: Iterable[Mapping[str, Any]],
    tokenizer: Any,
    *,
    max_length: int,
    per_turn: bool,
    segments: Mapping[str, tuple[str, str]] = DEFAULT_SEGMENTS,
) -> tuple[list[SftSample], SftStats]:
    """Tokenize training rows; samples over ``max_length`` are cut, and dropped if no labels
    remain."""
    if max_length < 2:
        raise ValueError(f"trainer.sft.max_length must be at least 2, got {max_length}")
    stats = SftStats()
    samples = []
    for index, row in enumerate(rows):
        stats.rows += 1
        try:
            messages, tools = row_messages_and_tools(row)
            made = conversation_samples(
                tokenizer, messages, tools, per_turn=per_turn, segments=segments
            )
        except RecordError as exc:
            raise RecordError(f"training row {index}: {exc}") from None
        for sample in made:
            if len(sample.input_ids) > max_length:
                stats.truncated += 1
                sample = sample.cut(max_length)
            n_labels = sum(label != IGNORE_INDEX for label in sample.labels[1:])
            if n_labels == 0:
                stats.dropped += 1
                continue
            stats.supervised_tokens += n_labels
            samples.append(sample)
    stats.samples = len(samples)
    if stats.dropped:
        stats.notes.append(
            f"{stats.dropped} samples had no assistant tokens within trainer.sft.max_length="
            f"{max_length} and were dropped"
        )
    return samples, stats


class SftCollator:
    """Right-pads ``input_ids`` (pad id), ``labels`` (-100) and segment masks (0)."""

    def __init__(self, pad_token_id: int) -> None:
        self.pad_token_id = pad_token_id

    def __call__(self, features: Sequence[Mapping[str, Sequence[int]]]) -> dict[str, Any]:
        import torch

        width = max(len(f["input_ids"]) for f in features)

        def pad(key: str, value: int) -> Any:
            return torch.tensor(
                [list(f[key]) + [value] * (width - len(f[key])) for f in features],
                dtype=torch.long,
            )

        masks = {key: pad(key, 0) for key in features[0] if key.startswith(SEGMENT_PREFIX)}
        attention = torch.tensor(
            [[1] * len(f["input_ids"]) + [0] * (width - len(f["input_ids"])) for f in features],
            dtype=torch.long,
        )
        return {
            "input_ids": pad("input_ids", self.pad_token_id),
            "attention_mask": attention,
            "labels": pad("labels", IGNORE_INDEX),
            **masks,
        }
