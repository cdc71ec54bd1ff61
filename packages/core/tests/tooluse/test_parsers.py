"""Response parsers: EnvTuning, FunReason, FunReason-MT, Qwen hermes, and the protocol registry."""

import pytest

from aworld_rl_core.tooluse import (
    Call,
    ParsedResponse,
    get_parser,
    parse_hermes,
    parse_response,
    parse_think_json,
    parse_think_python,
    parse_think_tool_python,
    protocol_names,
)

CD = Call("cd", {"folder": "document"})
LS = Call("ls", {"a": True})

# ---------------------------------------------------------------------------------------------
# EnvTuning
# ---------------------------------------------------------------------------------------------

ET_CALL = (
    "<think>go to document</think>\n<tool_call>["
    '{"name": "cd", "arguments": {"folder": "document"}},'
    ' {"name": "ls", "arguments": {"a": true}}]</tool_call>'
)


def test_envtuning_tool_call_and_answer():
    r = parse_think_json(ET_CALL)
    assert r == ParsedResponse("go to document", [CD, LS], None, [], ET_CALL, "think_json")
    assert r.ok and r.has_calls
    assert r.call_strings() == ["cd(folder='document')", "ls(a=True)"]
    text = "  <think>\nall done\n</think>\n\n<answer> The file is moved. </answer>\n"
    r = parse_think_json(text)
    assert (r.reasoning, r.calls, r.answer, r.errors) == ("all done", [], "The file is moved.", [])


@pytest.mark.parametrize(
    ("text", "errors"),
    [
        ("<answer>x</answer>", ["expected exactly one <think> block, found 0"]),
        (
            "<think>a</think><think>b</think><answer>x</answer>",
            ["expected exactly one <think> block, found 2"],
        ),
        ("<think>a</think>", ["needs a <tool_call> or an <answer> block"]),
        (
            "<think>a</think><answer>x</answer><answer>y</answer>",
            ["more than one <answer> block (2)"],
        ),
        (
            '<think>a</think><tool_call>[{"name": "ls", "arguments": {}}]</tool_call>'
            '<tool_call>[{"name": "ls", "arguments": {}}]</tool_call>',
            ["more than one <tool_call> block (2)"],
        ),
        (
            '<think>a</think><tool_call>[{"name": "ls", "arguments": {}}]</tool_call>'
            "<answer>x</answer>",
            ["has both <tool_call> and <answer>; use exactly one"],
        ),
        ("Sure! <think>a</think><answer>x</answer>", ["text outside the tags"]),
        ("<think>a</think><answer>x</answer> bye", ["text outside the tags"]),
        ("<answer>x</answer><think>a</think>", ["<think> must come first"]),
        (
            "<think>a</think><tool_call>[{'name': 'ls'}]</tool_call>",
            [
                "<tool_call>: tool call is not valid JSON: "
                "Expecting property name enclosed in double quotes at char 2"
            ],
        ),
        (
            '<think>a</think><tool_call>{"name": "ls", "arguments": {}}</tool_call>',
            ["<tool_call>: <tool_call> must hold a JSON list of calls"],
        ),
        ("<think>a</think><tool_call>[]</tool_call>", ["<tool_call> holds an empty list"]),
        ("<think>a</think><answer>x", ["<answer> is never closed"]),
        (
            "<think>a <answer>x</answer></think><answer>y</answer>",
            ["<answer> inside <think>", "</answer> inside <think>"],
        ),
        ("</think><think>a</think><answer>x</answer>", ["</think> without an opening <think>"]),
    ],
)
def test_envtuning_format_errors(text, errors):
    r = parse_think_json(text)
    assert r.errors == errors
    assert not r.ok


def test_envtuning_keeps_what_it_could_read_when_invalid():
    r = parse_think_json("hello " + ET_CALL)
    assert r.errors == ["text outside the tags"]
    assert r.calls == [CD, LS]  # readable, but the caller must not act on it (r.ok is False)


def test_envtuning_configurable_tags_read_released_data():
    text = "<thinking>plan</thinking><answer>ok</answer>"
    assert not parse_think_json(text).ok
    r = parse_think_json(text, think_tag="thinking")
    assert (r.ok, r.reasoning, r.answer) == (True, "plan", "ok")


# ---------------------------------------------------------------------------------------------
# FunReason
# ---------------------------------------------------------------------------------------------


def test_funreason_call_list_after_think():
    text = "<think>\nneed the word\n</think>\n\n[get_random_word(verbeconjugue=True, minlong='7')]"
    r = parse_think_python(text)
    assert r.ok
    assert r.reasoning == "need the word"
    assert r.calls == [Call("get_random_word", {"verbeconjugue": True, "minlong": "7"})]
    assert r.answer is None


def test_funreason_reply_positional_and_errors():
    r = parse_think_python("<think>irrelevant</think> I cannot do that with these tools.")
    assert (r.ok, r.calls, r.answer) == (True, [], "I cannot do that with these tools.")
    r = parse_think_python("<think>x</think>[sort('a.pdf')]", signatures={"sort": ["file_name"]})
    assert r.calls == [Call("sort", {"file_name": "a.pdf"})]
    r = parse_think_python("[f(a=1)]")
    assert (r.errors, r.calls) == (["missing <think>...</think>"], [Call("f", {"a": 1})])
    assert parse_think_python("[f(a=1)]", require_think=False).ok
    r = parse_think_python("<think>x</think>[f(a=g())]")
    assert r.errors == ["call list: argument values must be literals; got a Call: g()"]
    assert parse_think_python("<think>x</think>").errors == [
        "nothing after </think>: expected a call list or a reply"
    ]
    assert parse_think_python("oops <think>x</think>[f()]").errors == ["text before <think>"]


def test_funreason_think_opened_in_prompt():
    text = "the plan</think>\n[f(a=1)]"
    assert not parse_think_python(text).ok
    r = parse_think_python(text, think_in_prompt=True)
    assert (r.ok, r.reasoning, r.calls) == (True, "the plan", [Call("f", {"a": 1})])


# ---------------------------------------------------------------------------------------------
# FunReason-MT
# ---------------------------------------------------------------------------------------------


def test_funreason_mt_python_tool_call_and_answer():
    text = '<think> look around </think> <tool_call> [pwd(), find(path=".")] </tool_call>'
    r = parse_think_tool_python(text)
    assert r.ok and r.calls == [Call("pwd"), Call("find", {"path": "."})]
    r = parse_think_tool_python("<think>done</think>\n<answer>All files sorted.</answer>")
    assert (r.ok, r.calls, r.answer) == (True, [], "All files sorted.")
    both = "<think>x</think><tool_call>[pwd()]</tool_call><answer>a</answer>"
    assert parse_think_tool_python(both).ok
    assert parse_think_tool_python(both, allow_both=False).errors == [
        "has both <tool_call> and <answer>; use exactly one"
    ]
    r = parse_think_tool_python('<think>x</think><tool_call>[{"name": "pwd"}]</tool_call>')
    assert r.errors[0].startswith("<tool_call>: list element is a Dict")
    r = parse_think_tool_python("<think>x</think><tool_call>pwd()</tool_call>")
    assert r.errors == ["<tool_call>: <tool_call> must hold a python list of calls"]


# ---------------------------------------------------------------------------------------------
# Qwen hermes
# ---------------------------------------------------------------------------------------------


def test_hermes_blocks_reasoning_and_reply():
    text = (
        "<think>\n\n</think>\n\n<tool_call>\n"
        '{"name": "cd", "arguments": {"folder": "document"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "ls", "arguments": "{\\"a\\": true}"}\n</tool_call>'
    )
    r = parse_hermes(text)
    assert (r.ok, r.reasoning, r.calls, r.answer) == (True, "", [CD, LS], None)
    r = parse_hermes("Hello there!")
    assert (r.ok, r.reasoning, r.calls, r.answer) == (True, None, [], "Hello there!")
    r = parse_hermes(
        "thinking...</think>\n\nLet me check.\n<tool_call>\n" + CD_JSON + "\n</tool_call>"
    )
    assert (r.ok, r.reasoning, r.calls, r.answer) == (True, "thinking...", [CD], "Let me check.")


CD_JSON = '{"name": "cd", "arguments": {"folder": "document"}}'


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("<tool_call>[" + CD_JSON + "]</tool_call>", "<tool_call> #0: must hold one JSON object"),
        ('<tool_call>{"name": "cd"</tool_call>', "<tool_call> #0: tool call is not valid JSON"),
        ("<tool_call>" + CD_JSON, "<tool_call> is never closed"),
        ("hi <think>x</think>", "<think> must come first"),
        ("<think>a</think><think>b</think>", "more than one <think> block"),
    ],
)
def test_hermes_errors(text, error):
    r = parse_hermes(text)
    assert any(e.startswith(error) for e in r.errors), r.errors


# ---------------------------------------------------------------------------------------------
# Registry and robustness
# ---------------------------------------------------------------------------------------------


def test_registry_names_and_lookup():
    assert protocol_names() == ["hermes", "think_json", "think_python", "think_tool_python"]
    parse = get_parser("think_json", think_tag="thinking")
    assert parse("<thinking>a</thinking><answer>b</answer>").ok
    assert parse_response(ET_CALL, "think_json").calls == [CD, LS]


def test_registry_rejects_bad_names_and_options():
    with pytest.raises(ValueError, match="did you mean 'think_tool_python'"):
        get_parser("think-tool-python")
    with pytest.raises(ValueError, match="has no option 'signatures'"):
        get_parser("think_json", signatures={})
    with pytest.raises(ValueError, match="not a valid tag name"):
        get_parser("hermes", call_tag="tool call")
    with pytest.raises(ValueError, match="tag names must differ"):
        parse_think_json("x", think_tag="answer")


@pytest.mark.parametrize("protocol", ["think_json", "think_python", "think_tool_python", "hermes"])
@pytest.mark.parametrize("text", [None, 42, b"<think>", "", "<", "</", "<<think>>", "\x00" * 10])
def test_parsers_never_raise_on_model_text(protocol, text):
    r = parse_response(text, protocol)
    assert isinstance(r, ParsedResponse)
    assert r.protocol == protocol
    if not isinstance(text, str):
        assert r.errors == [f"response is a {type(text).__name__}, not str"]
