"""The token scanner of parse_python_calls gives exactly the ast reader's results, or defers."""

from __future__ import annotations

import random
import re

import pytest

from aworld_rl_core.tooluse import (
    Call,
    ParseLimits,
    ToolCallParseError,
    format_python_call,
    parse_python_calls,
)
from aworld_rl_core.tooluse.calls import DEFAULT_LIMITS, _calls_from_ast, _scan_calls


def _reference(source: str, limits: ParseLimits = DEFAULT_LIMITS) -> str:
    """The ast reader's outcome as text: repr of the calls (types, signs and order show) or
    the error message."""
    try:
        return repr(_calls_from_ast(source, limits))
    except ToolCallParseError as exc:
        return f"error: {exc}"


def _assert_agrees(source: str, limits: ParseLimits = DEFAULT_LIMITS) -> bool:
    """The scanner's result equals the ast reader's whenever it gives one; True if it did."""
    scanned = _scan_calls(source, limits)
    if scanned is not None:
        assert repr(scanned) == _reference(source, limits), source
    return scanned is not None


@pytest.mark.filterwarnings("ignore:invalid escape sequence")
@pytest.mark.parametrize(
    ("text", "scanned", "expected"),
    [
        ("[f(a=1e5, b=-0.0, c=1., d=.5, e=-1e300, g=+5)]", True, None),
        ("[f(e=-1e999)]", False, "out of range (not finite)"),
        ("[f(e=1e999)]", False, "out of range (not finite)"),
        ("[f(a=[1,], b=(1,), c={}, d=(), e={1: 2, True: 3})]", True, None),
        ("[a.b(x=1),]", True, [Call("a.b", {"x": 1})]),
        ("[f(a=1)\n,\tg(None, 'é\u00e0')]", True, None),
        ("[print(match=1, type=2, _=3)]", True, None),
        ("[]", True, []),
        ("[f(a='\\n\\t\\\\\\'', b=\"\\\"\")]", True, [Call("f", {"a": "\n\t\\'", "b": '"'})]),
        ("[f(x__y=1)]", True, [Call("f", {"x__y": 1})]),
        ("[f(a='\\x41\\u00e9\\ud800\\\\x41')]", True, [Call("f", {"a": "A\u00e9\ud800\\x41"})]),
        ("[g__h(x=1)]", False, [Call("g__h", {"x": 1})]),
        # left to the ast reader: valid but outside the plain form
        ("f (a=1)", False, [Call("f", {"a": 1})]),
        ("[f(a=00)]", False, [Call("f", {"a": 0})]),
        ("[f(a=(1))]", False, [Call("f", {"a": 1})]),
        ("[f(a=1_000)]", False, [Call("f", {"a": 1000})]),
        ("[f(a='x' 'y')]", False, [Call("f", {"a": "xy"})]),
        ("[f(a='\\d')]", False, [Call("f", {"a": "\\d"})]),
        ("[f(a='\\N{EM DASH}')]", False, None),
        ("[f(a='\\x4')]", False, "not a python call list"),
        ("[f(a='\\u12')]", False, "not a python call list"),
        ("[f(a='\x0c\u2028')]", False, [Call("f", {"a": "\x0c\u2028"})]),
        ("[f(a=1)] # note", False, [Call("f", {"a": 1})]),
        ("[f(a=12345678901234567890123456789012345678901234567890)]", False, None),
        # errors: the ast reader's own message
        ("f\n(a=1)", False, "invalid syntax"),
        ("[f(a=01)]", False, "leading zeros"),
        ("[f(a=1, a=2)]", False, "keyword argument 'a' repeated"),
        ("[f(a=2, 1)]", False, "positional argument follows keyword argument"),
        ("[f(True=1)]", False, "cannot assign to True"),
        ("[f(a={(1, [2]): 3})]", False, "dict key is not hashable"),
        ("[f(a={[1]: 3})]", False, "dict key must be"),
        ("[f(a={1})]", False, "got a Set"),
        ("[f(a=-True)]", False, "unary sign only applies to numbers"),
        ("[f(a=x)]", False, "got a Name"),
        ("[f(a=1)]]", False, "unmatched"),
        ("[f(,)]", False, "invalid syntax"),
        ("[__import__(name='os')]", False, "dunder name"),
        ("[f(__class__=1)]", False, "dunder argument name"),
        ("[f(**{'a': 1})]", False, "**kwargs"),
        ("[f(a=1j)]", False, "complex"),
        ("[f(a=b'x')]", False, "bytes"),
        ("[f(a='\ud800')]", False, "not a python call list"),
        ("[f(a='\x00')]", False, "not a python call list"),
    ],
)
def test_scanner_handles_the_plain_form_and_defers_the_rest(text, scanned, expected):
    assert _assert_agrees(text.strip()) is scanned
    if isinstance(expected, str):
        with pytest.raises(ToolCallParseError, match=re.escape(expected)):
            parse_python_calls(text)
    else:
        result = parse_python_calls(text)
        assert repr(result) == _reference(text.strip())
        if expected is not None:
            assert result == expected


def test_limits_reached_by_the_scanner_give_the_ast_readers_errors():
    tight = ParseLimits(max_depth=2, max_nodes=4, max_calls=2)
    cases = {
        "[f(a=[[1]])]": "nest deeper than the limit of 2",
        "[f(a=[1, 2, 3, 4])]": "more than 4 literal values",
        "[f(), g(), h()]": "3 calls, over the limit of 2",
    }
    for text, message in cases.items():
        assert _scan_calls(text, tight) is None
        with pytest.raises(ToolCallParseError, match=message):
            parse_python_calls(text, limits=tight)
    assert _scan_calls("[f(a=[1], b=2)]", tight) == [Call("f", {"a": [1], "b": 2})]
    # limits looser than Python's own: deep nesting still reaches the ast reader, not a
    # RecursionError in the scanner
    loose = ParseLimits(max_depth=10**6)
    deep = "[f(a=" + "[" * 150 + "]" * 150 + ")]"
    assert _scan_calls(deep, loose) is None
    assert repr(parse_python_calls(deep, limits=loose)) == _reference(deep, loose)
    with pytest.raises(ToolCallParseError, match="too many nested parentheses"):
        parse_python_calls("[f(a=" + "[" * 5000 + "]" * 5000 + ")]", limits=loose)


def _random_literal(rng: random.Random, depth: int = 0):
    kind = rng.randrange(9 if depth < 3 else 5)
    if kind == 0:
        alphabet = "ab Z_-.,:()[]{}=#'\"\t\\\n\x07\x85é\u2028\ud800\U0001f600"
        return "".join(rng.choice(alphabet) for _ in range(rng.randrange(6)))
    if kind == 1:
        return rng.choice([0, 1, -1, 7, 10**12, -(10**30)])
    if kind == 2:
        return rng.choice([0.0, -0.0, 1.5, -2.25, 1e-7, 3e100, 1.7e308, -1.7e308])
    if kind == 3:
        return rng.choice([True, False])
    if kind == 4:
        return None
    size = rng.randrange(4)
    if kind in (5, 6):
        return [_random_literal(rng, depth + 1) for _ in range(size)]
    if kind == 7:
        return tuple(_random_literal(rng, depth + 1) for _ in range(size))
    keys = [rng.choice(["k", "key two", 3, 2.5, True, None, (1, "t")]) for _ in range(size)]
    return {k: _random_literal(rng, depth + 1) for k in keys}


def test_random_literal_calls_round_trip_through_both_readers():
    rng = random.Random(20261130)
    scanned = 0
    for _ in range(600):
        call = Call(
            rng.choice(["f", "math.sqrt", "a.b.c", "get_weather"]),
            {f"p{i}": _random_literal(rng) for i in range(rng.randrange(4))},
            tuple(_random_literal(rng) for _ in range(rng.randrange(2))),
        )
        text = "[" + format_python_call(call) + "]"
        scanned += _assert_agrees(text)
        assert repr(parse_python_calls(text)) == repr([call])
    assert scanned > 150  # strings with escapes and the like go to the ast reader


FRAGMENTS = [
    *"[](){}:,=.-+*'\"\\#_ \n\t\r\x0c",
    *("f", "g.h", "a", "b", "x__y", "__c", "True", "None", "if", "lambda", "for", "e", "j"),
    *("1", "0", "00", "5", "1.", ".5", "1e5", "1_0", "'s'", '"t"', "'é'", "'\u2028'", "'\\n'"),
    *("'\\x4", "'\\x41'", "'\\u00e9'", "'\\ud800'", "\\u12", "\\U0001f600", "\\N{EM DASH}"),
    *("\x00", "\ud800", "u'x'", "b'x'", "**", "...", "é", "\u3000"),
]


def test_random_token_soup_is_never_read_differently():
    rng = random.Random(7)
    tight = ParseLimits(max_depth=3, max_nodes=6, max_calls=2)
    scanned = 0
    for index in range(4000):
        body = "".join(rng.choice(FRAGMENTS) for _ in range(rng.randrange(1, 14)))
        text = rng.choice(["[f(a={})]", "[f({}), g(b=1)]", "[{}]", "{}", "f(x=[{}])"])
        text = text.format(body).strip()
        if text:
            scanned += _assert_agrees(text, tight if index % 3 == 0 else DEFAULT_LIMITS)
    assert scanned > 40  # the soup does reach the scanner's accepting paths


def test_edited_valid_texts_are_never_read_differently():
    """Near misses: one to three random edits (insert, delete, replace) of a valid call text."""
    rng = random.Random(11)
    scanned = 0
    for _ in range(1500):
        call = Call(rng.choice(["f", "a.b"]), {f"p{i}": _random_literal(rng) for i in range(3)})
        chars = list("[" + format_python_call(call) + "]")
        for _ in range(rng.randrange(1, 4)):
            at = rng.randrange(len(chars))
            edit = rng.randrange(3)
            if edit == 0:
                chars.insert(at, rng.choice(FRAGMENTS))
            elif edit == 1 and len(chars) > 1:
                del chars[at]
            else:
                chars[at] = rng.choice(FRAGMENTS)
        text = "".join(chars).strip()
        if text:
            scanned += _assert_agrees(text)
    assert scanned > 100


def test_bfcl_ground_truth_call_strings_take_the_scanner():
    pytest.importorskip("bfcl_eval", reason="bfcl-eval not installed")
    from aworld_rl_core.tooluse import format_python_calls
    from aworld_rl_core.tooluse.bfcl import (
        MULTI_TURN_CATEGORIES,
        PYTHON_AST_CATEGORIES,
        ground_truth_calls,
        load_category,
    )

    texts = [
        format_python_calls(ground_truth_calls(e))
        for c in PYTHON_AST_CATEGORIES
        for e in load_category(c)
    ]
    texts += [
        call
        for c in MULTI_TURN_CATEGORIES
        for e in load_category(c)
        for turn in e.ground_truth
        for call in turn
    ]
    unscanned = [text for text in texts if not _assert_agrees(text)]
    assert len(texts) == 2351 + 4625
    # the only one: a non-ASCII parameter name (Python normalises identifiers; ast decides)
    assert len(unscanned) == 1 and "año_vehiculo=2024" in unscanned[0]
