"""Phase III's check: do the reasoning agent's calls match the executed trace?

The paper leaves the matcher open (MT-v2 4.3: Pass/Fail against ``G = (C_1..C_M)``). Rules:

- ``call_set`` (default): the calls that ran cleanly equal the trace's calls as a multiset,
  order ignored, with BFCL's AST checker deciding each pair (core's ``ast_check`` in its
  ``parallel_multiple`` mode: names, required and unexpected parameters, types, values after
  BFCL's string normalisation);
- ``state``: BFCL's multi-turn checks instead: the API states equal the trace's after the round
  (public attributes) and every trace result appears among the agent's results;
- ``both``: both must hold.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from aworld_rl_core.tooluse import Call, parse_python_calls, signatures_from_tools
from aworld_rl_funreason_mt.space import Session

MatchRule = Literal["call_set", "state", "both"]
MATCH_RULES = ("call_set", "state", "both")


@dataclass(frozen=True)
class Match:
    """The verdict: ``ok``, the reason when not, and the calls that differ."""

    ok: bool
    reason: str = ""
    missing: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()


def _calls(strings: Sequence[str], signatures: Mapping[str, Sequence[str]]) -> list[Call]:
    return [c for s in strings for c in parse_python_calls(s, signatures=signatures)]


def possible_answers(calls: Sequence[Call], docs: Mapping[str, Mapping[str, Any]]) -> list[dict]:
    """BFCL possible answers for exactly these calls (optional parameters may be left out or
    given their default)."""
    answers = []
    for call in calls:
        allowed: dict[str, list[Any]] = {k: [_allowed(v)] for k, v in call.arguments.items()}
        properties = ((docs.get(call.name) or {}).get("parameters") or {}).get("properties", {})
        for name, spec in properties.items():
            if name not in allowed:
                default = spec.get("default")
                allowed[name] = ["", default] if default is not None else [""]
        answers.append({call.name: allowed})
    return answers


def _allowed(value: Any) -> Any:
    """A value as a BFCL possible answer: a dict's (or a list of dicts') values become lists of
    allowed values, the way BFCL's dict checker reads them."""
    if isinstance(value, dict):
        return {k: [v] for k, v in value.items()}
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return [{k: [x] for k, x in v.items()} for v in value]
    return value


def call_set_match(
    made: Sequence[str], expected: Sequence[str], function_docs: Sequence[Mapping[str, Any]]
) -> Match:
    from aworld_rl_core.tooluse.bfcl.ast_checker import ast_check

    docs = {d["name"]: d for d in function_docs}
    signatures = signatures_from_tools([dict(d) for d in function_docs])
    ours, truth = _calls(made, signatures), _calls(expected, signatures)
    missing, extra = _difference(ours, truth)
    if len(ours) != len(truth):
        reason = f"{len(ours)} calls ran, the trace has {len(truth)}"
        return Match(False, reason, missing, extra)
    decoded = [{c.name: c.arguments} for c in ours]
    valid, error_type, message = ast_check(
        [dict(d) for d in function_docs],
        decoded,
        possible_answers(truth, docs),
        "parallel_multiple",
    )
    if valid:
        return Match(True)
    return Match(False, f"{error_type}: {message}"[:300], missing, extra)


def _difference(
    ours: Sequence[Call], truth: Sequence[Call]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    made = Counter(c.to_python() for c in ours)
    want = Counter(c.to_python() for c in truth)
    return tuple((want - made).elements()), tuple((made - want).elements())


def state_match(
    agent: Session,
    trace_session: Session,
    expected_results: Sequence[str],
    agent_results: Sequence[str],
) -> Match:
    """BFCL's state checker and (unordered) response checker for one round."""
    from aworld_rl_core.tooluse.bfcl.apis import state_differences

    for name, instance in trace_session.instances.items():
        diff = state_differences(agent.instances[name], instance)
        if diff:
            return Match(False, f"the state of {name} differs ({', '.join(sorted(diff))})")
    missing = Counter(expected_results) - Counter(agent_results)
    if missing:
        return Match(False, f"trace results missing: {list(missing.elements())[:2]}")
    return Match(True)


def match_round(
    rule: MatchRule,
    *,
    made: Sequence[str],
    expected: Sequence[str],
    function_docs: Sequence[Mapping[str, Any]],
    agent: Session | None = None,
    trace_session: Session | None = None,
    expected_results: Sequence[str] = (),
    agent_results: Sequence[str] = (),
) -> Match:
    """Apply ``rule`` (see the module docstring)."""
    if rule not in MATCH_RULES:
        raise ValueError(f"match rule must be one of {', '.join(MATCH_RULES)}, got {rule!r}")
    if rule in ("call_set", "both"):
        verdict = call_set_match(made, expected, function_docs)
        if not verdict.ok or rule == "call_set":
            return verdict
    if agent is None or trace_session is None:
        raise ValueError("the state rule needs the agent's and the trace's sessions")
    return state_match(agent, trace_session, expected_results, agent_results)
