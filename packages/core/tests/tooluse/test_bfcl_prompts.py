"""Tool schemas and prompts: identical to what bfcl-eval's own helpers build."""

from __future__ import annotations

import copy

import pytest
from bfcl_helpers import entries, reference

from aworld_rl_core.tooluse.bfcl import (
    ALL_CATEGORIES,
    MultiTurnEpisode,
    missed_function_message,
    to_json_schema,
    to_openai_tools,
    with_system_prompt,
)
from aworld_rl_core.tooluse.bfcl.prompts import docs_as_shown, opening_messages


def _bfcl_utils():
    reference()  # points BFCL_PROJECT_ROOT at a temporary folder before the import below
    from bfcl_eval.constants.enums import ModelStyle
    from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI
    from bfcl_eval.model_handler import utils

    return utils, ModelStyle, GORILLA_TO_OPENAPI


def test_json_schema_of_a_known_doc():
    doc = next(d for d in entries("multi_turn_base")[3].functions if d["name"] == "mv")
    assert to_json_schema(doc) == {
        "type": "object",
        "properties": {
            "source": {
                "type": "string",
                "description": doc["parameters"]["properties"]["source"]["description"],
            },
            "destination": {
                "type": "string",
                "description": doc["parameters"]["properties"]["destination"]["description"],
            },
        },
        "required": ["source", "destination"],
    }
    math_add = {
        "name": "add",
        "description": "Add.",
        "parameters": {
            "type": "dict",
            "properties": {"a": {"type": "float", "description": "First."}},
            "required": ["a"],
        },
    }
    assert to_json_schema(math_add)["properties"]["a"] == {
        "type": "number",
        "format": "float",
        "description": "First. This is a float type value.",
    }
    assert math_add["parameters"]["type"] == "dict"  # the doc itself is left untouched


def test_openai_tools_match_bfcl_convert_to_tool():
    utils, style, mapping = _bfcl_utils()
    for category in ("multi_turn_base", "simple_python", "live_multiple", "parallel_multiple"):
        for entry in entries(category)[:25]:
            docs = entry.functions
            expected = utils.convert_to_tool(copy.deepcopy(docs), mapping, style.OPENAI_COMPLETIONS)
            assert to_openai_tools(docs) == expected, entry.id


def test_system_prompt_matches_bfcl():
    utils, _, _ = _bfcl_utils()
    for entry in (entries("multi_turn_base")[0], entries("simple_python")[0]):
        messages = entry.turns[0]
        expected = utils.system_prompt_pre_processing_chat_model(
            copy.deepcopy(messages), entry.functions, entry.id
        )
        assert with_system_prompt(messages, entry.functions) == expected
    merged = with_system_prompt([{"role": "system", "content": "Be brief."}], [])
    assert merged[0]["content"].endswith("\n\nBe brief.") and len(merged) == 1


def test_missed_function_message_is_bfcls():
    entry = entries("multi_turn_miss_func")[0]
    docs = entry.missed_functions[3]
    message = missed_function_message(docs)
    tail = "I have updated some more functions you can choose from. What about now?"
    assert message == {"role": "user", "content": f"{docs}\n{tail}"}
    assert MultiTurnEpisode(entry).user_messages(3) == [message]


DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_PROMPTING = (
    "{functions}\nI have updated some more functions you can choose from. What about now?"
)


def _bfcl_entries(category):
    reference()
    from bfcl_eval.utils import load_dataset_entry

    return load_dataset_entry(category, include_prereq=False)  # the hint on, as in inference


@pytest.mark.parametrize("category", ALL_CATEGORIES)
def test_opening_messages_are_what_bfcls_inference_sends(category):
    utils, _, _ = _bfcl_utils()
    theirs = _bfcl_entries(category)
    ours = entries(category)
    assert [e["id"] for e in theirs] == [e.id for e in ours]
    for entry, raw in zip(ours, theirs, strict=True):
        expected = utils.system_prompt_pre_processing_chat_model(
            copy.deepcopy(raw["question"][0]), raw["function"], raw["id"]
        )
        assert opening_messages(entry) == expected, entry.id
        for turn, docs in raw.get("missed_function", {}).items():
            assert missed_function_message(entry.missed_functions[int(turn)]) == {
                "role": "user",
                "content": DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_PROMPTING.format(
                    functions=docs
                ),
            }


def test_docs_carry_the_language_note_and_java_types_become_strings():
    java = entries("simple_java")[1]
    shown = docs_as_shown(java.functions, "simple_java")[0]
    assert shown["description"].endswith(
        " Note that the provided function is in Java 8 SDK syntax."
    )
    use_short = shown["parameters"]["properties"]["useShortName"]
    assert use_short["type"] == "string"
    assert use_short["description"].endswith(
        " This is Java boolean type parameter in string representation."
    )
    assert java.functions[0]["parameters"]["properties"]["useShortName"]["type"] == "boolean"
    python = docs_as_shown(entries("multi_turn_base")[0].functions, "multi_turn_base")
    assert all(d["description"].endswith("Python 3 syntax.") for d in python)
