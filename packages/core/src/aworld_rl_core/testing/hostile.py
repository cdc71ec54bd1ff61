"""A corpus of hostile model outputs for security tests of parsers, dispatchers and environments.

Each :class:`HostileCase` carries a payload in BFCL's python call form and in the JSON call form.
Payloads that would have a visible effect if anything evaluated them write to a ``sentinel``
path: a test asserts afterwards that the file does not exist. :func:`hostile_responses` wraps the
payloads in each response protocol, :func:`hostile_call_strings` gives single call strings (what
``MultiTurnEpisode.execute`` and ``Dispatcher.execute`` take).

Nothing here runs a payload; they are plain strings.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from os import PathLike

__all__ = [
    "PROTOCOL_WRAPPERS",
    "HostileCase",
    "hostile_call_strings",
    "hostile_cases",
    "hostile_responses",
]


@dataclass(frozen=True)
class HostileCase:
    """One attack: ``python`` is BFCL's call-list text, ``json`` the JSON call-list text."""

    name: str
    python: str
    json: str


def _j(name: str, arguments: object) -> str:
    return json.dumps([{"name": name, "arguments": arguments}])


def hostile_cases(sentinel: str | PathLike[str]) -> list[HostileCase]:
    """The corpus; ``sentinel`` is a path that must not exist after the payloads are handled."""
    p = str(sentinel)
    pr = repr(p)
    touch = f"__import__('pathlib').Path({pr}).write_text('pwned')"
    cases = [
        HostileCase(
            "import_system",
            f"[__import__('os').system('touch {p}')]",
            _j("__import__", {"name": "os"}),
        ),
        HostileCase("import_in_arg", f"[ls(a={touch})]", _j("ls", {"a": 1, "__import__": "os"})),
        HostileCase(
            "bare_import_call", f"{touch}", _j("__import__('os').system", {"command": f"touch {p}"})
        ),
        HostileCase(
            "os_system_name",
            f"[os.system(command='touch {p}')]",
            _j("os.system", {"command": f"touch {p}"}),
        ),
        HostileCase(
            "builtin_open", f"[open(file={pr}, mode='w')]", _j("open", {"file": p, "mode": "w"})
        ),
        HostileCase("builtin_eval", f"[eval(source={touch!r})]", _j("eval", {"source": touch})),
        HostileCase("builtin_exec", f"[exec({touch!r})]", _j("exec", {"source": touch})),
        HostileCase(
            "builtin_getattr",
            "[getattr(o=1, name='__class__')]",
            _j("getattr", {"o": 1, "name": "__class__"}),
        ),
        HostileCase(
            "dunder_chain",
            "[().__class__.__bases__[0].__subclasses__()]",
            _j("__class__.__bases__", {}),
        ),
        HostileCase("dunder_method", "[__init__()]", _j("__init__", {})),
        HostileCase("dunder_attr_on_tool", "[ls.__globals__()]", _j("ls.__globals__", {})),
        HostileCase("dunder_kwarg", "[ls(__class__=1)]", _j("ls", {"__class__": 1})),
        HostileCase(
            "private_load_scenario",
            f"[_load_scenario(scenario={{'path': {pr}}}, long_context=True)]",
            _j("_load_scenario", {"scenario": {"path": p}, "long_context": True}),
        ),
        HostileCase("private_method", "[_private_touch()]", _j("_private_touch", {})),
        HostileCase("lambda_arg", f"[ls(a=lambda: {touch})]", _j("lambda: ls", {})),
        HostileCase("lambda_call", f"[(lambda: {touch})()]", _j("(lambda: 1)", {})),
        HostileCase(
            "list_comprehension",
            f"[ls(a=[{touch} for _ in [1]])]",
            _j("ls", {"a": ["x"]}) + "[0]",
        ),
        HostileCase(
            "generator_expression", f"[ls(a=list({touch} for _ in 'x'))]", "[" + _j("ls", {})
        ),
        HostileCase(
            "fstring",
            "[ls(a=f\"{__import__('os').getcwd()}\")]",
            _j("ls", {"a": {"f": "{x}"}}).replace('"f"', "f"),
        ),
        HostileCase("fstring_list", f"[f'{{{touch}}}']", '{"name": "ls", "arguments": NaN}'),
        HostileCase("walrus", f"[ls(a=(x := {touch}))]", _j("ls", None)),
        HostileCase("binop_bomb", "[ls(a='a' * 10**10)]", _j("ls", "a" * 10)),
        HostileCase("pow_bomb", "[ls(a=10**10**10)]", _j("ls", [])),
        HostileCase("starred_args", "[ls(*['a'])]", _j("", {})),
        HostileCase("double_star_kwargs", "[ls(**{'a': True})]", json.dumps([{"name": "ls"}])),
        HostileCase(
            "subscript_call",
            "[ls(a=[1][0])]",
            json.dumps([{"name": "ls", "arguments": {}, "code": "x"}]),
        ),
        HostileCase("name_reference", "[ls(a=os)]", json.dumps([{"name": 1, "arguments": {}}])),
        HostileCase("attribute_value", "[ls(a=os.environ)]", json.dumps([["ls", {}]])),
        HostileCase(
            "set_literal", "[ls(a={1, 2})]", json.dumps({"name": "ls", "arguments": {"a": 1}})[:-1]
        ),
        HostileCase("bytes_literal", "[ls(a=b'x')]", _j("ls", {"a": 1}).replace("1", "Infinity")),
        HostileCase("complex_literal", "[ls(a=1j)]", _j("ls\nimport os", {})),
        HostileCase("nested_call_arg", "[ls(a=cd(folder='..'))]", _j("ls", '{"a": [}')),
        HostileCase(
            "huge_string", "[ls(a='" + "A" * 300_000 + "')]", _j("ls", {"a": "A" * 300_000})
        ),
        HostileCase("huge_list", "[ls(a=[" + "1," * 40_000 + "])]", _j("ls", {"a": [1] * 40_000})),
        HostileCase(
            "deep_list", "[ls(a=" + "[" * 60 + "]" * 60 + ")]", "[" * 100_000 + "]" * 100_000
        ),
        HostileCase(
            "very_deep_list",
            "[ls(a=" + "[" * 5_000 + "]" * 5_000 + ")]",
            _j("ls", {"a": _nested(60)}),
        ),
        HostileCase(
            "huge_int",
            "[ls(a=" + "9" * 6_000 + ")]",
            '[{"name": "ls", "arguments": {"a": ' + "9" * 6_000 + "}}]",
        ),
        HostileCase(
            "many_calls",
            "[" + "pwd(), " * 2_000 + "]",
            json.dumps([{"name": "pwd", "arguments": {}}] * 2_000),
        ),
        HostileCase("null_byte", "[ls(a='x')]\x00[exit()]", _j("ls\x00", {})),
        HostileCase("denied_exit", "[exit()]", _j("exit", {})),
        HostileCase("denied_kill", "[kill(pid=1)]", _j("kill", {"pid": 1})),
        HostileCase("statement_injection", "[ls()]; import os", _j("ls", {}) + "; import os"),
        HostileCase("not_a_call", "[1, 2, 3]", "[1, 2, 3]"),
    ]
    return cases


def _nested(depth: int) -> object:
    value: object = []
    for _ in range(depth):
        value = [value]
    return value


def _think_json(case: HostileCase) -> str:
    return f"<think>plan</think><tool_call>{case.json}</tool_call>"


def _think_python(case: HostileCase) -> str:
    return f"<think>plan</think>\n{case.python}"


def _think_tool_python(case: HostileCase) -> str:
    return f"<think>plan</think><tool_call>{case.python}</tool_call>"


def _hermes(case: HostileCase) -> str:
    body = case.json.strip()
    if body.startswith("[") and body.endswith("]"):
        body = body[1:-1]
    return f"<tool_call>\n{body}\n</tool_call>"


#: protocol name -> function wrapping a case into a full model response of that protocol.
PROTOCOL_WRAPPERS = {
    "think_json": _think_json,
    "think_python": _think_python,
    "think_tool_python": _think_tool_python,
    "hermes": _hermes,
}


def hostile_responses(protocol: str, sentinel: str | PathLike[str]) -> list[tuple[str, str]]:
    """``(case name, full model response)`` pairs for one protocol."""
    wrap = PROTOCOL_WRAPPERS.get(protocol)
    if wrap is None:
        raise ValueError(
            f"no hostile wrapper for protocol {protocol!r}; have {sorted(PROTOCOL_WRAPPERS)}"
        )
    return [(c.name, wrap(c)) for c in hostile_cases(sentinel)]


def hostile_call_strings(sentinel: str | PathLike[str]) -> list[tuple[str, str]]:
    """``(case name, call string)`` pairs: each case's python payload without the list brackets."""
    out = []
    for c in hostile_cases(sentinel):
        text = c.python
        if text.startswith("[") and text.endswith("]"):
            text = text[1:-1]
        out.append((c.name, text))
    return out
