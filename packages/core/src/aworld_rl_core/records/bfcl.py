"""BFCL entries -> records.

A BFCL entry has ``id``, ``question`` (a list of turns, each a list of chat messages) and
``function`` (function docs in BFCL's dialect of JSON Schema: ``dict``, ``float``, ``tuple``,
``any``, Java/JavaScript type names). The first turn becomes the record's messages; later turns
(multi-turn categories) and BFCL's extra fields go to ``metadata``; ground truth is passed
separately (BFCL keeps it in ``possible_answer`` files).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from typing import Any

from aworld_rl_core.records.record import RecordError, ToolUseRecord

# BFCL type names -> JSON Schema types (None: any type, so ``type`` is dropped).
BFCL_TYPES: dict[str, str | None] = {
    "dict": "object",
    "object": "object",
    "HashMap": "object",
    "Hashtable": "object",
    "float": "number",
    "double": "number",
    "number": "number",
    "integer": "integer",
    "int": "integer",
    "long": "integer",
    "short": "integer",
    "byte": "integer",
    "Bigint": "integer",
    "string": "string",
    "String": "string",
    "char": "string",
    "boolean": "boolean",
    "bool": "boolean",
    "Boolean": "boolean",
    "Integer": "integer",
    "Long": "integer",
    "Float": "number",
    "Double": "number",
    "Character": "string",
    "Object": "object",
    "List": "array",
    "Set": "array",
    "array": "array",
    "list": "array",
    "tuple": "array",
    "ArrayList": "array",
    "Array": "array",
    "Queue": "array",
    "Stack": "array",
    "any": None,
    "Any": None,
    "": None,
}
_BFCL_ENTRY_KEYS = ("id", "question", "function")


def bfcl_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A BFCL parameter schema as JSON Schema (types mapped, recursively)."""
    out = copy.deepcopy(dict(schema))
    kind = out.get("type")
    if isinstance(kind, str):
        if kind not in BFCL_TYPES:
            raise RecordError(f"unknown BFCL parameter type {kind!r}")
        mapped = BFCL_TYPES[kind]
        if mapped is None:
            del out["type"]
        else:
            out["type"] = mapped
    if isinstance(out.get("properties"), Mapping):
        out["properties"] = {k: bfcl_schema(v) for k, v in out["properties"].items()}
    for key in ("items", "additionalProperties"):
        if isinstance(out.get(key), Mapping):
            out[key] = bfcl_schema(out[key])
    return out


def bfcl_function_to_tool(function: Mapping[str, Any]) -> dict[str, Any]:
    """A BFCL function doc as an OpenAI function tool with a JSON Schema ``parameters``."""
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        raise RecordError(f"a BFCL function doc needs a 'name', got {function!r:.80}")
    params = function.get("parameters") or {"type": "dict", "properties": {}}
    body = {k: copy.deepcopy(v) for k, v in function.items() if k != "parameters"}
    return {"type": "function", "function": {**body, "parameters": bfcl_schema(params)}}


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
