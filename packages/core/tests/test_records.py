"""Core tool-use records and their converters (sharegpt, verl parquet, TRL rows, BFCL)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from aworld_rl_core.backends.verl.rows import to_verl_row, verl_ground_truth, write_verl_parquet
from aworld_rl_core.records import (
    RecordError,
    ToolUseRecord,
    read_jsonl,
    to_sharegpt,
    to_trl_rows,
    write_jsonl,
    write_sharegpt,
)
from aworld_rl_core.tooluse.bfcl.records import bfcl_function_to_tool, from_bfcl

ADD = {
    "name": "add",
    "description": "Add two integers.",
    "parameters": {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
}
WEATHER = {
    "type": "function",
    "function": {
        "name": "weather",
        "description": "Weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def sample(**overrides) -> dict:
    """A multi-turn sample: think + parallel calls, two tool results, a final answer."""
    data = {
        "id": "s1",
        "messages": [
            {"role": "system", "content": "You are a calculator."},
            {"role": "user", "content": "What is 1+2 and 3+4?"},
            {
                "role": "assistant",
                "content": "<think>Two sums.</think>",
                "tool_calls": [
                    {
                        "type": "function",
                        "function": {"name": "add", "arguments": {"a": 1, "b": 2}},
                    },
                    {"name": "add", "arguments": '{"a": 3, "b": 4}'},
                ],
            },
            {"role": "tool", "content": "3"},
            {"role": "tool", "content": "7"},
            {"role": "assistant", "content": "3 and 7."},
        ],
        "tools": [ADD, WEATHER],
        "ground_truth": [{"add": {"a": [1], "b": [2]}}, {"add": {"a": [3], "b": [4]}}],
        "data_source": "toy",
        "metadata": {"split": "train"},
    }
    data.update(overrides)
    return data


# ---- the record ---------------------------------------------------------------------------


def test_record_normalises_tools_and_calls():
    record = ToolUseRecord.from_dict(sample())
    assert record.tools[0] == {"type": "function", "function": ADD}
    assert record.tools[1] == WEATHER
    calls = record.messages[2]["tool_calls"]
    assert calls[0] == {
        "type": "function",
        "function": {"name": "add", "arguments": {"a": 1, "b": 2}},
    }
    # a flat call is wrapped; a JSON-string argument stays a string (validated)
    assert calls[1] == {
        "type": "function",
        "function": {"name": "add", "arguments": '{"a": 3, "b": 4}'},
    }
    assert record.prompt_messages() == record.messages[:2]
    assert record.assistant_indices() == [2, 5]
    assert ToolUseRecord.from_dict(record.to_dict()) == record


def test_jsonl_round_trip(tmp_path: Path):
    records = [ToolUseRecord.from_dict(sample()), ToolUseRecord.from_dict(sample(id="s2"))]
    path = write_jsonl(records, tmp_path / "r.jsonl")
    assert read_jsonl(path) == records
    path.write_text(path.read_text() + '{"id": "bad"}\n')
    with pytest.raises(RecordError, match=r"r\.jsonl:3: .*'messages' is missing"):
        read_jsonl(path)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"messages": []}, "non-empty list"),
        ({"messages": [{"role": "robot", "content": "x"}]}, r"messages\[0\]: role 'robot'"),
        ({"messages": [{"role": "user"}]}, r"messages\[0\]: a user message needs a string"),
        ({"messages": [{"role": "user", "content": "x"}, {"role": "assistant"}]}, "needs content"),
        (
            {"messages": [{"role": "assistant", "tool_calls": [{"name": "f", "arguments": "{x"}]}]},
            r"tool_calls\[0\]\.function: arguments is not valid JSON",
        ),
        (
            {"messages": [{"role": "assistant", "tool_calls": [{"name": "f", "arguments": [1]}]}]},
            "arguments must be a JSON object",
        ),
        ({"messages": [{"role": "user", "content": "x", "extra": 1}]}, "unexpected keys"),
        ({"tools": [{"description": "no name"}]}, r"tools\[0\]: the tool needs"),
        ({"ground_truth": {1, 2}}, "ground_truth is not JSON-serialisable"),
        ({"answer": 1}, r"unknown keys \['answer'\].*metadata"),
    ],
)
def test_record_errors_name_the_field(change, message):
    with pytest.raises(RecordError, match=message):
        ToolUseRecord.from_dict(sample(**change))


# ---- LLaMA-Factory sharegpt ---------------------------------------------------------------


def test_sharegpt_row_hand_checked():
    row = to_sharegpt(sample())
    calls = [
        {"name": "add", "arguments": {"a": 1, "b": 2}},
        {"name": "add", "arguments": {"a": 3, "b": 4}},
    ]
    assert row == {
        "conversations": [
            {"from": "human", "value": "What is 1+2 and 3+4?"},
            # the thought takes the shape LLaMA-Factory's function formatter accepts
            {
                "from": "function_call",
                "value": "<think>\nTwo sums.\n</think>\n\n" + json.dumps(calls),
            },
            {"from": "observation", "value": "3\n</tool_response>\n<tool_response>\n7"},
            {"from": "gpt", "value": "3 and 7."},
        ],
        "system": "You are a calculator.",
        "tools": json.dumps([ADD, WEATHER["function"]]),
    }


def test_sharegpt_single_call_trailing_tool_and_reasoning():
    messages = [
        {"role": "user", "content": "1+2?"},
        {
            "role": "assistant",
            "reasoning_content": "sum",
            "tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}],
        },
        {"role": "tool", "content": "3"},
    ]
    row = to_sharegpt({"messages": messages})
    assert row["conversations"] == [
        {"from": "human", "value": "1+2?"},
        {
            "from": "function_call",
            "value": '<think>\nsum\n</think>\n\n{"name": "add", "arguments": {"a": 1, "b": 2}}',
        },
    ]
    assert row["system"] == "" and row["tools"] == ""


@pytest.mark.parametrize(
    ("messages", "message"),
    [
        ([{"role": "user", "content": "hi"}], "at least one assistant"),
        (
            [
                {"role": "user", "content": "a"},
                {"role": "user", "content": "b"},
                {"role": "assistant", "content": "c"},
            ],
            "alternating turns, but turn 1 is 'human'",
        ),
        (
            [
                {"role": "user", "content": "a"},
                {
                    "role": "assistant",
                    "content": "sure",
                    "tool_calls": [{"name": "f", "arguments": {}}],
                },
            ],
            "also has text 'sure'",
        ),
    ],
)
def test_sharegpt_rejects_what_llamafactory_cannot_hold(messages, message):
    with pytest.raises(RecordError, match=message):
        to_sharegpt({"messages": messages})


def test_write_sharegpt_keeps_other_dataset_info_entries(tmp_path: Path):
    (tmp_path / "dataset_info.json").write_text(json.dumps({"other": {"file_name": "o.json"}}))
    path = write_sharegpt([sample(), sample(id="s2")], tmp_path, "toy_tools")
    assert path == tmp_path / "toy_tools.json"
    info = json.loads((tmp_path / "dataset_info.json").read_text())
    assert info == {
        "other": {"file_name": "o.json"},
        "toy_tools": {
            "file_name": "toy_tools.json",
            "formatting": "sharegpt",
            "columns": {"messages": "conversations", "system": "system", "tools": "tools"},
        },
    }
    datasets = pytest.importorskip("datasets")
    loaded = datasets.load_dataset("json", data_files=str(path), split="train")
    assert loaded.num_rows == 2
    assert loaded[0] == to_sharegpt(sample())
    with pytest.raises(RecordError, match="dataset name"):
        write_sharegpt([sample()], tmp_path, "bad name")


# ---- verl parquet ---------------------------------------------------------------------


def test_verl_row_hand_checked():
    meta = {"tools_kwargs": {"add": {"create_kwargs": {"start": 1}}}, "level": 2}
    row = to_verl_row(sample(metadata=meta), 7, split="val", agent_name="aworld_env")
    assert row == {
        "data_source": "toy",
        "prompt": [
            {"role": "system", "content": "You are a calculator."},
            {"role": "user", "content": "What is 1+2 and 3+4?"},
        ],
        "ability": "tool_use",
        "reward_model": {"style": "rule", "ground_truth": json.dumps(sample()["ground_truth"])},
        "extra_info": {
            "index": 7,
            "split": "val",
            "id": "s1",
            "tools": json.dumps([{"type": "function", "function": ADD}, WEATHER]),
            "metadata": json.dumps(meta),
            "tools_kwargs": {"add": {"create_kwargs": {"start": 1}}},
            "need_tools_kwargs": True,
        },
        "agent_name": "aworld_env",
    }


def test_verl_parquet_loads_with_datasets(tmp_path: Path):
    datasets = pytest.importorskip("datasets")
    other = sample(id="s2", tools=[WEATHER], ground_truth="sunny", metadata={})
    path = write_verl_parquet([sample(), other], tmp_path / "train.parquet")
    loaded = datasets.load_dataset("parquet", data_files=str(path), split="train")
    assert loaded.num_rows == 2
    first, second = loaded[0], loaded[1]
    assert first["prompt"][1] == {"role": "user", "content": "What is 1+2 and 3+4?"}
    assert verl_ground_truth(first["reward_model"]["ground_truth"]) == sample()["ground_truth"]
    assert verl_ground_truth(second["reward_model"]["ground_truth"]) == "sunny"
    # JSON-string columns survive Arrow's struct alignment unchanged
    assert json.loads(second["extra_info"]["tools"]) == [WEATHER]
    assert [first["extra_info"]["index"], second["extra_info"]["index"]] == [0, 1]


def test_verl_row_needs_a_prompt():
    with pytest.raises(RecordError, match="no prompt"):
        to_verl_row({"messages": [{"role": "assistant", "content": "x"}]}, 0)


# ---- TRL rows -------------------------------------------------------------------------


def test_trl_rows_kinds():
    record = ToolUseRecord.from_dict(sample())
    messages, prompt_completion, prompt = (
        to_trl_rows([record], kind)[0] for kind in ("messages", "prompt_completion", "prompt")
    )
    assert messages["messages"][2]["tool_calls"][0]["function"]["arguments"] == '{"a": 1, "b": 2}'
    assert messages["messages"][2]["content"] == "<think>Two sums.</think>"
    assert prompt_completion["prompt"] == messages["messages"][:2]
    assert prompt_completion["completion"] == messages["messages"][2:]
    assert prompt["prompt"] == messages["messages"][:2] and "completion" not in prompt
    for row in (messages, prompt_completion, prompt):
        assert json.loads(row["tools"]) == record.tools
        assert json.loads(row["ground_truth"]) == record.ground_truth
        assert (row["id"], row["data_source"]) == ("s1", "toy")
    with pytest.raises(RecordError, match="unknown TRL row kind"):
        to_trl_rows([record], "text")


def test_trl_rows_render_identically_after_arrow(tmp_path: Path):
    """Rows from records with different tools go through ``datasets`` and render unchanged."""
    datasets = pytest.importorskip("datasets")
    pytest.importorskip("transformers")
    from trl.data_utils import is_conversational

    from aworld_rl_core.models import tiny_tokenizer

    tok = tiny_tokenizer()
    weather = sample(
        id="w",
        tools=[WEATHER],
        messages=[
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "tool_calls": [{"name": "weather", "arguments": {"city": "Paris"}}],
            },
            {"role": "tool", "content": "sunny"},
            {"role": "assistant", "content": "Sunny."},
        ],
    )
    records = [ToolUseRecord.from_dict(sample()), ToolUseRecord.from_dict(weather)]
    loaded = datasets.Dataset.from_list(to_trl_rows(records))
    for record, row in zip(records, loaded, strict=True):
        assert is_conversational(row)
        direct = tok.apply_chat_template(record.messages, tools=record.tools, tokenize=False)
        via_arrow = tok.apply_chat_template(
            row["messages"], tools=json.loads(row["tools"]), tokenize=False
        )
        assert via_arrow == direct
    assert '{"name": "weather", "arguments": {"city": "Paris"}}' in via_arrow


# ---- BFCL -----------------------------------------------------------------------------


def _bfcl_data() -> Path:
    spec = importlib.util.find_spec("bfcl_eval")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("bfcl-eval is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_from_bfcl_simple_python_0():
    data = _bfcl_data()
    entry = _jsonl(data / "BFCL_v4_simple_python.json")[0]
    answer = _jsonl(data / "possible_answer" / "BFCL_v4_simple_python.json")[0]
    record = from_bfcl(entry, answer["ground_truth"])
    assert record.id == "simple_python_0" and record.data_source == "bfcl"
    assert record.messages == [
        {
            "role": "user",
            "content": "Find the area of a triangle with a base of 10 units and height of 5 units.",
        }
    ]
    function = record.tools[0]["function"]
    assert function["name"] == "calculate_triangle_area"
    assert function["parameters"]["type"] == "object"  # BFCL's "dict"
    assert function["parameters"]["required"] == ["base", "height"]
    assert record.ground_truth == [
        {"calculate_triangle_area": {"base": [10], "height": [5], "unit": ["units", ""]}}
    ]


@pytest.mark.parametrize(
    "category",
    [
        "simple_python",
        "simple_java",
        "simple_javascript",
        "live_multiple",
        "live_parallel_multiple",
        "parallel_multiple",
        "irrelevance",
    ],
)
def test_from_bfcl_converts_whole_categories(category):
    entries = _jsonl(_bfcl_data() / f"BFCL_v4_{category}.json")
    records = [from_bfcl(e) for e in entries]
    assert len(records) == len(entries)
    bfcl_only = {"dict", "float", "tuple", "any", "String", "HashMap", "ArrayList", "Boolean"}
    for record in records:
        assert not bfcl_only & _types(record.tools)


def _types(node) -> set[str]:
    if isinstance(node, dict):
        found = {node["type"]} if isinstance(node.get("type"), str) else set()
        return found.union(*(_types(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_types(v) for v in node))
    return set()


def test_bfcl_function_to_tool_is_bfcls_own_conversion():
    """One BFCL-to-JSON-Schema converter: records get exactly what BFCL's FC handlers build
    (tooluse.bfcl.schemas, checked against bfcl-eval there), with the names' dots kept."""
    pytest.importorskip("bfcl_eval")
    from aworld_rl_core.tooluse.bfcl.schemas import to_openai_tools

    doc = {
        "name": "geo.distance",
        "parameters": {
            "type": "dict",
            "properties": {
                "xs": {"type": "tuple", "items": {"type": "float"}},
                "v": {"type": "any", "description": "anything"},
            },
        },
    }
    tool = bfcl_function_to_tool(doc)
    assert tool["function"]["name"] == "geo.distance"
    assert tool["function"]["parameters"] == to_openai_tools([doc])[0]["function"]["parameters"]
    assert tool["function"]["parameters"]["properties"]["xs"] == {
        "type": "array",
        "items": {"type": "number"},
    }
    assert doc["parameters"]["type"] == "dict"  # the doc itself is left untouched
    with pytest.raises(RecordError, match="needs a 'name'"):
        bfcl_function_to_tool({"parameters": {}})
    boolean = {"type": "dict", "properties": {"b": {"type": "Boolean"}}}  # simple_javascript's
    assert bfcl_function_to_tool({"name": "f", "parameters": boolean})["function"]["parameters"][
        "properties"
    ]["b"] == {"type": "string"}  # as BFCL's FC handlers send it


def test_from_bfcl_multi_turn_keeps_pending_turns_and_needs_function_docs():
    entry = {
        "id": "multi_turn_base_0",
        "question": [[{"role": "user", "content": "a"}], [{"role": "user", "content": "b"}]],
        "initial_config": {"GorillaFileSystem": {"root": {}}},
        "involved_classes": ["GorillaFileSystem"],
    }
    with pytest.raises(RecordError, match=r"lacks \['function'\]"):
        from_bfcl(entry)
    record = from_bfcl(
        {**entry, "function": [{"name": "ls", "parameters": {"type": "dict", "properties": {}}}]}
    )
    assert record.messages == [{"role": "user", "content": "a"}]
    assert record.metadata["pending_turns"] == [[{"role": "user", "content": "b"}]]
    assert record.metadata["involved_classes"] == ["GorillaFileSystem"]


def test_records_hold_image_content_parts_and_text_writers_refuse_them():
    user = [{"type": "image", "image": "shot.png"}, {"type": "text", "text": "Where?"}]
    record = ToolUseRecord(
        messages=[{"role": "user", "content": user}, {"role": "assistant", "content": "ok"}]
    )
    assert record.messages[0]["content"] == user
    with pytest.raises(RecordError, match="train vision-language records with trainer.backend"):
        to_sharegpt(record)
    texts = [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
    only_text = ToolUseRecord(
        messages=[{"role": "user", "content": texts}, {"role": "assistant", "content": "ok"}]
    )
    assert to_sharegpt(only_text)["conversations"][0] == {"from": "human", "value": "ab"}
    for part, message in [
        ({"type": "video", "video": "v.mp4"}, r"content\[0\] must be a content part"),
        ({"type": "image"}, "an image part needs 'image'"),
        ({"type": "image_url", "image_url": {}}, "needs image_url.url"),
        ({"type": "text", "text": 3}, "a text part needs a string 'text'"),
    ]:
        with pytest.raises(RecordError, match=message):
            ToolUseRecord(messages=[{"role": "user", "content": [part]}])
