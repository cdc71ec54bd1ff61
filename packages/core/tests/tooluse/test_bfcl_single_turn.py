"""judge_single_turn (native AST checker) against BFCL possible answers and bfcl-eval's checker."""

from __future__ import annotations

from dataclasses import replace

import pytest
from bfcl_helpers import all_single_turn, entries, reference

from aworld_rl_core.tooluse import Call, format_python_calls
from aworld_rl_core.tooluse.bfcl import BfclEntry, ground_truth_calls, judge_single_turn
from aworld_rl_core.tooluse.bfcl.ast_checker import standardize

# Possible answers no output can satisfy (an empty allowed list for a required parameter, a
# parameter missing from the doc, a misspelled required parameter): bfcl-eval fails them too.
UNSATISFIABLE = {
    "live_simple_106-63-0",
    "live_simple_112-68-0",
    "live_multiple_862-181-3",
    "live_multiple_964-207-0",
}


def test_every_single_turn_possible_answer_passes():
    ref = reference()
    failed = set()
    for entry in all_single_turn():
        text = format_python_calls(ground_truth_calls(entry))
        ours = judge_single_turn(entry, text).valid
        assert ours == ref.single_turn_valid(entry, text), entry.id
        if not ours:
            failed.add(entry.id)
    assert len(all_single_turn()) == 400 + 200 + 200 + 200 + 258 + 1053 + 16 + 24
    assert failed == UNSATISFIABLE


def _mutate_value(value):
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 12345
    if isinstance(value, str):
        return value + "_WRONG"
    if isinstance(value, list):
        return [*value, "extra"]
    if isinstance(value, dict):
        return {**value, "extra_key": 1}
    return "WRONG"


def _with_first_arg(calls, transform):
    first = calls[0]
    if not first.arguments:
        return None
    key = next(iter(first.arguments))
    args = transform(dict(first.arguments), key)
    return [replace(first, arguments=args), *calls[1:]]


def _corruptions(calls):
    out = {
        "wrong_value": _with_first_arg(calls, lambda a, k: {**a, k: _mutate_value(a[k])}),
        "wrong_type": _with_first_arg(
            calls, lambda a, k: {**a, k: 7 if isinstance(a[k], str) else "7"}
        ),
        "missing_param": _with_first_arg(
            calls, lambda a, k: {n: v for n, v in a.items() if n != k}
        ),
        "extra_param": [
            replace(calls[0], arguments={**calls[0].arguments, "unexpected": 1}),
            *calls[1:],
        ],
        "wrong_function": [replace(calls[0], name=calls[0].name + "_x"), *calls[1:]],
        "extra_call": [*calls, calls[0]],
        "missing_call": calls[:-1],
        "reversed": calls[::-1],
        "positional": _with_first_arg(calls, lambda a, k: a),
    }
    if out["positional"] is not None:
        first = calls[0]
        key = next(iter(first.arguments))
        rest = {n: v for n, v in first.arguments.items() if n != key}
        out["positional"] = [Call(first.name, rest, (first.arguments[key],)), *calls[1:]]
    return {k: v for k, v in out.items() if v is not None}


def test_corrupted_outputs_get_bfcl_verdicts():
    ref = reference()
    disagreements, checked, invalid = [], 0, 0
    for entry in all_single_turn():
        if entry.id in UNSATISFIABLE:
            continue
        for kind, calls in _corruptions(ground_truth_calls(entry)).items():
            text = format_python_calls(calls)
            ours = judge_single_turn(entry, text).valid
            checked += 1
            invalid += not ours
            if ours != ref.single_turn_valid(entry, text):
                disagreements.append((entry.id, kind, text[:120]))
    assert disagreements == []
    assert checked > 15_000 and invalid > checked * 0.7


@pytest.mark.parametrize(
    "text",
    ["", "I cannot help with that.", "[]", "[get_weather]", "```\n[]\n```", "[f(x=1)]", "f(x=1)"],
)
def test_irrelevance_agrees_with_bfcl(text):
    ref = reference()
    for category in ("irrelevance", "live_irrelevance"):
        entry = entries(category)[0]
        assert judge_single_turn(entry, text).valid == ref.single_turn_valid(entry, text)
    assert judge_single_turn(entries("irrelevance")[0], "[f(x=1)]").valid is False
    assert judge_single_turn(entries("irrelevance")[0], "Sorry, no tool fits.").valid is True


def _entry(params, required, answer, category="simple_python"):
    doc = {
        "name": "f",
        "description": "",
        "parameters": {"type": "dict", "properties": params, "required": required},
    }
    return BfclEntry("t_0", category, {"id": "t_0"}, [{"f": answer}], [doc])


def test_hand_checked_verdicts():
    entry = _entry(
        {
            "when": {"type": "string"},
            "n": {"type": "integer"},
            "x": {"type": "float"},
            "flag": {"type": "boolean"},
        },
        ["when", "n"],
        {"when": ["April 1, 2024"], "n": [3], "x": [2.0, ""], "flag": [True]},
    )
    assert standardize("April 1, 2024") == "april12024"
    judge = lambda text: judge_single_turn(entry, text)  # noqa: E731
    assert judge("[f(when='april 1 2024', n=3, flag=True)]").valid  # normalised string; x optional
    assert judge("f(when='April 1,2024', n=3, x=2, flag=True)").valid  # int accepted for float
    assert judge("```\n[f(when='April 1, 2024', n=3, flag=True)]\n```").valid  # BFCL's framing
    verdict = judge("[f(when='April 1, 2024', n=3.0, flag=True)]")  # float for integer
    assert (verdict.valid, verdict.error_type) == (False, "type_error:simple")
    assert judge("[f(when='April 1, 2024', n=3)]").error_type == (
        "simple_function_checker:missing_optional"
    )
    assert judge("[f(n=3, flag=True)]").error_type == "simple_function_checker:missing_required"
    assert judge("[f(when='May', n=3, flag=True)]").error_type == "value_error:string"
    assert judge("[f(when='April 1, 2024', n=3, flag=True, y=1)]").error_type == (
        "simple_function_checker:unexpected_param"
    )
    assert judge("[f(when=x, n=3, flag=True)]").error_type == "ast_decoder:decoder_failed"
    # positional arguments: dropped by default as BFCL's decoder does, or bound to the doc order
    assert not judge("[f('April 1, 2024', n=3, flag=True)]").valid
    assert judge_single_turn(entry, "[f('April 1, 2024', 3, flag=True)]", positional="bind").valid
    with pytest.raises(ValueError, match="judge_multi_turn"):
        judge_single_turn(entries("multi_turn_base")[0], "[]")


def test_parallel_matching_is_order_insensitive():
    entry = entries("parallel")[0]
    calls = ground_truth_calls(entry)
    assert len(calls) > 1
    assert judge_single_turn(entry, format_python_calls(calls[::-1])).valid
    assert judge_single_turn(entry, calls).valid  # parsed calls are accepted as well
    assert not judge_single_turn(entry, format_python_calls(calls[:-1])).valid


def _random_value(rng, near):
    """A random literal, often a near-miss of ``near`` (case/punctuation variants, int/float)."""
    pool = [
        lambda: rng.randint(-3, 3),
        lambda: rng.choice([0.5, -1.0, 2.0, 10.0]),
        lambda: rng.choice([True, False, None]),
        lambda: rng.choice(["", "x", "New York, NY", "new-york ny", "April 1, 2024"]),
        lambda: [rng.randint(0, 2) for _ in range(rng.randint(0, 2))],
        lambda: (rng.randint(0, 2), "a"),
        lambda: {"k": rng.randint(0, 1)},
    ]
    if isinstance(near, str):
        pool += [lambda: near.upper(), lambda: near.replace(" ", "_"), lambda: near + "."] * 2
    if isinstance(near, (int, float)) and not isinstance(near, bool):
        pool += [lambda: float(near), lambda: int(near), lambda: near + 1] * 2
    if isinstance(near, list) and near:
        pool += [lambda: near[::-1], lambda: [*near, near[0]], lambda: tuple(near)] * 2
    if isinstance(near, dict) and near:
        key = next(iter(near))
        pool += [lambda: {k: v for k, v in near.items() if k != key}, lambda: {**near, "z": 1}]
    return rng.choice(pool)()


def test_random_mutations_get_bfcl_verdicts():
    """A seeded fuzz: random near-miss values in random parameters, both checkers agree."""
    import random

    rng = random.Random(1234)
    ref = reference()
    candidates = [e for e in all_single_turn() if e.id not in UNSATISFIABLE]
    disagreements, valid = [], 0
    for _ in range(6000):
        entry = rng.choice(candidates)
        calls = ground_truth_calls(entry)
        index = rng.randrange(len(calls))
        call = calls[index]
        docs = {d["name"]: d for d in entry.functions}
        params = list(docs[call.name]["parameters"]["properties"]) if call.name in docs else []
        if not params:
            continue
        name = rng.choice(params)
        arguments = {**call.arguments, name: _random_value(rng, call.arguments.get(name))}
        calls[index] = replace(call, arguments=arguments)
        text = format_python_calls(calls)
        ours = judge_single_turn(entry, text).valid
        valid += ours
        if ours != ref.single_turn_valid(entry, text):
            disagreements.append((entry.id, text[:160]))
    assert disagreements == []
    assert 300 < valid < 5500  # both outcomes are well represented
