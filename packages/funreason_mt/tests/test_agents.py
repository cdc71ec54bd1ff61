"""Phase II and the critic: prompts, reply parsers and their checks, with malformed replies."""

import json

import pytest

from aworld_rl_funreason_mt.critiquing import critic_messages, parse_hint, revealed_calls
from aworld_rl_funreason_mt.matching import Match
from aworld_rl_funreason_mt.querying import named_tools, parse_query, querying_messages
from aworld_rl_funreason_mt.replies import ReplyError, extract_json
from aworld_rl_funreason_mt.tooling import (
    TOOLING_SYSTEM,
    AdvancedTool,
    check_schema,
    parse_advanced_tool,
    tooling_messages,
    trace_values,
)

GOOD_TOOL = {
    "name": "message_new_contact",
    "description": "Add a contact and send them a message from their account.",
    "parameters": {
        "type": "object",
        "properties": {"user_name": {"type": "string"}, "message": {"type": "string"}},
        "required": ["user_name", "message"],
    },
    "arguments": {"user_name": "Ines", "message": "The release is ready for review"},
    "returns": "the send status",
}


def reply(data, fence=True, think=True):
    body = json.dumps(data)
    return ("<think>plan</think>\n" if think else "") + (f"```json\n{body}\n```" if fence else body)


def test_trace_values_split_user_facing_from_intermediate(message_trace):
    user, internal = trace_values(message_trace)
    assert user == {"ines", "the release is ready for review"}
    assert internal == {"usr005"}  # the id add_contact returned and the later calls used


def test_tooling_prompt_shows_calls_origins_and_results(message_trace, space):
    messages = tooling_messages(message_trace, space, feedback="name is missing")
    assert messages[0] == {"role": "system", "content": TOOLING_SYSTEM}
    user = messages[1]["content"]
    assert "1. add_contact(user_name='Ines')" in user
    assert "[user_id from the output of add_contact]" in user
    assert '"added_status": true' in user and "rejected: name is missing" in user


def test_good_tool_parses(message_trace):
    tool = parse_advanced_tool(reply(GOOD_TOOL), message_trace, ["send_message"])
    assert tool == AdvancedTool(**GOOD_TOOL)
    assert tool.schema()["function"]["name"] == "message_new_contact"
    assert AdvancedTool.from_dict(tool.to_dict()) == tool


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (
            {"parameters": {"type": "object", "properties": {"x": {"type": "strin"}}}},
            "not a valid JSON Schema",
        ),
        ({"parameters": {"type": "array"}}, '"type": "object"'),
        ({"name": "send message"}, "not an identifier"),
        ({"name": "send_message"}, "primitive tool's name"),
        ({"description": ""}, "description is missing"),
        ({"arguments": {"user_name": "Ines", "message": 5}}, "do not fit parameters"),
        (
            {"arguments": {"user_name": "USR005", "message": "The release is ready for review"}},
            "intermediate result",
        ),
        (
            {"arguments": {"user_name": "Zed", "message": "The release is ready for review"}},
            "does not occur",
        ),
    ],
)
def test_bad_tools_are_rejected_with_the_reason(message_trace, change, problem):
    with pytest.raises(ReplyError, match=problem):
        parse_advanced_tool(reply({**GOOD_TOOL, **change}), message_trace, ["send_message"])


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "empty"),
        ("I would build a tool.", "no JSON object"),
        ("{broken", "no JSON object"),
        (None, "not text"),
    ],
)
def test_garbage_replies_say_what_is_wrong(message_trace, text, problem):
    with pytest.raises(ReplyError, match=problem):
        parse_advanced_tool(text, message_trace, [])


def test_json_is_found_in_prose_and_fences():
    assert extract_json('Sure! {"a": 1} and {"b": 2}') == {"a": 1}
    assert extract_json("```json\n[1, 2]\n```", expect=list) == [1, 2]
    assert extract_json('<think>{"no": 1}</think>{"yes": 2}') == {"yes": 2}
    with pytest.raises(ReplyError, match="over"):
        extract_json("x" * 70_000)


def test_schema_check():
    assert check_schema({"type": "object", "properties": {}}) == []
    assert check_schema("object") == ["parameters must be a JSON Schema object, got str"]


TOOL = AdvancedTool(**GOOD_TOOL)


def test_query_is_checked_for_tool_names_and_values():
    q = "Please add Ines as a contact and tell her: The release is ready for review"
    assert parse_query(json.dumps({"query": q}), TOOL, ["add_contact", "message_login"]) == q
    assert parse_query(q, TOOL, ["add_contact"]) == q  # a plain-text reply is accepted
    with pytest.raises(ReplyError, match=r"names tools \(add_contact\)"):
        parse_query(
            json.dumps(
                {"query": "Call add_contact for Ines, then write: The release is ready for review"}
            ),
            TOOL,
            ["add_contact"],
        )
    with pytest.raises(ReplyError, match="names tools"):
        parse_query(
            json.dumps(
                {"query": "Use message_login(...) for Ines: The release is ready for review"}
            ),
            TOOL,
            ["message_login"],
        )
    with pytest.raises(ReplyError, match="leaves out the input values"):
        parse_query(json.dumps({"query": "Add my new colleague and greet them."}), TOOL, [])
    with pytest.raises(ReplyError, match="characters"):
        parse_query(json.dumps({"query": "Ines"}), TOOL, [], require_values=False)
    with pytest.raises(ReplyError, match="no request"):
        parse_query('{"text": "hi"}', TOOL, [])


def test_single_word_tool_names_count_only_as_code():
    assert named_tools("please cat the file and sort it", ["cat", "sort"]) == []
    assert named_tools("run `cat` then sort(x)", ["cat", "sort"]) == ["cat", "sort"]
    assert named_tools("first Get User Id, then log in", ["get_user_id"]) == ["get_user_id"]


def test_query_prompt_carries_tool_values_and_noise():
    user = querying_messages(TOOL, "a busy person", "it named a tool")[1]["content"]
    assert '"name": "message_new_contact"' in user and '"user_name": "Ines"' in user
    assert "Write it as a busy person." in user and "rejected: it named a tool" in user


EXPECTED = ["add_contact(user_name='Ines')", "message_login(user_id='USR005')"]


@pytest.mark.parametrize(
    "hint",
    [
        "Call add_contact(user_name='Ines') first.",
        'Try {"name": "message_login", "arguments": {"user_id": "USR005"}}.',
        "Use message_login with USR005 before sending.",
    ],
)
def test_hints_that_give_the_answer_are_rejected(hint):
    assert revealed_calls(hint, EXPECTED)
    with pytest.raises(ReplyError, match="gives away"):
        parse_hint(json.dumps({"hint": hint}), EXPECTED)


def test_hints_that_point_at_the_mistake_pass():
    hint = "You never logged in as the new contact before sending."
    assert parse_hint(json.dumps({"hint": hint}), EXPECTED) == hint
    assert parse_hint("Check the login step.", EXPECTED) == "Check the login step."
    with pytest.raises(ReplyError, match="no hint"):
        parse_hint('{"advice": 1}', EXPECTED)


def test_critic_prompt_lists_attempt_truth_and_difference():
    user = critic_messages(
        "Send Ines a note",
        [("add_contact(user_name='Ines')", '{"added_status": true}')],
        EXPECTED,
        Match(False, "1 calls ran, the trace has 2"),
    )[1]["content"]
    assert "- add_contact(user_name='Ines') -> " in user
    assert "- message_login(user_id='USR005')" in user and "What differed: 1 calls ran" in user
