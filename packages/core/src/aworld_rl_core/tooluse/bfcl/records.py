"""BFCL entries -> records.

A BFCL entry has ``id``, ``question`` (a list of turns, each a list of chat messages) and
``function`` (function docs in BFCL's dialect of JSON Schema: ``dict``, ``float``, ``tuple``,
``any``, Java/JavaScript type names, converted by BFCL's own mapping in
``tooluse.bfcl.schemas``). The first turn becomes the record's messages; later turns (multi-turn
categories) and BFCL's extra fields go to ``metadata``; ground truth is passed separately (BFCL
keeps it in ``possible_answer`` files).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from aworld_rl_core.records.record import RecordError, ToolUseRecord

_BFCL_ENTRY_KEYS = ("id", "question", "function")


def bfcl_function_to_tool(function: Mapping[str, Any]) -> dict[str, Any]:
    """A BFCL function doc as an OpenAI function tool, by core's one BFCL converter
    (``tooluse.bfcl.schemas``: BFCL's own type mapping, so a type it does not know, such as the
    JavaScript docs' ``Boolean``, becomes ``string`` as in BFCL's FC handlers; names keep their
    dots)."""
    from aworld_rl_core.tooluse.bfcl.schemas import to_openai_tools

    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        raise RecordError(f"a BFCL function doc needs a 'name', got {function!r:.80}")
    return to_openai_tools([dict(function)], dots_to_underscores=False)[0]


def from_bfcl(entry: Any, ground_truth: Any = None, *, data_source: str = "bfcl") -> ToolUseRecord:
    """A record from a BFCL entry (a dict, or an object with ``to_dict()`` or a dataclass).

    ``ground_truth`` is the entry's ``possible_answer`` ``ground_truth`` value (or any JSON value).
    """
    data = _entry_dict(entry)
    missing = [k for k in ("question", "function") if k not in data]
    if missing:
        raise RecordError(
            f"BFCL entry {data.get('id', '?')!r} lacks {missing}; multi-turn entries get their "
            "'function' docs from the involved classes: load them through "
            "aworld_rl_core.tooluse.bfcl first"
        )
    turns = data["question"]
    if not isinstance(turns, list) or not turns:
        raise RecordError(f"BFCL entry {data.get('id', '?')!r}: 'question' must be a list of turns")
    if isinstance(turns[0], Mapping):  # some sources flatten a single turn
        turns = [turns]
    metadata = {k: v for k, v in data.items() if k not in _BFCL_ENTRY_KEYS}
    if len(turns) > 1:
        metadata["pending_turns"] = turns[1:]
    return ToolUseRecord(
        id=str(data.get("id", "")),
        messages=list(turns[0]),
        tools=[bfcl_function_to_tool(f) for f in data["function"]],
        ground_truth=ground_truth,
        data_source=data_source,
        metadata=metadata,
    )


def _entry_dict(entry: Any) -> dict[str, Any]:
    if isinstance(entry, Mapping):
        return dict(entry)
    if callable(getattr(entry, "to_dict", None)):
        return dict(entry.to_dict())
    if dataclasses.is_dataclass(entry) and not isinstance(entry, type):
        return dataclasses.asdict(entry)
    raise RecordError(f"a BFCL entry must be a dict or a BfclEntry, got {type(entry).__name__}")
