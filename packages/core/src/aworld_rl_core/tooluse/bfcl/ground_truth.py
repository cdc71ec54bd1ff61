"""Turn BFCL's single-turn possible answers into one concrete output that satisfies them."""

from __future__ import annotations

import json
import re
from typing import Any

from aworld_rl_core.tooluse.bfcl.ast_checker import standardize
from aworld_rl_core.tooluse.bfcl.loader import (
    RELEVANCE_CATEGORIES,
    SINGLE_TURN_CATEGORIES,
    BfclEntry,
    language_of,
)
from aworld_rl_core.tooluse.calls import Call, format_python_calls

ABSTAIN = "None of the given functions can be used for this request."
"""A reply without calls: what a perfect model answers in an irrelevance entry."""


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


def _answer_arguments(entry: BfclEntry) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(function name, {param: first allowed value}, param specs) per expected call; optional
    parameters are left out."""
    if entry.category not in SINGLE_TURN_CATEGORIES:
        raise ValueError(
            f"{entry.id}: ground truth is rendered for single-turn AST categories; "
            "multi-turn ground truth is already call strings (entry.ground_truth)"
        )
    docs = {doc["name"]: doc for doc in entry.functions}
    out = []
    for answer in entry.ground_truth or []:
        name, params = next(iter(answer.items()))
        doc = docs.get(name, {"parameters": {"properties": {}, "required": list(params)}})
        properties = doc["parameters"].get("properties", {})
        required = set(doc["parameters"].get("required", []))
        arguments = {
            param: _first(allowed)
            for param, allowed in params.items()
            if param in required or "" not in allowed
        }
        out.append((name, arguments, properties))
    return out


def ground_truth_calls(entry: BfclEntry) -> list[Call]:
    """Calls built from the first allowed value of each parameter; optional ones left out
    (python categories: Java / JavaScript answers are text, see :func:`ground_truth_text`)."""
    if language_of(entry.category) != "python":
        raise ValueError(f"{entry.id} is answered in Java / JavaScript: use ground_truth_text")
    return [
        Call(name, {p: _concrete(v, specs.get(p, {})) for p, v in arguments.items()})
        for name, arguments, specs in _answer_arguments(entry)
    ]


def ground_truth_text(entry: BfclEntry) -> str:
    """The ground truth as a model answer in the entry's language: ``[f(a=1)]``; for the
    relevance categories, a reply without calls (irrelevance) or a call of the first function
    (``live_relevance``, where any call is right).

    Java and JavaScript values are written so that BFCL's decoder and converters give back the
    allowed value (``50L`` for a Java long, ``new String[]{a, b}`` for a string array, whose
    items BFCL keeps verbatim). Some possible answers have no such writing (a Java ``any`` list
    holding numbers, which BFCL always reads as strings): those entries fail, as in bfcl-eval.
    """
    if entry.category in RELEVANCE_CATEGORIES:
        if entry.category == "live_relevance":
            return format_python_calls([Call(entry.functions[0]["name"])])
        return ABSTAIN
    language = language_of(entry.category)
    if language == "python":
        return format_python_calls(ground_truth_calls(entry))
    literal = _java_literal if language == "java" else _js_literal
    calls = []
    for name, arguments, specs in _answer_arguments(entry):
        args = ", ".join(f"{p}={literal(v, specs.get(p, {}))}" for p, v in arguments.items())
        calls.append(f"{name}({args})")
    return "[" + ", ".join(calls) + "]"


_JAVA_NAME = re.compile(r"[A-Za-z_$][\w$]*|-?\d+(\.\d+)?")
_JAVA_ARRAY_ITEM = {"String": "String", "integer": "int", "long": "long", "char": "char"}


def _java_scalar(value: Any, type_name: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        suffix = {"long": "L", "float": "f"}.get(type_name, "")
        return f"{value}{suffix}"
    if '"' in value:  # a Java expression given as source text (BFCL keeps inner quotes)
        return value
    return json.dumps(value, ensure_ascii=False)


def _java_item(value: Any, type_name: str) -> str:
    """An array item: BFCL keeps its text as is, quotes included, and compares strings after
    its normalisation (no spaces, ``,./-_*^``, lower case), so a string is written bare."""
    if isinstance(value, str):
        return value if _JAVA_NAME.fullmatch(value) else standardize(value)
    return _java_scalar(value, type_name)


def _java_literal(value: Any, spec: dict[str, Any]) -> str:
    type_name = spec.get("type", "any")
    item = (spec.get("items") or {}).get("type", "any")
    if isinstance(value, list):
        if type_name == "ArrayList":
            items = ", ".join(_java_scalar(v, item) for v in value)
            return f"new ArrayList<>(Arrays.asList({items}))"
        items = ", ".join(_java_item(v, item) for v in value)
        return f"new {_JAVA_ARRAY_ITEM.get(item, 'Object')}[]{{{items}}}"
    if isinstance(value, dict):
        puts = " ".join(
            f"put({json.dumps(k)}, {_java_scalar(v, 'any')});"
            for k, v in _concrete_dict(value).items()
        )
        # BFCL's decoder drops the body of `new HashMap<>() {{...}}` unless it sits in a call
        return f"Collections.unmodifiableMap(new HashMap<String, Object>() {{{{ {puts} }}}})"
    return _java_scalar(value, type_name)


def _js_literal(value: Any, spec: dict[str, Any]) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return f"{value}n" if spec.get("type") == "Bigint" else repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_js_literal(v, {}) for v in value) + "]"
    if isinstance(value, dict):
        pairs = ", ".join(
            f"{json.dumps(k)}: {_js_literal(v, {})}" for k, v in _concrete_dict(value).items()
        )
        return "{" + pairs + "}"
    return json.dumps(value, ensure_ascii=False)
