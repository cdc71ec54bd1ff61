"""BFCL's prompting-mode framing of a reply (used by the AST judges and the Java/JavaScript
decoder; a leaf module, so neither imports the other)."""

from __future__ import annotations

from aworld_rl_core.tooluse.calls import Call, ToolCallParseError, parse_python_calls


def frame(output: str) -> str:
    """BFCL's prompting-mode framing of a reply: backticks, newlines and spaces stripped, the
    brackets of a call list added where missing. Raises ToolCallParseError on a non-string."""
    if not isinstance(output, str):
        raise ToolCallParseError(f"expected the model output as str, got {type(output).__name__}")
    text = output.strip("`\n ")
    if not text.startswith("["):
        text = "[" + text
    if not text.endswith("]"):
        text = text + "]"
    return text


def decode_single_turn(output: str) -> list[Call]:
    """:func:`frame`, wrapping single quotes stripped, then :func:`parse_python_calls`.
    Raises ToolCallParseError."""
    return parse_python_calls(frame(output).strip().strip("'"))
