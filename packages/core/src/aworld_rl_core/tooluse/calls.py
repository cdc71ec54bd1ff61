r"""Tool calls as data: parse BFCL's python call lists and JSON call lists without evaluating them.

Model text is never evaluated. ``parse_python_calls`` accepts literal arguments only (str, int,
finite float incl. negative, bool, None, list, tuple, dict, nested); anything else (names,
attribute access on values, lambdas, comprehensions, f-strings, operators, starred or ``**``
arguments, dunder names, ``1e999``, names that only match after Python's NFKC folding, such as
``𝐜𝐝`` for ``cd``) raises :class:`ToolCallParseError` with the reason. Size limits bound the
text length, the nesting depth and the number of literal nodes.

Two readers give the same results: a token scanner for the common plain form (``[f(a=1,
b='x')]``: unprefixed strings whose only escapes are ``\\ \' \" \n \t \r \xHH \uHHHH``, decimal
numbers, ASCII names, no comments) that returns ``None`` on anything else or on any limit, and
the reference reader that walks Python's ``ast`` (which then decides, with its exact errors).
The scanner skips ``ast.parse``, which is most of the cost of reading a short call list.
"""

from __future__ import annotations

import ast
import json
import keyword
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = [
    "Call",
    "ParseLimits",
    "ToolCallParseError",
    "bind_positional",
    "format_python_call",
    "format_python_calls",
    "parse_json_calls",
    "parse_python_calls",
    "signatures_from_tools",
]

_NAME_SEGMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class ToolCallParseError(ValueError):
    """Model text is not a well-formed, literal-only tool call (the message says why)."""


@dataclass(frozen=True)
class ParseLimits:
    """Bounds that keep hostile text from exhausting memory or the stack."""

    max_chars: int = 100_000
    max_depth: int = 24
    max_nodes: int = 20_000
    max_calls: int = 256


DEFAULT_LIMITS = ParseLimits()


@dataclass(frozen=True)
class Call:
    """One tool call: a (possibly dotted) function name, keyword arguments, positional arguments."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    positional: tuple[Any, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The JSON form ``{"name": ..., "arguments": {...}}`` (positional args must be bound)."""
        if self.positional:
            raise ValueError(
                f"call {self.name!r} has positional arguments; bind them to names first "
                "(bind_positional) before converting to the JSON form"
            )
        return {"name": self.name, "arguments": dict(self.arguments)}

    def to_python(self) -> str:
        """BFCL's call-string form, e.g. ``mv(source='a.txt', destination='tmp')``."""
        return format_python_call(self)


# ---------------------------------------------------------------------------------------------
# Python call lists
# ---------------------------------------------------------------------------------------------


def parse_python_calls(
    text: str,
    *,
    signatures: Mapping[str, Sequence[str]] | None = None,
    limits: ParseLimits = DEFAULT_LIMITS,
) -> list[Call]:
    """Parse ``[f(a=1, b='x'), g()]`` (or one bare call ``f(a=1)``) into calls, literals only.

    ``signatures`` maps a function name to its ordered parameter names; positional arguments of a
    call whose name is in it are bound to those names (see :func:`bind_positional`). Calls to
    other names keep their positional arguments in ``Call.positional``.
    """
    if not isinstance(text, str):
        raise ToolCallParseError(f"expected the call text as str, got {type(text).__name__}")
    if len(text) > limits.max_chars:
        raise ToolCallParseError(
            f"call text has {len(text)} characters, over the limit of {limits.max_chars}"
        )
    source = text.strip()
    if not source:
        raise ToolCallParseError("call text is empty; expected a list such as [f(a=1)]")
    calls = _scan_calls(source, limits)
    if calls is None:
        calls = _calls_from_ast(source, limits)
    if signatures:
        calls = [
            bind_positional(c, signatures[c.name]) if c.positional and c.name in signatures else c
            for c in calls
        ]
    return calls


def _calls_from_ast(source: str, limits: ParseLimits) -> list[Call]:
    """The reference reader: Python's ``ast`` of the stripped text, literals only."""
    try:
        tree = ast.parse(source, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        reason = exc.msg if isinstance(exc, SyntaxError) else str(exc) or type(exc).__name__
        raise ToolCallParseError(f"not a python call list: {reason}") from None
    body = tree.body
    if isinstance(body, ast.Call):
        nodes: list[ast.expr] = [body]
    elif isinstance(body, (ast.List, ast.Tuple)):
        nodes = list(body.elts)
    else:
        raise ToolCallParseError(
            f"expected a list of calls such as [f(a=1)], got a {_describe(body)}"
        )
    budget = _Budget(limits, calls=len(nodes))
    calls = [_call_from_node(node, budget) for node in nodes]
    if not source.isascii():  # Python folds look-alike identifiers (NFKC): 𝐜𝐝 reads as cd
        for node, call in zip(nodes, calls, strict=True):
            _check_as_written(source, node, call)  # type: ignore[arg-type]
    return calls


def _check_as_written(source: str, node: ast.Call, call: Call) -> None:
    """Refuse a call whose function or argument names are spelled otherwise in ``source``."""
    written = "".join((ast.get_source_segment(source, node.func) or "").split())
    if written != call.name:
        raise ToolCallParseError(
            f"function name {written!r} is not ASCII as written (it reads as {call.name!r} "
            "only after Unicode folding); write the exact name"
        )
    for kw in node.keywords:
        segment = ast.get_source_segment(source, kw) or ""
        name = segment.split("=", 1)[0].strip()
        if name != kw.arg:
            raise ToolCallParseError(
                f"{call.name}: argument name {name!r} is not ASCII as written; write {kw.arg!r}"
            )


class _Budget:
    """Counts literal nodes across one parse and enforces the depth and call-count limits."""

    def __init__(self, limits: ParseLimits, calls: int = 0) -> None:
        if calls > limits.max_calls:
            raise ToolCallParseError(f"{calls} calls, over the limit of {limits.max_calls}")
        self.limits = limits
        self.nodes = 0
        self.max_nodes = limits.max_nodes
        self.max_depth = limits.max_depth

    def spend(self, depth: int) -> None:
        self.nodes += 1
        if self.nodes > self.max_nodes or depth > self.max_depth:
            self.fail(depth)

    def fail(self, depth: int) -> None:
        if self.nodes > self.max_nodes:
            raise ToolCallParseError(f"arguments hold more than {self.max_nodes} literal values")
        raise ToolCallParseError(f"arguments nest deeper than the limit of {self.max_depth}")


def _call_from_node(node: ast.expr, budget: _Budget) -> Call:
    if not isinstance(node, ast.Call):
        raise ToolCallParseError(f"list element is a {_describe(node)}, not a function call")
    name = _dotted_name(node.func)
    positional = []
    for arg in node.args:
        if isinstance(arg, ast.Starred):
            raise ToolCallParseError(f"{name}: starred (*args) arguments are not allowed")
        positional.append(_literal(arg, budget, 1))
    arguments: dict[str, Any] = {}
    for kw in node.keywords:
        if kw.arg is None:
            raise ToolCallParseError(f"{name}: **kwargs arguments are not allowed")
        if kw.arg.startswith("__"):
            raise ToolCallParseError(f"{name}: dunder argument name {kw.arg!r} is not allowed")
        if kw.arg in arguments:
            raise ToolCallParseError(f"{name}: keyword argument {kw.arg!r} repeated")
        arguments[kw.arg] = _literal(kw.value, budget, 1)
    return Call(name=name, arguments=arguments, positional=tuple(positional))


def _dotted_name(func: ast.expr) -> str:
    parts: list[str] = []
    node = func
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        raise ToolCallParseError(
            f"function must be a plain or dotted name, got a {_describe(node)} in {_snippet(func)}"
        )
    parts.append(node.id)
    name = ".".join(reversed(parts))
    _check_name(name)
    return name


def _check_name(name: str) -> None:
    segments = name.split(".")
    for seg in segments:
        if not (seg.isascii() and seg.isidentifier()):  # same as _NAME_SEGMENT, faster
            raise ToolCallParseError(f"invalid function name {name!r}")
        if seg.startswith("__"):
            raise ToolCallParseError(f"dunder name {name!r} is not allowed as a function name")


def _literal(node: ast.expr, budget: _Budget, depth: int) -> Any:
    budget.nodes += 1  # budget.spend(depth), inlined: this runs once per literal
    if budget.nodes > budget.max_nodes or depth > budget.max_depth:
        budget.fail(depth)
    if isinstance(node, ast.Constant):
        value = node.value
        if type(value) is float and not math.isfinite(value):
            raise ToolCallParseError(f"number {_snippet(node)} is out of range (not finite)")
        if value is None or isinstance(value, (str, bool, int, float)):
            return value
        return _constant(value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        operand = node.operand
        number = operand.value if isinstance(operand, ast.Constant) else None
        if isinstance(number, (int, float)) and not isinstance(number, bool):
            if isinstance(number, float) and not math.isfinite(number):
                raise ToolCallParseError(f"number {_snippet(node)} is out of range (not finite)")
            return -number if isinstance(node.op, ast.USub) else number
        raise ToolCallParseError(f"unary sign only applies to numbers, got {_snippet(node)}")
    if isinstance(node, ast.List):
        return [_literal(e, budget, depth + 1) for e in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(_literal(e, budget, depth + 1) for e in node.elts)
    if isinstance(node, ast.Dict):
        out: dict[Any, Any] = {}
        for k, v in zip(node.keys, node.values, strict=True):
            if k is None:
                raise ToolCallParseError("dict unpacking (**) is not allowed in arguments")
            key = _literal(k, budget, depth + 1)
            if isinstance(key, (list, dict)):
                raise ToolCallParseError(f"dict key must be a str/number/bool/None: {_snippet(k)}")
            try:
                hash(key)
            except TypeError:
                raise ToolCallParseError(f"dict key is not hashable: {_snippet(k)}") from None
            out[key] = _literal(v, budget, depth + 1)
        return out
    raise ToolCallParseError(
        f"argument values must be literals; got a {_describe(node)}: {_snippet(node)}"
    )


def _constant(value: Any) -> Any:
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    raise ToolCallParseError(f"literal of type {type(value).__name__} is not allowed")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _describe(node: ast.AST) -> str:
    return type(node).__name__


def _snippet(node: ast.AST, width: int = 60) -> str:
    try:
        text = ast.unparse(node)
    except Exception:  # ast.unparse of odd trees; the snippet is only for the message
        text = type(node).__name__
    return text if len(text) <= width else text[: width - 3] + "..."


# ---------------------------------------------------------------------------------------------
# Token scanner for plain call lists (same results as the ast reader, or None)
# ---------------------------------------------------------------------------------------------

# A number as Python writes it without underscores, prefixes or imaginary parts, with its sign.
_NUMBER = (
    r"[-+]?(?:[0-9]+\.[0-9]*(?:[eE][-+]?[0-9]+)?|\.[0-9]+(?:[eE][-+]?[0-9]+)?"
    r"|[0-9]+[eE][-+]?[0-9]+|0|[1-9][0-9]*)"
)
# A string without prefix, line break or control character, whose only escapes are \\ \' \" \n
# \t \r \xHH \uHHHH: its text, with those escapes replaced, is its value.
_PLAIN = r"[^{q}\\\x00-\x08\x0a-\x1f\x7f-\x9f\ud800-\udfff]*"
_ESCAPES = r"\\(?:[\\'\"ntr]|x[0-9a-fA-F]{{2}}|u[0-9a-fA-F]{{4}})"
_QUOTED = "{q}" + _PLAIN + "(?:" + _ESCAPES + _PLAIN + ")*{q}"
_STRING = _QUOTED.format(q="'") + "|" + _QUOTED.format(q='"')
_ESCAPE = re.compile(r"\\(x..|u....|.)")
_ESCAPED = {"\\": "\\", "'": "'", '"': '"', "n": "\n", "t": "\t", "r": "\r"}
_NAME = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"
# Each match is one token; any other character matches the bare ``.`` and yields "". The four
# kinds start with distinct characters, so their order only matters for speed.
_TOKEN = re.compile(
    r"[ \t\n]*(?:(" + "|".join((r"[\[\](){}:,=]", _NAME, _STRING, _NUMBER)) + r")|.)", re.DOTALL
)
_END = "\x00"  # appended after the last token; no grammar rule accepts it
_STR, _NUM, _IDENT = 1, 2, 3
_KIND = {
    **{c: _STR for c in "'\""},
    **{c: _NUM for c in "0123456789-+."},
    **{c: _IDENT for c in "_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"},
}
_CONSTANTS = {"True": True, "False": False, "None": None}
_SCAN_DEPTH = 100
_KEYWORDS = frozenset(keyword.kwlist)


class _NotPlain(Exception):
    """The text leaves the scanner's subset; the ast reader decides."""


def _scan_calls(source: str, limits: ParseLimits) -> list[Call] | None:
    """Calls of a plain ``[f(a=1), g('x')]`` or ``f(a=1)`` text; ``None`` when not plain.

    Accepts only texts that the ast reader accepts, with equal results (a limit reached or a
    doubt also gives ``None``).
    """
    tokens = _TOKEN.findall(source)
    if "" in tokens:
        return None
    tokens.append(_END)
    it = iter(tokens)
    # nesting past _SCAN_DEPTH goes to the ast reader (Python's parser stops at 200 brackets);
    # this also bounds the scanner's recursion whatever the limits say
    budget = [limits.max_nodes, min(limits.max_depth, _SCAN_DEPTH)]
    first = next(it)
    try:
        if first == "[":
            calls: list[Call] = []
            token = next(it)
            while token != "]":
                calls.append(_scan_call(token, it, budget))
                token = next(it)
                if token == ",":
                    token = next(it)
                elif token != "]":
                    return None
            if len(calls) > limits.max_calls:
                return None
        elif source.startswith("(", len(first)):  # a bare call: no line break before "("
            calls = [_scan_call(first, it, budget)]
        else:
            return None
        if next(it) != _END:
            return None
    except (_NotPlain, TypeError):  # TypeError: an unhashable dict key
        return None
    return calls


def _scan_call(name: str, it: Iterator[str], budget: list[int]) -> Call:
    if (
        _KIND.get(name[0]) != _IDENT
        or "__" in name
        or next(it) != "("
        or name in _KEYWORDS
        or ("." in name and not _KEYWORDS.isdisjoint(name.split(".")))
    ):
        raise _NotPlain
    positional: list[Any] = []
    arguments: dict[str, Any] = {}
    token = next(it)
    while token != ")":
        if token in _CONSTANTS or _KIND.get(token[0]) != _IDENT:
            if arguments:  # a positional argument after a keyword argument
                raise _NotPlain
            positional.append(_scan_value(token, it, 1, budget))
        elif (
            next(it) != "="
            or token in arguments
            or token in _KEYWORDS
            or "." in token
            or token.startswith("__")
        ):
            raise _NotPlain
        else:
            arguments[token] = _scan_value(next(it), it, 1, budget)
        token = next(it)
        if token == ",":
            token = next(it)
        elif token != ")":
            raise _NotPlain
    return Call(name, arguments, tuple(positional))


def _unescape(match: re.Match[str]) -> str:
    code = match[1]
    return _ESCAPED[code] if len(code) == 1 else chr(int(code[1:], 16))


def _scan_value(token: str, it: Iterator[str], depth: int, budget: list[int]) -> Any:
    """One literal starting at ``token``; counts nodes and depth as ``_literal`` does."""
    budget[0] -= 1
    if budget[0] < 0 or depth > budget[1]:
        raise _NotPlain
    kind = _KIND.get(token[0])
    if kind == _STR:
        text = token[1:-1]
        return _ESCAPE.sub(_unescape, text) if "\\" in text else text
    if kind == _NUM:
        if len(token) > 40:  # leave long digit strings (int digit limits) to the ast reader
            raise _NotPlain
        if "." in token or "e" in token or "E" in token:
            number = float(token)
            if not math.isfinite(number):  # 1e999: the ast reader gives the error
                raise _NotPlain
            return number
        return int(token)
    if kind == _IDENT:
        if token in _CONSTANTS:
            return _CONSTANTS[token]
        raise _NotPlain
    if token == "[":
        items: list[Any] = []
        token = next(it)
        while token != "]":
            items.append(_scan_value(token, it, depth + 1, budget))
            token = next(it)
            if token == ",":
                token = next(it)
            elif token != "]":
                raise _NotPlain
        return items
    if token == "(":
        elements: list[Any] = []
        comma = False
        token = next(it)
        while token != ")":
            elements.append(_scan_value(token, it, depth + 1, budget))
            token = next(it)
            if token == ",":
                comma = True
                token = next(it)
            elif token != ")":
                raise _NotPlain
        if len(elements) == 1 and not comma:  # "(x)" is x, not a tuple
            raise _NotPlain
        return tuple(elements)
    if token == "{":
        out: dict[Any, Any] = {}
        token = next(it)
        while token != "}":
            key = _scan_value(token, it, depth + 1, budget)
            if type(key) is list or type(key) is dict or next(it) != ":":
                raise _NotPlain
            hash(key)
            out[key] = _scan_value(next(it), it, depth + 1, budget)
            token = next(it)
            if token == ",":
                token = next(it)
            elif token != "}":
                raise _NotPlain
        return out
    raise _NotPlain


# ---------------------------------------------------------------------------------------------
# Positional arguments and signatures
# ---------------------------------------------------------------------------------------------


def bind_positional(call: Call, param_names: Sequence[str]) -> Call:
    """Move ``call.positional`` into ``call.arguments`` using the ordered ``param_names``."""
    if not call.positional:
        return call
    if len(call.positional) > len(param_names):
        raise ToolCallParseError(
            f"{call.name}: {len(call.positional)} positional arguments but the function takes "
            f"at most {len(param_names)} ({', '.join(param_names) or 'none'})"
        )
    bound: dict[str, Any] = {}
    for pname, value in zip(param_names, call.positional, strict=False):
        if pname in call.arguments:
            raise ToolCallParseError(f"{call.name}: got multiple values for argument {pname!r}")
        bound[pname] = value
    return replace(call, arguments={**bound, **call.arguments}, positional=())


def signatures_from_tools(tools: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Ordered parameter names per function from BFCL docs or OpenAI tool schemas."""
    out: dict[str, list[str]] = {}
    for tool in tools:
        doc = tool.get("function", tool) if tool.get("type") == "function" else tool
        name = doc.get("name")
        if not isinstance(name, str):
            raise ValueError(f"tool schema without a string 'name': {str(tool)[:120]}")
        params = doc.get("parameters") or {}
        props = params.get("properties") or {}
        out[name] = list(props)
    return out


# ---------------------------------------------------------------------------------------------
# Formatting (BFCL call strings)
# ---------------------------------------------------------------------------------------------


def format_python_call(call: Call) -> str:
    """Render a call the way BFCL writes call strings; ``parse_python_calls`` reads it back."""
    parts = [_format_value(v) for v in call.positional]
    parts += [f"{k}={_format_value(v)}" for k, v in call.arguments.items()]
    return f"{call.name}({', '.join(parts)})"


def format_python_calls(calls: Iterable[Call]) -> str:
    """Render a list of calls as BFCL's python list ``[f(a=1), g()]``."""
    return "[" + ", ".join(format_python_call(c) for c in calls) + "]"


def _format_value(value: Any) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{value} has no literal form in a python call string (not finite)")
    if isinstance(value, list):
        return "[" + ", ".join(_format_value(v) for v in value) + "]"
    if isinstance(value, tuple):
        inner = ", ".join(_format_value(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, dict):
        items = ", ".join(f"{_format_value(k)}: {_format_value(v)}" for k, v in value.items())
        return "{" + items + "}"
    if value is None or isinstance(value, (str, int, float, bool)):
        return repr(value)
    raise ValueError(f"value of type {type(value).__name__} has no literal form: {value!r}")


# ---------------------------------------------------------------------------------------------
# JSON call lists
# ---------------------------------------------------------------------------------------------


def parse_json_calls(
    text_or_obj: str | Sequence[Any] | Mapping[str, Any],
    *,
    limits: ParseLimits = DEFAULT_LIMITS,
) -> list[Call]:
    """Parse ``[{"name": ..., "arguments": {...}}, ...]`` (a str or already-loaded JSON).

    One object instead of a list is accepted as a single call. ``arguments`` may itself be a JSON
    string holding an object (the OpenAI wire form); the only allowed keys are ``name`` and
    ``arguments``.
    """
    obj: Any = text_or_obj
    if isinstance(text_or_obj, str):
        obj = _load_json(text_or_obj, limits, what="tool call")
    if isinstance(obj, Mapping):
        items: list[Any] = [obj]
    elif isinstance(obj, (list, tuple)):
        items = list(obj)
    else:
        raise ToolCallParseError(
            f"expected a JSON list of {{'name', 'arguments'}} objects, got {type(obj).__name__}"
        )
    budget = _Budget(limits, calls=len(items))
    return [_call_from_json(item, i, limits, budget) for i, item in enumerate(items)]


def _call_from_json(item: Any, index: int, limits: ParseLimits, budget: _Budget) -> Call:
    if not isinstance(item, Mapping):
        raise ToolCallParseError(f"call #{index} is a {type(item).__name__}, not an object")
    unknown = sorted(set(item) - {"name", "arguments"})
    if unknown:
        raise ToolCallParseError(
            f"call #{index} has unknown keys {unknown}; only 'name' and 'arguments' are allowed"
        )
    name = item.get("name")
    if not isinstance(name, str) or not name:
        raise ToolCallParseError(f"call #{index} needs a non-empty string 'name'")
    _check_name(name)
    if "arguments" not in item:
        raise ToolCallParseError(f"call #{index} ({name}) has no 'arguments' object")
    args = item["arguments"]
    if isinstance(args, str):
        args = _load_json(args, limits, what=f"arguments of {name}")
    if not isinstance(args, Mapping):
        raise ToolCallParseError(
            f"arguments of {name} must be an object, got {type(args).__name__}"
        )
    for key in args:
        if not isinstance(key, str) or not _NAME_SEGMENT.match(key) or key.startswith("__"):
            raise ToolCallParseError(f"{name}: invalid argument name {key!r}")
    for value in args.values():
        _check_json_value(value, budget, 1)
    return Call(name=name, arguments=dict(args))


def _load_json(text: str, limits: ParseLimits, *, what: str) -> Any:
    if len(text) > limits.max_chars:
        raise ToolCallParseError(
            f"{what} JSON has {len(text)} characters, over the limit of {limits.max_chars}"
        )
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        raise ToolCallParseError(f"{what} is not valid JSON: {exc.msg} at char {exc.pos}") from None
    except ToolCallParseError:
        raise
    except (RecursionError, MemoryError):
        raise ToolCallParseError(f"{what} JSON nests too deeply") from None
    except ValueError as exc:  # e.g. an integer literal over Python's digit limit
        raise ToolCallParseError(f"{what} is not acceptable JSON: {exc}") from None


def _reject_constant(name: str) -> Any:
    raise ToolCallParseError(f"JSON constant {name} is not allowed in tool calls")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ToolCallParseError(f"JSON number {text[:40]} is out of range (not finite)")
    return value


def _check_json_value(value: Any, budget: _Budget, depth: int) -> None:
    budget.spend(depth)
    if isinstance(value, Mapping):
        for v in value.values():
            _check_json_value(v, budget, depth + 1)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _check_json_value(v, budget, depth + 1)
    elif type(value) is float and not math.isfinite(value):
        raise ToolCallParseError(f"number {value} is not allowed (not finite)")
    elif not (value is None or isinstance(value, (str, int, float, bool))):
        raise ToolCallParseError(f"value of type {type(value).__name__} is not allowed")
