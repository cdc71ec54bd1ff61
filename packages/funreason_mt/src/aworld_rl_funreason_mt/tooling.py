"""Phase II, first half: the tooling agent turns a trace into one advanced tool (MT-v2 4.2).

``T_adv = A_T(Turn_i)``: one composite tool whose inputs are only the user-facing values of the
trace (the arguments the sampler took from the state, an enum or a fresh value, never those it
took from an earlier output) and whose output is the final result. The agent answers with a JSON
object; :func:`parse_advanced_tool` checks it and raises :class:`ReplyError` naming every
problem (the pipeline regenerates with that message as feedback):

- the parameters are a valid JSON Schema (Draft 2020-12) of type ``object``;
- ``arguments`` (this trace's instance of the call) validate against it;
- every argument is a user-facing value of the trace and none is an intermediate result;
- the name is an identifier that no primitive tool has.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from aworld_rl_core.tooluse import parse_python_calls
from aworld_rl_funreason_mt.replies import ReplyError, extract_json
from aworld_rl_funreason_mt.sampler import Trace
from aworld_rl_funreason_mt.space import ToolSpace

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}\Z")

TOOLING_SYSTEM = """\
You design composite tools. You are shown a sequence of tool calls that were executed, with their \
results. Abstract the whole sequence into ONE advanced tool that a user could call directly:
- its inputs are only the values a user would know and say (names, cities, amounts, file names); \
values that one call returned and a later call used (ids, tokens, codes) are internal steps, \
never inputs;
- its output is the final result of the sequence;
- its description says what it achieves for the user, in one or two sentences.
Reply with one JSON object and nothing else:
{"name": "<snake_case name>", "description": "<what it does>", "parameters": {"type": "object", \
"properties": {...}, "required": [...]}, "arguments": {<the input values of this sequence>}, \
"returns": "<what it returns>"}"""


@dataclass(frozen=True)
class AdvancedTool:
    """The tooling agent's composite tool and this trace's arguments for it."""

    name: str
    description: str
    parameters: dict[str, Any]
    arguments: dict[str, Any] = field(default_factory=dict)
    returns: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AdvancedTool:
        return cls(
            **{
                k: data[k]
                for k in ("name", "description", "parameters", "arguments", "returns")
                if k in data
            }
        )

    def schema(self) -> dict[str, Any]:
        """As an OpenAI function tool."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


def _arguments(call: str) -> dict[str, Any]:
    (parsed,) = parse_python_calls(call)
    return parsed.arguments


def leaf_values(value: Any) -> Iterable[Any]:
    if isinstance(value, dict):
        for item in value.values():
            yield from leaf_values(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from leaf_values(item)
    else:
        yield value


def value_key(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).strip().lower()


def trace_values(trace: Trace) -> tuple[set[str], set[str]]:
    """(user-facing, intermediate) argument values of a trace, as normalised strings."""
    user: set[str] = set()
    internal: set[str] = set()
    for call in trace.calls:
        for param, value in _arguments(call.call).items():
            keys = {value_key(v) for v in leaf_values(value)}
            source = call.sources.get(param, "state")
            (internal if source.startswith("output:") else user).update(keys)
    return user - {""}, internal - user


def render_trace(trace: Trace, space: ToolSpace) -> str:
    """The trace as the agents read it: numbered calls, where each argument came from, results."""
    lines = []
    for i, call in enumerate(trace.calls, 1):
        origin = ", ".join(
            f"{p} from the output of {s[7:]}"
            for p, s in call.sources.items()
            if s.startswith("output:")
        )
        lines.append(f"{i}. {call.call}" + (f"   [{origin}]" if origin else ""))
        lines.append(f"   -> {call.result[:600]}")
    tools = sorted(set(trace.tools))
    docs = [
        {
            k: space.tools[t].doc[k]
            for k in ("name", "description", "parameters")
            if k in space.tools[t].doc
        }
        for t in tools
    ]
    return "Tools used:\n" + json.dumps(docs, indent=1) + "\n\nExecuted calls:\n" + "\n".join(lines)


def tooling_messages(trace: Trace, space: ToolSpace, feedback: str = "") -> list[dict[str, str]]:
    user = render_trace(trace, space)
    if feedback:
        user += f"\n\nYour previous answer was rejected: {feedback}\nFix it."
    return [{"role": "system", "content": TOOLING_SYSTEM}, {"role": "user", "content": user}]


def check_schema(parameters: Any) -> list[str]:
    """Problems with ``parameters`` as a JSON Schema object (empty when it is fine)."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    if not isinstance(parameters, dict):
        return [f"parameters must be a JSON Schema object, got {type(parameters).__name__}"]
    problems = []
    try:
        Draft202012Validator.check_schema(parameters)
    except SchemaError as exc:
        problems.append(f"parameters is not a valid JSON Schema: {exc.message}")
    if parameters.get("type") != "object":
        problems.append('parameters must have "type": "object"')
    if not isinstance(parameters.get("properties", {}), dict):
        problems.append("parameters.properties must be an object")
    return problems


def parse_advanced_tool(text: str, trace: Trace, primitive_names: Sequence[str]) -> AdvancedTool:
    """The tooling agent's reply as an :class:`AdvancedTool`, or :class:`ReplyError`."""
    from jsonschema import Draft202012Validator

    data = extract_json(text)
    problems = []
    name, description = data.get("name"), data.get("description")
    parameters, arguments = data.get("parameters"), data.get("arguments", {})
    if not isinstance(name, str) or not _NAME.match(name):
        problems.append(f"name {name!r} is not an identifier")
    elif name in set(primitive_names):
        problems.append(f"name {name!r} is a primitive tool's name; choose a new one")
    if not isinstance(description, str) or not description.strip():
        problems.append("description is missing")
    elif len(description) > 1000:
        problems.append("description is longer than 1000 characters")
    problems += check_schema(parameters)
    if not isinstance(arguments, dict):
        problems.append("arguments must be an object of input values")
    elif not problems:
        errors = sorted(Draft202012Validator(parameters).iter_errors(arguments), key=str)
        problems += [f"arguments do not fit parameters: {e.message}" for e in errors[:3]]
        user, internal = trace_values(trace)
        for leaf in leaf_values(arguments):
            key = value_key(leaf)
            if key in internal:
                problems.append(f"input value {leaf!r} is an intermediate result, not a user value")
            elif key not in user:
                problems.append(f"input value {leaf!r} does not occur in the executed calls")
    if problems:
        raise ReplyError("; ".join(problems))
    return AdvancedTool(
        name, description.strip(), parameters, arguments, str(data.get("returns", ""))
    )
