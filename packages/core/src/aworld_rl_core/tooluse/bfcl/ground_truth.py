"""Turn BFCL's single-turn possible answers into one concrete output that satisfies them."""

from __future__ import annotations

from typing import Any

from aworld_rl_core.tooluse.bfcl.loader import SINGLE_TURN_CATEGORIES, BfclEntry
from aworld_rl_core.tooluse.calls import Call


def _first(allowed: list[Any]) -> Any:
    """The first allowed value that is not BFCL's "may be omitted" marker ``""``."""
    return next((value for value in allowed if value != ""), "")


def _concrete_dict(option: dict[str, list[Any]]) -> dict[str, Any]:
    return {key: _first(values) for key, values in option.items() if "" not in values}


def _concrete(value: Any, spec: dict[str, Any]) -> Any:
    if spec.get("type") == "dict" and isinstance(value, dict):
        return _concrete_dict(value)
    items = spec.get("items") or {}
    if spec.get("type") == "array" and items.get("type") == "dict" and isinstance(value, list):
        return [_concrete_dict(d) if isinstance(d, dict) else d for d in value]
    return value


def ground_truth_calls(entry: BfclEntry) -> list[Call]:
    """Calls built from the first allowed value of each parameter; optional ones left out."""
    if entry.category not in SINGLE_TURN_CATEGORIES:
        raise ValueError(
            f"{entry.id}: ground_truth_calls renders single-turn possible answers; "
            "multi-turn ground truth is already call strings (entry.ground_truth)"
        )
    docs = {doc["name"]: doc for doc in entry.functions}
    calls = []
    for answer in entry.ground_truth or []:
        name, params = next(iter(answer.items()))
        doc = docs.get(name, {"parameters": {"properties": {}, "required": list(params)}})
        properties = doc["parameters"].get("properties", {})
        required = set(doc["parameters"].get("required", []))
        arguments = {
            param: _concrete(_first(allowed), properties.get(param, {}))
            for param, allowed in params.items()
            if param in required or "" not in allowed
        }
        calls.append(Call(name, arguments))
    return calls
