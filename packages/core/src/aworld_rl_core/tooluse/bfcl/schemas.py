"""BFCL function docs as JSON Schema and OpenAI tool definitions (BFCL's own type mapping)."""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from typing import Any


def _type_mapping() -> dict[str, str]:
    from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI  # plain constants

    return GORILLA_TO_OPENAPI


def _convert_properties(properties: dict[str, Any], mapping: dict[str, str]) -> dict[str, Any]:
    for spec in properties.values():
        bfcl_type = spec.get("type")
        if bfcl_type == "float":
            spec["format"] = "float"
            spec["description"] = spec.get("description", "") + " This is a float type value."
        spec["type"] = mapping.get(bfcl_type, "string")
        if spec["type"] in ("array", "object"):
            if "properties" in spec:
                spec["properties"] = _convert_properties(spec["properties"], mapping)
            elif "items" in spec:
                _convert_items(spec["items"], mapping)
    return properties


def _convert_items(items: dict[str, Any], mapping: dict[str, str]) -> None:
    items["type"] = mapping.get(str(items.get("type")), "string")
    if items["type"] == "array" and "items" in items:
        _convert_items(items["items"], mapping)
    elif items["type"] == "object" and "properties" in items:
        items["properties"] = _convert_properties(items["properties"], mapping)


def to_json_schema(doc: dict[str, Any]) -> dict[str, Any]:
    """The ``parameters`` of one BFCL doc as a JSON Schema object (``dict`` -> ``object``, ...)."""
    params = copy.deepcopy(doc.get("parameters") or {"properties": {}})
    params["type"] = "object"
    params["properties"] = _convert_properties(params.get("properties", {}), _type_mapping())
    return params


def to_openai_tools(
    docs: Sequence[dict[str, Any]], *, dots_to_underscores: bool = True
) -> list[dict[str, Any]]:
    """OpenAI chat-completions tools, as BFCL's FC handlers build them ('.' -> '_' in names)."""
    tools = []
    for doc in docs:
        function = {k: copy.deepcopy(v) for k, v in doc.items() if k != "parameters"}
        if dots_to_underscores:
            function["name"] = re.sub(r"\.", "_", doc["name"])
        function["parameters"] = to_json_schema(doc)
        tools.append({"type": "function", "function": function})
    return tools
