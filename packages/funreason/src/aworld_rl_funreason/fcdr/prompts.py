"""Judge and teacher prompts for FCDR (our wording of the paper's five checks).

Every judge prompt asks for private reasoning, then ``<judge>True</judge>`` or
``<judge>False</judge>``; the two answer checks also ask for a corrected call list in
``<NewFC>...</NewFC>`` when they answer False.
"""

from __future__ import annotations

import json
from typing import Any

from aworld_rl_funreason.data import FcSample

VERDICT_FORMAT = (
    "Think it through first, then end your reply with exactly one verdict tag: "
    "<judge>True</judge> if the check passes, <judge>False</judge> if it fails."
)
NEW_FC_FORMAT = (
    "If the verdict is False, also write the corrected call list inside <NewFC>...</NewFC>, as a "
    "python list of keyword-argument calls, e.g. <NewFC>[get_weather(city='Paris', days=3)]"
    "</NewFC>. Argument names are bare words; string values are quoted; no text besides the "
    "list goes inside the tag."
)
CALL_FORMAT_RULES = (
    "The required format is a python list of calls: [func_name(param=value, ...), ...]. The list "
    "starts with '[' immediately (no leading space or text), every argument is written as "
    "name=value with the name unquoted, string values are in quotes, numbers, booleans, lists "
    "and dicts are python literals, and nothing follows the closing ']'."
)

STAGE_QUESTIONS = {
    "classify": (
        "Decide whether the reference answer below is a function call (one or more calls to the "
        "listed tools) rather than a plain-language statement such as a refusal, a question "
        "back to the user or a direct answer. True means it is a function call."
    ),
    "query_tools": (
        "Decide whether the user's request can be fulfilled with the listed tools, and whether "
        "every argument value the reference answer needs can be taken or reasonably inferred "
        "from the request itself (nothing invented). True means both hold."
    ),
    "cot": (
        "Judge the reasoning below: does it start from the user's request in a sensible way, "
        "move forward step by step without contradicting itself, and arrive at exactly the "
        "reference answer? True means all of this holds."
    ),
    "function_params": (
        "Check the reference answer against the request and the tool documentation: are the "
        "right functions called, with the right parameter names and correct values (types, "
        "units, formats the documentation asks for), with nothing missing or extra? True means "
        "the answer is correct."
    ),
    "format": "Check only the format of the reference answer. " + CALL_FORMAT_RULES,
}

REGENERATES = {"function_params", "format"}


def _tools_text(sample: FcSample) -> str:
    return json.dumps(sample.tools, ensure_ascii=False, indent=1)


def judge_messages(stage: str, sample: FcSample, hints: list[str] | None = None) -> list[dict]:
    """Chat messages asking the judge to run ``stage`` on ``sample``."""
    if stage not in STAGE_QUESTIONS:
        raise ValueError(f"unknown FCDR stage {stage!r}; known: {sorted(STAGE_QUESTIONS)}")
    parts = [STAGE_QUESTIONS[stage], ""]
    parts += [f"## User request\n{sample.query}", f"## Tools\n{_tools_text(sample)}"]
    if stage == "cot":
        parts.append(f"## Reasoning\n{sample.reasoning or ''}")
    parts.append(f"## Reference answer\n{sample.answer}")
    if hints:
        parts.append(
            "## Problems found by an automatic schema check\n" + "\n".join(f"- {h}" for h in hints)
        )
    fmt = VERDICT_FORMAT + (" " + NEW_FC_FORMAT if stage in REGENERATES else "")
    return [
        {"role": "system", "content": "You are a meticulous reviewer of function-calling data."},
        {"role": "user", "content": "\n\n".join(parts) + "\n\n" + fmt},
    ]


def cot_messages(sample: FcSample, *, show_reference: bool = False) -> list[dict[str, Any]]:
    """Ask a teacher model to solve the request with visible reasoning (natural CoT)."""
    text = [
        "Solve the user's request with the tools below. Reason step by step inside "
        "<think>...</think>, then give the final answer. " + CALL_FORMAT_RULES,
        f"## Tools\n{_tools_text(sample)}",
        f"## User request\n{sample.query}",
    ]
    if show_reference:
        text.append(
            f"## The correct answer (explain how to reach it; do not mention that it was given)"
            f"\n{sample.answer}"
        )
    return [{"role": "user", "content": "\n\n".join(text)}]
