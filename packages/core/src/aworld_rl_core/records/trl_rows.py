"""Records -> TRL dataset rows (conversational formats).

``kind="messages"`` (SFT): ``{"messages", "tools", ...}``; ``kind="prompt_completion"``:
``{"prompt", "completion", "tools", ...}`` (the completion starts at the first assistant turn);
``kind="prompt"`` (GRPO): ``{"prompt", "tools", ...}``. Every row also has ``id``,
``data_source`` and ``ground_truth``.

Shapes that vary between rows are JSON strings so they survive Arrow (``datasets``) unchanged:
``tools`` (TRL decodes a JSON string itself), tool-call ``arguments`` (the OpenAI wire format)
and ``ground_truth`` (reward functions decode it with ``json.loads``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from aworld_rl_core.records.record import RecordError, ToolUseRecord, as_record

TrlKind = Literal["messages", "prompt_completion", "prompt"]
KINDS = ("messages", "prompt_completion", "prompt")


def trl_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """A message in TRL's shape: ``content`` always a string, call arguments JSON strings."""
    out = dict(message)
    out["content"] = message.get("content", "")
    if "tool_calls" in message:
        out["tool_calls"] = [
            {
                **call,
                "function": {
                    "name": call["function"]["name"],
                    "arguments": _json_text(call["function"]["arguments"]),
                },
            }
            for call in message["tool_calls"]
        ]
    return out


def to_trl_row(item: ToolUseRecord | Mapping[str, Any], kind: TrlKind = "messages") -> dict:
    """One record as a TRL row of the given ``kind``."""
    if kind not in KINDS:
        raise RecordError(f"unknown TRL row kind {kind!r}: use one of {', '.join(KINDS)}")
    record = as_record(item)
    messages = [trl_message(m) for m in record.messages]
    n_prompt = len(record.prompt_messages())
    if kind != "messages" and n_prompt == 0:
        raise RecordError(f"record {record.id!r}: no prompt before the first assistant turn")
    if kind == "prompt_completion" and n_prompt == len(messages):
        raise RecordError(f"record {record.id!r}: no assistant turn to use as the completion")
    row: dict[str, Any]
    if kind == "messages":
        row = {"messages": messages}
    elif kind == "prompt_completion":
        row = {"prompt": messages[:n_prompt], "completion": messages[n_prompt:]}
    else:
        row = {"prompt": messages[:n_prompt]}
    row["tools"] = json.dumps(record.tools, ensure_ascii=False)
    row["id"] = record.id
    row["data_source"] = record.data_source
    row["ground_truth"] = json.dumps(record.ground_truth, ensure_ascii=False)
    return row


def to_trl_rows(
    records: Iterable[ToolUseRecord | Mapping[str, Any]], kind: TrlKind = "messages"
) -> list[dict[str, Any]]:
    """Records as TRL rows (``datasets.Dataset.from_list(rows)`` gives the dataset)."""
    return [to_trl_row(r, kind) for r in records]


def _json_text(arguments: Any) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
