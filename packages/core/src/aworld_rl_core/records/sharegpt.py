"""Records -> LLaMA-Factory sharegpt data (roles human/gpt/function_call/observation).

A row is ``{"conversations": [{"from", "value"}, ...], "system": str, "tools": "<JSON list>"}``;
``dataset_info.json`` maps the dataset name to the file with ``formatting: sharegpt``.
LLaMA-Factory needs the turns to alternate (human|observation, then gpt|function_call) and to
end on the model's side; consecutive tool results become one observation joined the way
LLaMA-Factory joins them, and trailing non-assistant messages are dropped. A function_call turn
holds an optional thought, normalised to ``<think>\n...\n</think>\n\n`` (the only shape
LLaMA-Factory's function formatter accepts), then the call JSON.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from aworld_rl_core.records.record import (
    RecordError,
    ToolUseRecord,
    arguments_dict,
    as_record,
    text_content,
)

TOOL_RESPONSE_JOIN = "\n</tool_response>\n<tool_response>\n"
_THINK = re.compile(r"^\s*<think>(.*?)</think>\s*", re.DOTALL)
# LLaMA-Factory's function formatter only accepts a thought written as its ``thought_words``.
THOUGHT_OPEN, THOUGHT_CLOSE = "<think>\n", "\n</think>\n\n"


def dataset_info_entry(file_name: str) -> dict[str, Any]:
    """The ``dataset_info.json`` entry for one sharegpt file written by ``write_sharegpt``."""
    return {
        "file_name": file_name,
        "formatting": "sharegpt",
        "columns": {"messages": "conversations", "system": "system", "tools": "tools"},
    }


def to_sharegpt(
    item: ToolUseRecord | Mapping[str, Any], *, metadata_keys: Sequence[str] = ()
) -> dict[str, Any]:
    """One record as a LLaMA-Factory sharegpt row (plus ``metadata_keys`` of its metadata as
    columns of their own, e.g. a data-quality flag a user filters on; LLaMA-Factory reads only
    the columns ``dataset_info.json`` maps)."""
    record = as_record(item)
    where = f"record {record.id!r}" if record.id else "record"
    messages = list(record.messages)
    system = ""
    if messages[0]["role"] == "system":
        system = text_content(messages.pop(0), where)
    last_assistant = max(
        (i for i, m in enumerate(messages) if m["role"] == "assistant"), default=-1
    )
    if last_assistant < 0:
        raise RecordError(f"{where}: sharegpt training data needs at least one assistant message")
    turns: list[dict[str, str]] = []
    pending_tools: list[str] = []
    for message in messages[: last_assistant + 1]:
        role = message["role"]
        if role == "tool":
            pending_tools.append(text_content(message, where))
            continue
        if pending_tools:
            turns.append({"from": "observation", "value": TOOL_RESPONSE_JOIN.join(pending_tools)})
            pending_tools = []
        if role == "system":
            raise RecordError(f"{where}: sharegpt allows a system message only at the start")
        if role == "user":
            turns.append({"from": "human", "value": text_content(message, where)})
        else:
            turns.append(_assistant_turn(message, where))
    for i, turn in enumerate(turns):
        allowed = ("human", "observation") if i % 2 == 0 else ("gpt", "function_call")
        if turn["from"] not in allowed:
            raise RecordError(
                f"{where}: LLaMA-Factory needs alternating turns, but turn {i} is "
                f"{turn['from']!r} (expected {' or '.join(allowed)}); merge consecutive "
                "user/assistant messages first"
            )
    row: dict[str, Any] = {
        "conversations": turns,
        "system": system,
        "tools": json.dumps(record.tool_functions(), ensure_ascii=False) if record.tools else "",
    }
    for key in metadata_keys:
        if key in row:
            raise RecordError(f"metadata key {key!r} would overwrite the sharegpt column {key!r}")
        row[key] = record.metadata.get(key)
    return row


def _assistant_turn(message: Mapping[str, Any], where: str) -> dict[str, str]:
    text = text_content(message, where)
    if message.get("reasoning_content"):
        text = f"<think>\n{message['reasoning_content'].strip()}\n</think>\n\n{text}"
    calls = message.get("tool_calls")
    if not calls:
        return {"from": "gpt", "value": text}
    match = _THINK.match(text)
    thought = f"{THOUGHT_OPEN}{match.group(1).strip()}{THOUGHT_CLOSE}" if match else ""
    rest = text[match.end() :] if match else text
    if rest.strip():
        raise RecordError(
            f"{where}: an assistant message with tool_calls also has text {rest.strip()[:40]!r}; "
            "LLaMA-Factory's function_call turn holds only a <think> block and the calls"
        )
    payload = [
        {
            "name": c["function"]["name"],
            "arguments": arguments_dict(c["function"]["arguments"], where),
        }
        for c in calls
    ]
    value = json.dumps(payload[0] if len(payload) == 1 else payload, ensure_ascii=False)
    return {"from": "function_call", "value": thought + value}


def write_sharegpt(
    records: Iterable[ToolUseRecord | Mapping[str, Any]],
    dir: str | Path,
    name: str,
    *,
    metadata_keys: Sequence[str] = (),
) -> Path:
    """Write ``<dir>/<name>.json`` and add ``name`` to ``<dir>/dataset_info.json``.

    ``metadata_keys`` copies those keys of each record's metadata into its row. Other entries of
    an existing ``dataset_info.json`` are kept. Returns the data file's path;
    pass ``dataset_dir=<dir>`` and ``dataset=<name>`` to LLaMA-Factory.
    """
    if not name or not re.fullmatch(r"[A-Za-z0-9_.\-]+", name):
        raise RecordError(f"dataset name {name!r}: use letters, digits, '_', '-', '.'")
    directory = Path(dir)
    directory.mkdir(parents=True, exist_ok=True)
    rows = [to_sharegpt(r, metadata_keys=metadata_keys) for r in records]
    if not rows:
        raise RecordError(f"write_sharegpt({name!r}): no records to write")
    data_file = directory / f"{name}.json"
    data_file.write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")
    info_file = directory / "dataset_info.json"
    info = json.loads(info_file.read_text(encoding="utf-8")) if info_file.exists() else {}
    info[name] = dataset_info_entry(data_file.name)
    info_file.write_text(json.dumps(info, ensure_ascii=False, indent=2), encoding="utf-8")
    return data_file
