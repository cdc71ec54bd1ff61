"""Phase III's critic: a targeted hint after a failed attempt that must not give the answer.

``Error^(k) = A_C(FC^(k), G)``: the critiquing agent sees the request, the calls the reasoning
agent made with their results, the ground-truth calls and what differed, and writes a hint that
is appended to the next attempt's prompt (HardGen: the verifier's hint must not reveal the
answer). :func:`parse_hint` rejects a hint that contains a ground-truth call with its arguments:
the call written out (as code or JSON), or the tool named together with all of its argument
values.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from aworld_rl_core.tooluse import Call, ToolCallParseError, parse_python_calls
from aworld_rl_funreason_mt.matching import Match
from aworld_rl_funreason_mt.replies import ReplyError, extract_json, json_values, strip_reasoning
from aworld_rl_funreason_mt.tooling import leaf_values, value_key

CRITIC_SYSTEM = """\
You review an assistant's attempt at a user's request. You are shown the request, the tool calls \
the assistant made with their results, and the calls that solve it. Write ONE short hint that \
points the assistant at its mistake (a missing step, a wrong value, a wrong order) so it can \
find the solution itself. Never write the solving calls or their argument values.
Reply with one JSON object: {"hint": "<the hint>"}"""

_CALLISH = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\s*\([^()]*\)")


def critic_messages(
    query: str,
    made: Sequence[tuple[str, str]],
    expected: Sequence[str],
    verdict: Match,
) -> list[dict[str, str]]:
    attempt = "\n".join(f"- {call} -> {result[:300]}" for call, result in made) or "- (no call)"
    user = (
        f"Request: {query}\n\nThe assistant's calls:\n{attempt}\n\nCalls that solve it:\n"
        + "\n".join(f"- {c}" for c in expected)
        + f"\n\nWhat differed: {verdict.reason}"
    )
    return [{"role": "system", "content": CRITIC_SYSTEM}, {"role": "user", "content": user}]


def revealed_calls(hint: str, expected: Sequence[str]) -> list[str]:
    """The ground-truth calls ``hint`` gives away (see the module docstring)."""
    truth: list[Call] = [c for s in expected for c in parse_python_calls(s)]
    written = []
    for match in _CALLISH.finditer(hint):
        try:
            written += parse_python_calls(match.group(0))
        except ToolCallParseError:
            continue
    for data in _json_objects(hint):
        name, arguments = data.get("name"), data.get("arguments")
        if isinstance(name, str) and isinstance(arguments, dict):
            written.append(Call(name, arguments))
    text = hint.lower()
    out = []
    for call in truth:
        as_code = any(w.name == call.name and w.arguments == call.arguments for w in written)
        values = [value_key(v) for v in leaf_values(call.arguments)]
        spelled = bool(values) and call.name.lower() in text and all(v in text for v in values)
        if as_code or spelled:
            out.append(call.to_python())
    return out


def _json_objects(text: str) -> list[dict]:
    return [value for value, _ in json_values(text) if isinstance(value, dict)]


def parse_hint(text: str, expected: Sequence[str]) -> str:
    """The critic's hint, or :class:`ReplyError` (no hint, too long, or it gives the answer)."""
    try:
        hint = extract_json(text).get("hint")
    except ReplyError:
        body = strip_reasoning(text) if isinstance(text, str) else ""
        hint = body if body and not body.startswith("{") else None
    if not isinstance(hint, str) or not hint.strip():
        raise ReplyError('no hint found: reply with {"hint": "..."}')
    hint = hint.strip()
    if len(hint) > 1500:
        raise ReplyError(f"the hint has {len(hint)} characters, over 1500")
    given = revealed_calls(hint, expected)
    if given:
        raise ReplyError(
            f"the hint gives away the solution ({', '.join(given)}); point at the mistake only"
        )
    return hint
