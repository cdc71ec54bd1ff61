"""The core tool-use record: OpenAI chat messages, tool schemas, ground truth and metadata."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aworld_rl_core.errors import AworldError

ROLES = ("system", "user", "assistant", "tool")
_MESSAGE_KEYS = {
    "system": {"role", "content", "name"},
    "user": {"role", "content", "name"},
    "assistant": {"role", "content", "reasoning_content", "tool_calls", "name"},
    "tool": {"role", "content", "tool_call_id", "name"},
}
_RECORD_KEYS = ("id", "messages", "tools", "ground_truth", "data_source", "metadata")
PART_TYPES = ("text", "image", "image_url")


class RecordError(AworldError, ValueError):
    """A record (or a converter's input) is malformed; the message names the field."""


@dataclass(frozen=True, kw_only=True)
class ToolUseRecord:
    """One tool-use sample.

    ``messages``: OpenAI chat messages (``system``/``user``/``assistant``/``tool``); ``content``
    is a string or a list of content parts (``text``, ``image``, ``image_url``: see
    ``aworld_rl_core.backends.vision``); assistant messages may carry ``tool_calls`` (``{"type":
    "function", "function": {"name", "arguments"}}`` with ``arguments`` a dict or a JSON object
    string) and ``reasoning_content``.
    ``tools``: tool schemas (``{"type": "function", "function": {"name", "description",
    "parameters": <JSON Schema>}}``; a bare ``{"name", ...}`` is wrapped on construction).
    ``ground_truth``: any JSON value (for rewards and judges). ``metadata``: a JSON object.
    Construction validates and normalises; bad input raises ``RecordError``.
    """

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)
    ground_truth: Any = None
    id: str = ""
    data_source: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        where = f"record {self.id!r}" if self.id else "record"
        if not isinstance(self.id, str) or not isinstance(self.data_source, str):
            raise RecordError(f"{where}: id and data_source must be strings")
        object.__setattr__(self, "messages", _check_messages(self.messages, where))
        object.__setattr__(self, "tools", _check_tools(self.tools, where))
        if not isinstance(self.metadata, Mapping):
            raise RecordError(
                f"{where}: metadata must be a dict, got {type(self.metadata).__name__}"
            )
        object.__setattr__(self, "metadata", dict(self.metadata))
        for name in ("ground_truth", "metadata"):
            try:
                json.dumps(getattr(self, name))
            except (TypeError, ValueError) as exc:
                raise RecordError(f"{where}: {name} is not JSON-serialisable ({exc})") from None

    def to_dict(self) -> dict[str, Any]:
        """A plain JSON-ready dict (``from_dict`` reads it back)."""
        return {
            "id": self.id,
            "messages": [dict(m) for m in self.messages],
            "tools": [dict(t) for t in self.tools],
            "ground_truth": self.ground_truth,
            "data_source": self.data_source,
            "metadata": dict(self.metadata),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolUseRecord:
        """Build from a dict with the keys of ``to_dict`` (only ``messages`` is required)."""
        if not isinstance(data, Mapping):
            raise RecordError(f"a record must be a dict, got {type(data).__name__}")
        unknown = sorted(set(data) - set(_RECORD_KEYS))
        if unknown:
            raise RecordError(
                f"record {data.get('id', '')!r}: unknown keys {unknown}; allowed: "
                + ", ".join(_RECORD_KEYS)
                + " (put anything else under 'metadata')"
            )
        if "messages" not in data:
            raise RecordError(f"record {data.get('id', '')!r}: 'messages' is missing")
        kwargs = {k: data[k] for k in _RECORD_KEYS if k in data and data[k] is not None}
        return cls(**kwargs)

    def prompt_messages(self) -> list[dict[str, Any]]:
        """The leading messages before the first assistant turn (an RL prompt)."""
        out = []
        for message in self.messages:
            if message["role"] == "assistant":
                break
            out.append(message)
        return out

    def assistant_indices(self) -> list[int]:
        """Positions of the assistant messages."""
        return [i for i, m in enumerate(self.messages) if m["role"] == "assistant"]

    def tool_functions(self) -> list[dict[str, Any]]:
        """The bare function schemas (``{"name", "description", "parameters"}``)."""
        return [t["function"] for t in self.tools]


def as_record(item: ToolUseRecord | Mapping[str, Any]) -> ToolUseRecord:
    """A ``ToolUseRecord`` from a record or its dict form."""
    return item if isinstance(item, ToolUseRecord) else ToolUseRecord.from_dict(item)


def write_jsonl(records: Iterable[ToolUseRecord | Mapping[str, Any]], path: str | Path) -> Path:
    """Write records as JSON lines; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for item in records:
            fh.write(json.dumps(as_record(item).to_dict(), ensure_ascii=False) + "\n")
    return path


def read_jsonl(path: str | Path) -> list[ToolUseRecord]:
    """Read records written by ``write_jsonl`` (errors name the line)."""
    out = []
    with Path(path).open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                out.append(ToolUseRecord.from_dict(json.loads(line)))
            except (json.JSONDecodeError, RecordError) as exc:
                raise RecordError(f"{path}:{number}: {exc}") from None
    return out


def arguments_dict(arguments: Any, where: str) -> dict[str, Any]:
    """Tool-call arguments as a dict (parsing a JSON object string)."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            raise RecordError(
                f"{where}: arguments is not valid JSON ({exc.msg}); give a dict or a JSON object "
                "string"
            ) from None
    if not isinstance(arguments, Mapping):
        raise RecordError(
            f"{where}: arguments must be a JSON object, got {type(arguments).__name__}"
        )
    return dict(arguments)


def _check_messages(messages: Any, where: str) -> list[dict[str, Any]]:
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence) or not messages:
        raise RecordError(f"{where}: messages must be a non-empty list of chat messages")
    return [_check_message(m, f"{where}: messages[{i}]") for i, m in enumerate(messages)]


def _check_message(message: Any, where: str) -> dict[str, Any]:
    if not isinstance(message, Mapping):
        raise RecordError(f"{where} must be a dict, got {type(message).__name__}")
    role = message.get("role")
    if role not in ROLES:
        raise RecordError(f"{where}: role {role!r} is not one of {', '.join(ROLES)}")
    out = {k: v for k, v in message.items() if v is not None}
    extra = sorted(set(out) - _MESSAGE_KEYS[role])
    if extra:
        raise RecordError(
            f"{where}: unexpected keys {extra} for a {role} message; allowed: "
            + ", ".join(sorted(_MESSAGE_KEYS[role]))
        )
    if isinstance(out.get("content"), list):
        out["content"] = [
            _check_part(p, f"{where}.content[{i}]") for i, p in enumerate(out["content"])
        ]
    for key in ("content", "reasoning_content", "name", "tool_call_id"):
        if key in out and not isinstance(out[key], (str, list) if key == "content" else str):
            raise RecordError(
                f"{where}.{key} must be a string"
                + (" or a list of content parts" if key == "content" else "")
                + f", got {type(out[key]).__name__}"
            )
    if role != "assistant":
        if "content" not in out:
            raise RecordError(f"{where}: a {role} message needs a string 'content'")
        return out
    if "tool_calls" in out:
        calls = out["tool_calls"]
        if isinstance(calls, (str, bytes)) or not isinstance(calls, Sequence):
            raise RecordError(f"{where}.tool_calls must be a list")
        out["tool_calls"] = [
            _check_call(c, f"{where}.tool_calls[{i}]") for i, c in enumerate(calls)
        ]
        if not out["tool_calls"]:
            del out["tool_calls"]
    if not any(out.get(k) for k in ("content", "reasoning_content", "tool_calls")):
        raise RecordError(f"{where}: an assistant message needs content, reasoning or tool_calls")
    return out


def _check_part(part: Any, where: str) -> dict[str, Any]:
    """An OpenAI content part: text, or an image (a path, bytes, PIL image or image_url)."""
    if not isinstance(part, Mapping) or part.get("type") not in PART_TYPES:
        raise RecordError(
            f"{where} must be a content part with type one of {', '.join(PART_TYPES)}, got "
            f"{part!r:.80}"
        )
    kind = part["type"]
    if kind == "text" and not isinstance(part.get("text"), str):
        raise RecordError(f"{where}: a text part needs a string 'text'")
    if kind == "image" and part.get("image") is None:
        raise RecordError(f"{where}: an image part needs 'image' (a path, bytes or PIL image)")
    if kind == "image_url" and not isinstance((part.get("image_url") or {}).get("url"), str):
        raise RecordError(f"{where}: an image_url part needs image_url.url")
    return dict(part)


def text_content(message: Mapping[str, Any], where: str) -> str:
    """A message's content as text; image parts are an error (for text-only converters)."""
    content = message.get("content") or ""
    if isinstance(content, str):
        return content
    if any(p["type"] != "text" for p in content):
        raise RecordError(
            f"{where}: the message holds image parts, which this converter cannot write "
            "(train vision-language records with trainer.backend=hf-sft)"
        )
    return "".join(p["text"] for p in content)


def _check_call(call: Any, where: str) -> dict[str, Any]:
    if not isinstance(call, Mapping):
        raise RecordError(f"{where} must be a dict, got {type(call).__name__}")
    function = call.get("function", call)
    if not isinstance(function, Mapping):
        raise RecordError(f"{where}.function must be a dict")
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise RecordError(f"{where}: the call needs a non-empty string 'name'")
    arguments = function.get("arguments", {})
    if isinstance(arguments, str):
        arguments_dict(arguments, f"{where}.function")
    else:
        arguments = arguments_dict(arguments, f"{where}.function")
    out: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": arguments}}
    if call.get("id") is not None:
        out["id"] = str(call["id"])
    return out


def _check_tools(tools: Any, where: str) -> list[dict[str, Any]]:
    if tools is None:
        return []
    if isinstance(tools, (str, bytes)) or not isinstance(tools, Sequence):
        raise RecordError(f"{where}: tools must be a list of tool schemas")
    out = []
    for i, tool in enumerate(tools):
        here = f"{where}: tools[{i}]"
        if not isinstance(tool, Mapping):
            raise RecordError(f"{here} must be a dict, got {type(tool).__name__}")
        function = (
            tool.get("function", tool) if tool.get("type", "function") == "function" else None
        )
        if not isinstance(function, Mapping):
            raise RecordError(f"{here}: only function tools are supported (type 'function')")
        if not isinstance(function.get("name"), str) or not function["name"]:
            raise RecordError(f"{here}: the tool needs a non-empty string 'name'")
        params = function.get("parameters", {"type": "object", "properties": {}})
        if not isinstance(params, Mapping):
            raise RecordError(f"{here}.parameters must be a JSON Schema object (a dict)")
        fn = {k: v for k, v in function.items() if k != "parameters"}
        out.append({"type": "function", "function": {**fn, "parameters": dict(params)}})
    return out
