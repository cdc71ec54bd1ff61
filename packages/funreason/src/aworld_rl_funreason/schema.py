"""Tool schemas: xLAM's flat parameter dicts to JSON Schema, and deterministic call checks.

The checks decide only what a schema can decide for sure: unknown functions, unknown
parameters, missing required parameters and values whose JSON type contradicts the schema.
Whether the values answer the query is the judge's question.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

# xLAM writes python-ish type names: "str", "int, optional", "List[Dict[str, Any]]", ...
_XLAM_TYPES = {
    "str": "string",
    "string": "string",
    "int": "integer",
    "integer": "integer",
    "float": "number",
    "number": "number",
    "bool": "boolean",
    "boolean": "boolean",
    "list": "array",
    "tuple": "array",
    "set": "array",
    "dict": "object",
    "object": "object",
    "any": "any",
}


def xlam_type_to_json(type_text: str) -> tuple[str, bool]:
    """Map an xLAM type string to (JSON Schema type, optional)."""
    text = type_text.strip()
    optional = bool(re.search(r",\s*optional\s*$", text, re.IGNORECASE))
    text = re.sub(r",\s*optional\s*$", "", text, flags=re.IGNORECASE).strip()
    inner = re.fullmatch(r"Optional\[(.*)\]", text)
    if inner:
        optional, text = True, inner.group(1).strip()
    head = re.split(r"[\[,|]", text, maxsplit=1)[0].strip().lower()
    return _XLAM_TYPES.get(head, "any"), optional


def xlam_tool_to_schema(tool: Mapping[str, Any]) -> dict[str, Any]:
    """One xLAM tool (``parameters`` = {name: {type, description, default}}) as a JSON Schema
    function doc ``{name, description, parameters: {type: object, properties, required}}``.

    Tools already in JSON Schema form (``parameters.properties``) are returned unchanged.
    """
    if not isinstance(tool.get("name"), str):
        raise ValueError(f"tool without a string 'name': {str(tool)[:120]}")
    params = tool.get("parameters") or {}
    if isinstance(params, Mapping) and "properties" in params:
        return dict(tool)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for pname, spec in params.items():
        spec = spec if isinstance(spec, Mapping) else {}
        json_type, optional = xlam_type_to_json(str(spec.get("type", "any")))
        prop: dict[str, Any] = {"description": str(spec.get("description", ""))}
        if json_type != "any":
            prop["type"] = json_type
        if "default" in spec:
            prop["default"] = spec["default"]
        properties[pname] = prop
        if not optional:
            required.append(pname)
    return {
        "name": tool["name"],
        "description": str(tool.get("description", "")),
        "parameters": {"type": "object", "properties": properties, "required": required},
    }


def function_doc(tool: Mapping[str, Any]) -> Mapping[str, Any]:
    """The function doc of a BFCL doc or an OpenAI ``{"type": "function", "function": ...}``."""
    return tool.get("function", tool) if tool.get("type") == "function" else tool


_PY_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "float": (int, float),
    "boolean": (bool,),
    "array": (list, tuple),
    "tuple": (list, tuple),
    "object": (dict,),
    "dict": (dict,),
}


def _type_ok(value: Any, json_type: Any) -> bool:
    if value is None or not isinstance(json_type, str) or json_type not in _PY_TYPES:
        return True  # null and unknown types are for the judge
    if isinstance(value, bool) and json_type not in ("boolean",):
        return False
    return isinstance(value, _PY_TYPES[json_type])


def check_calls(calls: Sequence[Any], tools: Iterable[Mapping[str, Any]]) -> list[str]:
    """Problems a schema proves: unknown function/parameter, wrong type, a missing required
    parameter that has no default (xLAM answers omit parameters that have one).

    ``calls`` are objects with ``name`` and ``arguments`` (core's ``Call``); an empty list means
    every call is consistent with the schema.
    """
    docs = {function_doc(t)["name"]: function_doc(t) for t in tools}
    problems: list[str] = []
    for call in calls:
        doc = docs.get(call.name)
        if doc is None:
            problems.append(f"unknown function {call.name!r} (tools: {', '.join(sorted(docs))})")
            continue
        if getattr(call, "positional", ()):
            problems.append(f"{call.name}: positional arguments; write name=value")
        params = doc.get("parameters") or {}
        props = params.get("properties") or {}
        for arg, value in call.arguments.items():
            if arg not in props:
                problems.append(f"{call.name}: unknown parameter {arg!r}")
            elif not _type_ok(value, props[arg].get("type")):
                problems.append(
                    f"{call.name}: {arg}={value!r} is not of type {props[arg].get('type')}"
                )
        for arg in params.get("required") or []:
            if arg not in call.arguments and "default" not in (props.get(arg) or {}):
                problems.append(f"{call.name}: missing required parameter {arg!r}")
    return problems
