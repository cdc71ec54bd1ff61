"""BFCL's prompting-mode texts (system prompt, held-out-function message, the language note on
each function doc), from the installed bfcl-eval's own templates so they stay byte-identical to
what the leaderboard sends."""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from aworld_rl_core.tooluse.bfcl.loader import BfclEntry, language_of

_LANGUAGE_NOTES = {
    "python": " Note that the provided function is in Python 3 syntax.",
    "java": " Note that the provided function is in Java 8 SDK syntax.",
    "javascript": " Note that the provided function is in JavaScript syntax.",
}
_LANGUAGE_NAMES = {"java": "Java", "javascript": "JavaScript"}


def _templates() -> Any:
    from bfcl_eval.constants import default_prompts  # plain constants, no side effects

    return default_prompts


@lru_cache(maxsize=256)
def _indented(compact: str) -> str:
    """BFCL's ``json.dumps(docs, indent=4)`` of docs given as compact JSON. Indented dumps run
    in pure python (16 ms for a multi-turn entry's docs); entries share doc sets, so cache."""
    return json.dumps(json.loads(compact), indent=4)


def system_prompt(
    function_docs: Sequence[dict[str, Any]], *, style: str = "classic", markdown: bool = False
) -> str:
    """BFCL's default system prompt: python call-list output, tool docs as indented JSON
    (releases up to 2025.8.5: their single template, docs as a python list)."""
    t = _templates()
    if not hasattr(t, "PROMPT_STYLE_TEMPLATES"):
        return t.DEFAULT_SYSTEM_PROMPT.format(functions=list(function_docs))
    if style not in t.PROMPT_STYLE_TEMPLATES:
        raise ValueError(
            f"unknown BFCL prompt style {style!r}; use one of {sorted(t.PROMPT_STYLE_TEMPLATES)}"
        )
    parts = t.PROMPT_STYLE_TEMPLATES[style]
    template = t.PROMPT_TEMPLATE_MAPPING["markdown" if markdown else "plaintext"]
    tool_call_format = parts["tool_call_no_tag"].format(
        output_format=t.OUTPUT_FORMAT_MAPPING["python"], param_types=t.PARAM_TYPE_MAPPING["python"]
    )
    available = parts["available_tools"].format(
        format="json", functions=_indented(json.dumps(list(function_docs)))
    )
    return template.format(
        persona=parts["persona"],
        task=parts["task"],
        tool_call_format=tool_call_format,
        multiturn_behavior=parts["multiturn_behavior"],
        available_tools=available,
    )


def with_system_prompt(
    messages: Sequence[dict[str, Any]], function_docs: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Messages with BFCL's system prompt first (merged into an existing system message)."""
    out = [dict(m) for m in messages]
    prompt = system_prompt(function_docs)
    if out and out[0].get("role") == "system":
        out[0]["content"] = prompt + "\n\n" + out[0]["content"]
    else:
        out.insert(0, {"role": "system", "content": prompt})
    return out


def missed_function_message(function_docs: Sequence[dict[str, Any]]) -> dict[str, str]:
    """The user message BFCL sends (prompting mode) when held-out functions become available."""
    text = _templates().DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_PROMPTING
    return {"role": "user", "content": text.format(functions=list(function_docs))}


def docs_as_shown(function_docs: Sequence[dict[str, Any]], category: str) -> list[dict[str, Any]]:
    """The docs as BFCL's inference shows them (copies): each description ends with the note
    naming the language; Java / JavaScript parameters become strings whose description names
    their type (collections and objects: the item type or schema, "not in string
    representation"). The docs held back in ``multi_turn_miss_func`` get no note, as in BFCL."""
    language = language_of(category)
    docs = json.loads(json.dumps(list(function_docs)))  # a deep copy (JSON docs), 5x faster
    for doc in docs:
        doc["description"] += _LANGUAGE_NOTES[language]
        if language != "python":
            for spec in doc["parameters"]["properties"].values():
                _as_string_parameter(spec, _LANGUAGE_NAMES[language])
    return docs


def _as_string_parameter(spec: dict[str, Any], language: str) -> None:
    kind = spec["type"]
    if kind == "any":
        spec["description"] += (
            f" This parameter can be of any type of {language} object in string representation."
        )
    else:
        spec["description"] += (
            f" This is {language} {kind} type parameter in string representation."
        )
    if kind in (("ArrayList", "Array") if language == "Java" else ("array",)):
        spec["description"] += (
            f" The list elements are of type {spec['items']['type']}; they are not in string "
            "representation."
        )
        del spec["items"]
    if language == "JavaScript" and kind == "dict" and "properties" in spec:
        spec["description"] += (
            " The dictionary entries have the following schema; they are not in string "
            f"representation. {json.dumps(spec['properties'])}"
        )
        del spec["properties"]
    spec["type"] = "string"


def opening_messages(entry: BfclEntry) -> list[dict[str, Any]]:
    """What BFCL's prompting handlers send first: the system prompt listing the entry's docs (as
    :func:`docs_as_shown`), then the first turn's messages."""
    return with_system_prompt(entry.turns[0], docs_as_shown(entry.functions, entry.category))
