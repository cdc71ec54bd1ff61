"""parse_python_calls / parse_json_calls / format_python_call / bind_positional."""

import pytest

from aworld_rl_core.tooluse import (
    Call,
    ParseLimits,
    ToolCallParseError,
    bind_positional,
    format_python_call,
    format_python_calls,
    parse_json_calls,
    parse_python_calls,
    signatures_from_tools,
)


def test_bfcl_call_list_with_literals_of_every_kind():
    text = (
        "[mv(source='final_report.pdf', destination=\"temp\"), "
        "f(n=-3, x=-2.5, y=+4, ok=True, no=None, l=[1, [2, 'a']], d={'k': {'n': (1, 2)}}, t=(3,))]"
    )
    assert parse_python_calls(text) == [
        Call("mv", {"source": "final_report.pdf", "destination": "temp"}),
        Call(
            "f",
            {
                "n": -3,
                "x": -2.5,
                "y": 4,
                "ok": True,
                "no": None,
                "l": [1, [2, "a"]],
                "d": {"k": {"n": (1, 2)}},
                "t": (3,),
            },
        ),
    ]


def test_bare_call_empty_list_tuple_and_dotted_names():
    assert parse_python_calls("  pwd()  ") == [Call("pwd")]
    assert parse_python_calls("[]") == []
    assert parse_python_calls("(ls(a=True), pwd())") == [Call("ls", {"a": True}), Call("pwd")]
    assert parse_python_calls("[math.factorial(number=5)]") == [
        Call("math.factorial", {"number": 5})
    ]
    assert parse_python_calls("[a.b.c(x=1)]")[0].name == "a.b.c"


def test_positional_arguments_are_kept_then_bound_by_signature():
    text = "[sort('final_report.pdf'), mv('a.txt', destination='b')]"
    raw = parse_python_calls(text)
    assert raw[0] == Call("sort", {}, ("final_report.pdf",))
    assert raw[1] == Call("mv", {"destination": "b"}, ("a.txt",))
    sigs = {"sort": ["file_name"], "mv": ["source", "destination"]}
    assert parse_python_calls(text, signatures=sigs) == [
        Call("sort", {"file_name": "final_report.pdf"}),
        Call("mv", {"source": "a.txt", "destination": "b"}),
    ]
    # a name without a known signature keeps its positional arguments
    assert parse_python_calls("[g(1)]", signatures=sigs) == [Call("g", {}, (1,))]


def test_bind_positional_errors():
    with pytest.raises(ToolCallParseError, match="at most 1"):
        bind_positional(Call("sort", {}, ("a", "b")), ["file_name"])
    with pytest.raises(ToolCallParseError, match="multiple values for argument 'source'"):
        bind_positional(Call("mv", {"source": "x"}, ("a",)), ["source", "destination"])
    assert bind_positional(Call("f", {"b": 2}, (1,)), ["a", "b"]) == Call("f", {"a": 1, "b": 2})


def test_signatures_from_bfcl_docs_and_openai_tools():
    bfcl_doc = {
        "name": "mv",
        "parameters": {"type": "dict", "properties": {"source": {}, "destination": {}}},
    }
    openai = {
        "type": "function",
        "function": {"name": "sort", "parameters": {"properties": {"file_name": {}}}},
    }
    assert signatures_from_tools([bfcl_doc, openai, {"name": "pwd"}]) == {
        "mv": ["source", "destination"],
        "sort": ["file_name"],
        "pwd": [],
    }


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty"),
        ("[f(a=1)", "not a python call list"),
        ("f", "expected a list of calls"),
        ("[1]", "not a function call"),
        ("[f(a=g())]", "must be literals"),
        ("[f(a=x)]", "must be literals"),
        ("[f(a=1+1)]", "must be literals"),
        ("[f(a=-x)]", "unary sign only applies to numbers"),
        ("[f(a=-True)]", "unary sign only applies to numbers"),
        ("[f(a={1, 2})]", "must be literals"),
        ("[f(a=b'x')]", "bytes is not allowed"),
        ("[f(a=1j)]", "complex is not allowed"),
        ("[f(a=...)]", "ellipsis is not allowed"),
        ("[f(*a)]", "starred"),
        ("[f(**a)]", r"\*\*kwargs"),
        ("[f(a={**b})]", "dict unpacking"),
        ("[f(a={[1]: 2})]", "dict key"),
        ("[f(__a=1)]", "dunder argument"),
        ("[__import__(name='os')]", "dunder name"),
        ("[x.__class__()]", "dunder name"),
        ("[f()()]", "plain or dotted name"),
        ("[f(a=1, a=2)]", "keyword argument 'a' repeated"),
    ],
)
def test_rejections_name_the_reason(text, reason):
    with pytest.raises(ToolCallParseError, match=reason):
        parse_python_calls(text)


def test_parse_error_is_a_value_error():
    assert issubclass(ToolCallParseError, ValueError)
    with pytest.raises(ValueError):
        parse_python_calls(None)  # type: ignore[arg-type]


def test_size_limits():
    small = ParseLimits(max_chars=50, max_depth=3, max_nodes=5, max_calls=2)
    with pytest.raises(ToolCallParseError, match="over the limit of 50"):
        parse_python_calls("[f(a='" + "x" * 60 + "')]", limits=small)
    with pytest.raises(ToolCallParseError, match="nest deeper than the limit of 3"):
        parse_python_calls("[f(a=[[[1]]])]", limits=small)
    assert parse_python_calls("[f(a=[[1]])]", limits=small) == [Call("f", {"a": [[1]]})]
    with pytest.raises(ToolCallParseError, match="more than 5 literal values"):
        parse_python_calls("[f(a=[1, 2, 3, 4, 5])]", limits=small)
    with pytest.raises(ToolCallParseError, match="3 calls, over the limit of 2"):
        parse_python_calls("[f(), g(), h()]", limits=small)
    with pytest.raises(ToolCallParseError):
        parse_python_calls("[f(a=" + "9" * 5000 + ")]")


@pytest.mark.parametrize(
    "call",
    [
        Call("mv", {"source": "final_report.pdf", "destination": "temp"}),
        Call("sort", {}, ("a b.pdf",)),
        Call("f", {"s": 'it\'s "quoted"\n\\', "n": -7, "x": 1e-9, "b": False, "z": None}),
        Call("f", {"l": [], "d": {}, "t": (), "t1": ("x",), "nest": {"a": [{"b": (1, [2])}]}}),
        Call("f", {"big": 1e308, "neg": -1e308, "k": {1: "a", None: 2, False: 3}}),
        Call("math.factorial", {"number": 5}),
    ],
)
def test_format_round_trips(call):
    text = format_python_call(call)
    assert parse_python_calls(text) == [call]
    assert parse_python_calls(format_python_calls([call, call])) == [call, call]


def test_format_matches_bfcl_call_strings():
    # BFCL ground truth strings use repr() of the literal values
    assert format_python_call(Call("mv", {"source": "a", "destination": "b"})) == (
        "mv(source='a', destination='b')"
    )
    assert format_python_call(Call("sort", {}, ("final_report.pdf",))) == "sort('final_report.pdf')"
    assert format_python_call(Call("f", {"a": [1, 2.5], "d": {"k": True}})) == (
        "f(a=[1, 2.5], d={'k': True})"
    )
    with pytest.raises(ValueError, match="nan has no literal form"):
        format_python_call(Call("f", {"a": float("nan")}))
    with pytest.raises(ValueError, match="inf has no literal form"):
        format_python_call(Call("f", {"a": float("-inf")}))
    with pytest.raises(ValueError, match="no literal form"):
        format_python_call(Call("f", {"a": {1, 2}}))


def test_parse_json_calls_forms():
    expected = [Call("cd", {"folder": "doc"}), Call("ls", {})]
    text = '[{"name": "cd", "arguments": {"folder": "doc"}}, {"name": "ls", "arguments": {}}]'
    assert parse_json_calls(text) == expected
    # already-loaded JSON, and arguments as a JSON string (OpenAI wire form)
    assert parse_json_calls([{"name": "cd", "arguments": '{"folder": "doc"}'}]) == expected[:1]
    # a single object is one call
    assert parse_json_calls('{"name": "ls", "arguments": {}}') == [Call("ls", {})]
    assert parse_json_calls("[]") == []
    assert Call("cd", {"folder": "doc"}).to_dict() == {"name": "cd", "arguments": {"folder": "doc"}}


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        ("[{", "not valid JSON"),
        ('"ls"', "expected a JSON list"),
        ("[1]", "not an object"),
        ('[{"name": "ls"}]', "no 'arguments'"),
        ('[{"name": "", "arguments": {}}]', "non-empty string 'name'"),
        ('[{"name": "ls", "arguments": {}, "x": 1}]', "unknown keys"),
        ('[{"name": "ls", "arguments": []}]', "must be an object"),
        ('[{"name": "ls", "arguments": "[1]"}]', "must be an object"),
        ('[{"name": "ls", "arguments": {"a": NaN}}]', "constant NaN"),
        ('[{"name": "__import__", "arguments": {}}]', "dunder name"),
        ('[{"name": "a b", "arguments": {}}]', "invalid function name"),
        ('[{"name": "ls", "arguments": {"__x": 1}}]', "invalid argument name"),
        ('[{"name": "ls", "arguments": {"a": ' + "9" * 5000 + "}}]", "not acceptable JSON"),
        ("[" * 60_000 + "]" * 60_000, "over the limit"),
        ("[" * 20_000 + "]" * 20_000, "nests too deeply"),
    ],
)
def test_parse_json_calls_rejections(payload, reason):
    with pytest.raises(ToolCallParseError, match=reason):
        parse_json_calls(payload)


def test_json_depth_and_node_limits():
    small = ParseLimits(max_depth=2, max_nodes=4)
    with pytest.raises(ToolCallParseError, match="nest deeper"):
        parse_json_calls([{"name": "f", "arguments": {"a": [[1]]}}], limits=small)
    with pytest.raises(ToolCallParseError, match="more than 4"):
        parse_json_calls([{"name": "f", "arguments": {"a": [1, 2, 3, 4]}}], limits=small)


def test_to_dict_refuses_unbound_positionals():
    with pytest.raises(ValueError, match="bind_positional"):
        Call("sort", {}, ("x",)).to_dict()


# ---------------------------------------------------------------------------------------------
# Every BFCL multi-turn ground-truth call string, against bfcl-eval's own decoder
# ---------------------------------------------------------------------------------------------


def _ground_truth_turns(category):
    import json
    import os

    import bfcl_eval

    folder = os.path.join(os.path.dirname(bfcl_eval.__file__), "data", "possible_answer")
    name = next(f for f in os.listdir(folder) if f.endswith(f"_{category}.json"))
    with open(os.path.join(folder, name), encoding="utf-8") as fh:
        return [json.loads(line)["ground_truth"] for line in fh if line.strip()]


@pytest.mark.parametrize(
    "category",
    ["multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context"],
)
def test_ground_truth_calls_agree_with_bfcl_decoder_and_renderer(category, tmp_path, monkeypatch):
    pytest.importorskip("bfcl_eval")
    monkeypatch.setenv("BFCL_PROJECT_ROOT", str(tmp_path))
    from bfcl_eval.constants.enums import ReturnFormat
    from bfcl_eval.model_handler.utils import ast_parse, decoded_output_to_execution_list

    entries_with_positional = positional_calls = total = 0
    for turns in _ground_truth_turns(category):
        has_positional = False
        for call_text in (c for turn in turns for c in turn):
            [call] = parse_python_calls(call_text)
            [theirs] = ast_parse(call_text, ReturnFormat.PYTHON)
            # BFCL's decoder keeps keyword arguments only; ours keeps the positionals as well
            assert theirs == {call.name: call.arguments}, call_text
            assert parse_python_calls(format_python_call(call)) == [call]
            if not call.positional:  # the same call string BFCL renders from a decoded call
                bfcl_text = decoded_output_to_execution_list([{call.name: call.arguments}])[0]
                assert format_python_call(call) == bfcl_text
            positional_calls += bool(call.positional)
            has_positional |= bool(call.positional)
            total += 1
        entries_with_positional += has_positional
    if category == "multi_turn_base":
        assert (total, positional_calls, entries_with_positional) == (1142, 40, 24)
    assert entries_with_positional == 24
