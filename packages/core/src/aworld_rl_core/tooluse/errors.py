"""One classifier of tool results: is this return value (or its rendered text) an error?

BFCL's API classes report failure in several shapes, and a check that only looks for an
``{"error": ...}`` dict records the others as successes:

- ``{"error": "..."}`` (most classes);
- the same wrapped in a list: ``[{"error": "User not authenticated..."}]`` (``get_order_history``,
  ``get_transaction_history``, ``get_user_tickets``) or an error string in a list
  (``["Error: User not authenticated..."]``, ``get_watchlist``);
- a status string that says the call did nothing: ``{"status": "No user is currently logged
  in"}`` (``logout``);
- an error string: what a dispatcher renders for a call that raised (``Error during execution:
  ...``) or a tool's own ``Error: ...`` text.

Those are ``kind="error"``. Softer shapes report that the call ran but did not do what it was
asked: ``{"success": false}``, ``{"login_status": false, ...}``, ``{"symbol": "Stock not
found"}``, ``{"verification_failure": ...}``; they are ``kind="failure"``. :func:`result_error`
classifies a value, :func:`text_error` a rendered result (JSON, or Python's ``str`` of a list as
BFCL renders lists; read with ``json`` / ``ast.literal_eval`` only, bounded in size).
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from typing import Any, Literal

ErrorKind = Literal["error", "failure"]

ERROR_PREFIXES = ("Error during execution", "Error:")
"""A string result that starts with one of these is an error."""

FAILURE_STATUSES = frozenset({"no user is currently logged in"})
"""``status`` values (lower case, without the final period) that mean the call did nothing."""

_MAX_TEXT = 20_000


@dataclass(frozen=True)
class ResultError:
    """Why a result is not a success: ``kind`` (``error`` or ``failure``) and a message."""

    kind: ErrorKind
    message: str


def _error_string(value: Any) -> bool:
    return isinstance(value, str) and value.lstrip().startswith(ERROR_PREFIXES)


def _error_dict(value: Any) -> bool:
    return isinstance(value, dict) and "error" in value


def result_error(value: Any) -> ResultError | None:
    """The error (or failure) a tool's return value reports, or None for a success."""
    if _error_dict(value):
        return ResultError("error", str(value["error"]))
    if _error_string(value):
        return ResultError("error", value.strip())
    if isinstance(value, (list, tuple)) and value:
        if all(_error_dict(v) or _error_string(v) for v in value):
            first = value[0]
            return ResultError("error", str(first["error"] if _error_dict(first) else first))
        return None
    if not isinstance(value, dict):
        return None
    status = value.get("status")
    if isinstance(status, str) and status.strip().rstrip(".").lower() in FAILURE_STATUSES:
        return ResultError("error", status)
    for key, item in value.items():
        if not isinstance(key, str):
            continue
        if item is False and (key == "success" or key.endswith("status")):
            message = value.get("message")
            return ResultError("failure", str(message) if message else f"{key} is false")
        if key.endswith("_failure") and item:
            return ResultError("failure", str(item))
        if isinstance(item, str) and "not found" in item.lower():
            return ResultError("failure", item)
    return None


def parse_result_text(text: str) -> Any:
    """A rendered result read back as a value (JSON, then a Python literal); the text itself
    when it is neither (or longer than 20,000 characters)."""
    if not isinstance(text, str) or len(text) > _MAX_TEXT:
        return text
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return text
    try:
        return json.loads(stripped)
    except (ValueError, RecursionError):
        pass
    try:
        return ast.literal_eval(stripped)  # literals only: BFCL renders lists with str()
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text


def text_error(text: str) -> ResultError | None:
    """:func:`result_error` of a rendered result."""
    return result_error(parse_result_text(text))


def is_error(value: Any) -> bool:
    """Whether a return value reports an error or a failure."""
    return result_error(value) is not None
