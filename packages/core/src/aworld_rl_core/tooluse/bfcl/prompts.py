"""BFCL's prompting-mode texts (system prompt, held-out-function message), from the installed
bfcl-eval's own templates so they stay byte-identical to what the leaderboard sends."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any


def _templates() -> Any:
    from bfcl_eval.constants import default_prompts  # plain constants, no side effects

    return default_prompts


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
        format="json", functions=json.dumps(list(function_docs), indent=4)
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
