"""BFCL's single-turn AST checker, re-implemented natively.

Same verdicts as ``bfcl_eval.eval_checker.ast_eval.ast_checker`` (2026.3.23): function name,
required/unknown parameters, types (python: int accepted for float, one level of nested item
types; Java / JavaScript: every value arrives as text and is converted by BFCL's own converters
for the parameter's type, see :mod:`java_js`), allowed values with BFCL's string normalisation,
dict and list-of-dict values, order-insensitive greedy matching for parallel categories. Inputs
are decoded calls ``[{name: {param: value}}]`` and BFCL's possible answers
``[{name: {param: [allowed values]}}]``. Results are ``(valid, error_type, message)``. Where
bfcl-eval raises (a Java type it has no conversion for), the call fails here instead.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

Result = tuple[bool, str, str]
OK: Result = (True, "", "")

PYTHON_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "float": float,
    "boolean": bool,
    "array": list,
    "tuple": list,
    "dict": dict,
    "any": str,
}
NESTED_TYPES = ("array", "tuple")
_PUNCTUATION = re.compile(r"[ \,\.\/\-\_\*\^]")


@lru_cache(maxsize=65536)
def standardize(text: str) -> str:
    """BFCL's string normalisation: drop spaces and ``,./-_*^``, lower-case, ' -> "."""
    return _PUNCTUATION.sub("", text).lower().replace("'", '"')


def _std(value: Any) -> Any:
    return standardize(value) if type(value) is str else value


def _answer_type(allowed: list[Any]) -> type | None:
    """Type of the first non-optional allowed value (BFCL's variable detection)."""
    for answer in allowed:
        if answer != "":
            return type(answer)
    return None


def _check_type(
    param: str, value: Any, allowed: list[Any], type_name: str, expected: type, nested: type | None
) -> tuple[Result, bool]:
    """BFCL's ``type_checker``: ``(result, is_variable)``."""
    answer_type = _answer_type(allowed)
    is_variable = answer_type is not None and answer_type is not expected
    if type(value) is expected:
        if nested is None:
            return OK, is_variable
        items: Any = value
        for option in allowed:
            if type(option) is list and any(
                not _check_type(param, item, option, nested.__name__, nested, None)[0][0]
                for item in items
            ):
                continue
            return OK, is_variable
        failure = (False, "type_error:nested", f"nested type check failed for {param!r}")
        if answer_type is not None and type(value) is answer_type:
            return failure, True
        return (False, "type_error:simple", failure[2]), False
    if answer_type is not None and type(value) is answer_type:
        return OK, True
    message = (
        f"incorrect type for parameter {param!r}: expected {type_name}, "
        f"got {type(value).__name__} ({value!r})"
    )
    return (False, "type_error:simple", message), False


def _check_string(param: str, value: str, allowed: list[Any]) -> Result:
    wanted = standardize(value)
    for answer in allowed:
        if type(answer) is str and standardize(answer) == wanted:
            return OK
    return False, "value_error:string", f"invalid value for {param!r}: {value!r}"


def _check_list(param: str, value: list[Any], allowed: list[Any]) -> Result:
    model = [_std(item) for item in value]
    options = [
        [_std(item) for item in option] for option in allowed if isinstance(option, (list, str))
    ]
    if model in options:
        return OK
    return False, "value_error:list/tuple", f"invalid value for {param!r}: {value!r}"


def _check_dict(param: str, value: dict[Any, Any], allowed: list[Any]) -> Result:
    result: Result = (False, "dict_checker:unclear", f"invalid dict for {param!r}")
    for option in allowed:
        if option == "":
            continue
        result = _match_dict(value, option)
        if result[0]:
            return OK
    return result


def _match_dict(value: dict[Any, Any], option: dict[str, list[Any]]) -> Result:
    for key, item in value.items():
        if key not in option:
            return False, "value_error:dict_key", f"unexpected dict key {key!r}"
        if _std(item) not in [_std(a) for a in option[key]]:
            return False, "value_error:dict_value", f"invalid value for dict key {key!r}: {item!r}"
    for key, choices in option.items():
        if key not in value and "" not in choices:
            return False, "value_error:dict_key", f"missing dict key {key!r}"
    return OK


def _check_list_of_dicts(param: str, value: list[Any], allowed: list[Any]) -> Result:
    result: Result = (False, "list_dict_checker:unclear", f"invalid list of dicts for {param!r}")
    for option in allowed:
        if len(value) != len(option):
            result = (False, "value_error:list_dict_count", f"wrong number of dicts in {param!r}")
            continue
        for item, expected in zip(value, option, strict=True):
            result = _check_dict(param, item, [expected])
            if not result[0]:
                break
        else:
            return OK
    return result


def _check_value(
    param: str, value: Any, allowed: list[Any], expected: type, nested: type | None
) -> Result:
    if expected is dict:
        return _check_dict(param, value, allowed)
    if expected is list and nested is dict:
        return _check_list_of_dicts(param, value, allowed)
    if expected is str:
        return _check_string(param, value, allowed)
    if expected is list:
        return _check_list(param, value, allowed)
    return _check_literal(param, value, allowed)


def _check_literal(param: str, value: Any, allowed: list[Any]) -> Result:
    if value in allowed:
        return OK
    return False, "value_error:others", f"invalid value for {param!r}: {value!r}"


class _Rejected(Exception):
    """A Java / JavaScript argument fails before its value is checked (carries the Result)."""

    def __init__(self, result: Result) -> None:
        super().__init__(result[2])
        self.result = result


def _java_js_value(
    param: str, value: Any, spec: dict[str, Any], language: str
) -> tuple[Any, type, type | None]:
    """(converted value, expected type, nested item type) of a Java / JavaScript argument.
    Raises _Rejected when its type is unknown, its value is not text or BFCL cannot convert it."""
    from aworld_rl_core.tooluse.bfcl.java_js import NESTED_TYPES, convert, type_table

    table = type_table(language)
    type_name = spec["type"]
    if type_name not in table:
        message = f"{param!r} has unknown {language} type {type_name!r}"
        raise _Rejected((False, "type_error:unknown", message))
    tag = "java" if language == "java" else "js"
    if type(value) is not str:
        message = f"incorrect type for parameter {param!r}: expected String, got {value!r}"
        raise _Rejected((False, f"type_error:{tag}", message))
    nested_name = spec["items"]["type"] if type_name in NESTED_TYPES else None
    if nested_name is not None and nested_name not in table:
        message = f"{param!r} has unknown item type {nested_name!r}"
        raise _Rejected((False, "type_error:unknown", message))
    try:
        converted = convert(value, type_name, nested_name, language)
    except ValueError as exc:
        raise _Rejected((False, f"type_error:{tag}", f"parameter {param!r}: {exc}")) from None
    return converted, table[type_name], table[nested_name] if nested_name else None


def check_call(
    doc: dict[str, Any], call: dict[str, Any], answer: dict[str, Any], language: str = "python"
) -> Result:
    """BFCL's ``simple_function_checker``: one decoded call against one possible answer."""
    allowed_params = next(iter(answer.values()))
    name = doc["name"]
    properties = doc["parameters"]["properties"]
    if name not in call:
        return False, "simple_function_checker:wrong_func_name", f"function {name!r} not called"
    params = call[name]
    for required in doc["parameters"].get("required", ()):
        if required not in params:
            return (
                False,
                "simple_function_checker:missing_required",
                f"missing required parameter {required!r}",
            )
    for param, value in params.items():
        if param not in properties or param not in allowed_params:
            return False, "simple_function_checker:unexpected_param", f"unexpected {param!r}"
        spec = properties[param]
        type_name = spec["type"]
        if language != "python":
            try:
                value, expected, nested = _java_js_value(param, value, spec, language)
            except _Rejected as rejected:
                return rejected.result
        else:
            if type_name not in PYTHON_TYPES:
                message = f"{param!r} has unknown BFCL type {type_name!r}"
                return False, "type_error:unknown", message
            expected = PYTHON_TYPES[type_name]
            nested = PYTHON_TYPES.get(spec["items"]["type"]) if type_name in NESTED_TYPES else None
            if type_name == "float" and type(value) is int:
                value = float(value)
        if type_name == "tuple" and type(value) is tuple:
            value = list(value)
        allowed = allowed_params[param]
        if nested is None and type(value) is expected:  # _check_type's common case, inlined
            is_variable = False
            for answer_value in allowed:
                if answer_value != "":
                    is_variable = type(answer_value) is not expected
                    break
        else:
            result, is_variable = _check_type(param, value, allowed, type_name, expected, nested)
            if not result[0]:
                return result
        if is_variable or expected is int or expected is float or expected is bool:
            result = _check_literal(param, value, allowed)
        elif expected is str:
            result = _check_string(param, value, allowed)
        else:
            result = _check_value(param, value, allowed, expected, nested)
        if not result[0]:
            return result
    for param, allowed in allowed_params.items():
        if param not in params and "" not in allowed:
            return (
                False,
                "simple_function_checker:missing_optional",
                f"optional parameter {param!r} not provided and not marked as optional",
            )
    return OK


def _find_doc(docs: list[dict[str, Any]], name: str) -> dict[str, Any] | None:
    return next((doc for doc in docs if doc["name"] == name), None)


def check_parallel(
    docs: list[dict[str, Any]], calls: list[Any], answers: list[Any], language: str = "python"
) -> Result:
    """Every possible answer matched by a distinct call, greedily, in any order."""
    if len(calls) != len(answers):
        return False, "parallel_function_checker_no_order:wrong_count", "wrong number of calls"
    matched: set[int] = set()
    for index, answer in enumerate(answers):
        doc = _find_doc(docs, next(iter(answer)))
        if doc is None:
            return False, "parallel_function_checker_no_order:cannot_find_match", "no doc"
        unmatched = (i for i in range(len(calls)) if i not in matched)
        found = next((i for i in unmatched if check_call(doc, calls[i], answer, language)[0]), None)
        if found is None:
            return (
                False,
                "parallel_function_checker_no_order:cannot_find_match",
                f"no call matches possible answer #{index} ({next(iter(answer))})",
            )
        matched.add(found)
    return OK


def check_multiple(
    docs: list[dict[str, Any]], calls: list[Any], answers: list[Any], language: str = "python"
) -> Result:
    """One call, checked against the doc of the expected function."""
    if len(calls) != len(answers):
        return False, "multiple_function_checker:wrong_count", "wrong number of calls"
    doc = _find_doc(docs, next(iter(answers[0])))
    if doc is None:
        return False, "multiple_function_checker:wrong_func_name", "expected function has no doc"
    return check_call(doc, calls[0], answers[0], language)


def ast_check(
    docs: list[dict[str, Any]],
    calls: list[Any],
    answers: list[Any],
    category: str,
    language: str = "python",
) -> Result:
    """BFCL's ``ast_checker`` dispatch on the category name."""
    if "parallel" in category:
        return check_parallel(docs, calls, answers, language)
    if "multiple" in category:
        return check_multiple(docs, calls, answers, language)
    if len(calls) != 1:
        return False, "simple_function_checker:wrong_count", "wrong number of calls"
    return check_call(docs[0], calls[0], answers[0], language)
