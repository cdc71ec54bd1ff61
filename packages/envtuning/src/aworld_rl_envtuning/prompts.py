"""The texts EnvTuning's environment shows the model (our wording of the paper's App. F prompts).

``basic`` is the stage 1-2 system prompt; ``resourceful`` (stages 3-4) adds the two rules the
paper adds, worded so that they agree with the environment: look up what a listed function can
give instead of asking, and when a function or a value only the user has is missing, call
nothing and ask (any call in such a turn scores it 0, as in BFCL). Tool docs are listed as
BFCL's JSON docs (``tool_docs="json"``) or one line per function (``"compact"``, for
small-context CPU runs).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

PromptStyle = Literal["basic", "resourceful"]
ToolDocs = Literal["json", "compact"]
PROMPT_STYLES = ("basic", "resourceful")

_HEAD = (
    "You are an expert in composing functions. You are given a question from a user and a set "
    "of possible functions. Based on the question, you will need to make one or more function "
    "calls to achieve the purpose, over as many steps as needed.\n\n"
    "Here is a list of functions you can invoke:\n{functions}\n\n"
)
_FORMATS = (
    "Reply in exactly one of two formats, with no text outside the tags:\n"
    "Format 1 (call functions):\n"
    "<{think}>your reasoning</{think}>\n"
    '<tool_call>[{{"name": "function_name", "arguments": {{"param": "value"}}}}]</tool_call>\n'
    "Format 2 (reply to the user, ending your work on the current request):\n"
    "<{think}>your reasoning</{think}>\n"
    "<answer>your reply</answer>\n\n"
    "Notes:\n"
    "- <tool_call> holds a JSON list; each call has the function's name and its arguments "
    "as a JSON object with the parameter names of the description.\n"
    "- You will see each call's execution result; keep calling functions until the request is "
    "fulfilled, then use Format 2.\n"
)
_RESOURCEFUL = (
    "- Be resourceful: a value one of the listed functions can give you (an id, a code, the "
    "current state) is yours to look up; do not ask the user for it.\n"
    "- Prioritize clarity over assumptions: if the request needs a function that is not in the "
    "list, or a value that only the user can give and did not, make no call at all for it: ask "
    "the user in Format 2 right away.\n"
)

AFTER_EXECUTION = (
    "If the request is fulfilled, outline your thought process in <{think}></{think}> and give "
    "a brief summary in <answer></answer>; otherwise keep calling functions."
)
EMPTY_TURN_WARNING = (
    "SYSTEM WARNING: you should not call any function in the previous turn, because the needed "
    "function description(s) or parameter(s) were missing; ask the user for them instead.\n\n"
)


def compact_doc(doc: Mapping[str, Any]) -> str:
    """One line: ``name(a: string, b?: integer) - first sentence of the description``."""
    params = doc.get("parameters") or {}
    required = set(params.get("required") or [])
    args = ", ".join(
        f"{name}{'' if name in required else '?'}: {spec.get('type', 'any')}"
        for name, spec in (params.get("properties") or {}).items()
    )
    description = str(doc.get("description", "")).split(". ")[0].strip().rstrip(".")
    return f"{doc['name']}({args}) - {description}"


def render_tools(function_docs: Sequence[Mapping[str, Any]], tool_docs: ToolDocs = "json") -> str:
    if tool_docs == "compact":
        return "\n".join(compact_doc(doc) for doc in function_docs)
    if tool_docs == "json":
        return "\n".join(json.dumps(doc, ensure_ascii=False) for doc in function_docs)
    raise ValueError(f"tool_docs must be 'json' or 'compact', not {tool_docs!r}")


def system_prompt(
    function_docs: Sequence[Mapping[str, Any]],
    *,
    style: PromptStyle = "basic",
    tool_docs: ToolDocs = "json",
    think_tag: str = "think",
) -> str:
    """The system prompt listing ``function_docs`` and the output formats."""
    if style not in PROMPT_STYLES:
        raise ValueError(f"prompt style must be one of {', '.join(PROMPT_STYLES)}, not {style!r}")
    text = _HEAD.format(functions=render_tools(function_docs, tool_docs))
    text += _FORMATS.format(think=think_tag)
    if style == "resourceful":
        text += _RESOURCEFUL
    return text
