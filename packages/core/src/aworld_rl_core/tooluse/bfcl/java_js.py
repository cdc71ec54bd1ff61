"""Java and JavaScript single-turn calls as BFCL reads them: its tree-sitter decoders and its
string-to-value converters, called through bfcl-eval (they parse text; nothing is evaluated).

A Java or JavaScript answer is one call written like ``[f(a="x", n=5)]``; every argument value
reaches the checker as the text BFCL's decoder extracts (string literals lose their quotes), and
the checker converts it by the parameter's Java / JavaScript type (``"5"`` -> 5 for ``integer``,
``new int[]{1, 2}`` -> [1, 2] for ``Array``). Text a converter does not recognise stays a string.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from aworld_rl_core.tooluse.bfcl._install import bfcl_root, require_module
from aworld_rl_core.tooluse.calls import DEFAULT_LIMITS, ParseLimits, ToolCallParseError

Decoded = list[dict[str, dict[Any, Any]]]
"""Decoded calls ``[{name: {param: value}}]`` (an unnamed Java/JS argument has the key None)."""

NESTED_TYPES = ("Array", "ArrayList", "array")
"""Java / JavaScript collection types whose item type BFCL's checker also checks."""


@cache
def _decoder(language: str) -> Callable[[str], Any]:
    bfcl_root()
    if language == "java":
        require_module("tree_sitter_java")
        from bfcl_eval.model_handler.parser.java_parser import parse_java_function_call

        return parse_java_function_call
    require_module("tree_sitter_javascript")
    from bfcl_eval.model_handler.parser.js_parser import parse_javascript_function_call

    return parse_javascript_function_call


def decode(text: str, language: str, *, limits: ParseLimits = DEFAULT_LIMITS) -> Decoded:
    """BFCL's prompting decoder for ``language`` ("java" or "javascript"): strip backticks,
    newlines and spaces, drop the outer brackets, parse the one call. Raises ToolCallParseError."""
    from aworld_rl_core.tooluse.bfcl.framing import frame

    if language not in ("java", "javascript"):
        raise ValueError(f"decode handles java and javascript, not {language!r}")
    framed = frame(text)
    if len(framed) > limits.max_chars:
        raise ToolCallParseError(f"output has {len(text)} characters (limit {limits.max_chars})")
    try:
        decoded = _decoder(language)(framed[1:-1])
    except RecursionError:
        raise ToolCallParseError(f"the {language} call is nested too deeply") from None
    except Exception as exc:  # tree-sitter syntax errors, repeated argument names
        raise ToolCallParseError(f"cannot read the {language} call: {exc}") from None
    if not _is_call_list(decoded):
        raise ToolCallParseError(f"no {language} function call found in the output")
    return decoded


def _is_call_list(decoded: Any) -> bool:
    """BFCL's ``is_function_calling_format_output``."""
    return isinstance(decoded, list) and all(
        isinstance(item, dict) and len(item) == 1 and isinstance(next(iter(item.values())), dict)
        for item in decoded
    )


@cache
def type_table(language: str) -> dict[str, type]:
    """BFCL's Java / JavaScript type name -> python type after conversion."""
    bfcl_root()
    from bfcl_eval.constants.type_mappings import JAVA_TYPE_CONVERSION, JS_TYPE_CONVERSION

    return dict(JAVA_TYPE_CONVERSION if language == "java" else JS_TYPE_CONVERSION)


@cache
def _converter(language: str) -> Callable[..., Any]:
    bfcl_root()
    if language == "java":
        from bfcl_eval.eval_checker.ast_eval.type_convertor.java_type_converter import (
            java_type_converter,
        )

        return java_type_converter
    from bfcl_eval.eval_checker.ast_eval.type_convertor.js_type_converter import (
        js_type_converter,
    )

    return js_type_converter


def convert(value: str, type_name: str, nested: str | None, language: str) -> Any:
    """BFCL's converter for one argument text. Raises ValueError for the types BFCL leaves
    unimplemented (Java ``Set``, ``Hashtable``, ``Queue``, ``Stack``), where bfcl-eval crashes."""
    try:
        return _converter(language)(value, type_name, nested)
    except NotImplementedError as exc:
        raise ValueError(f"BFCL cannot convert {language} {type_name} values ({exc})") from None
