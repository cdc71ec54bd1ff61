"""Exports: core records, the per-turn split, LLaMA-Factory sharegpt, verl parquet, BFCL files."""

import json

import pytest

from aworld_rl_core.records import read_jsonl, to_sharegpt
from aworld_rl_funreason_mt.export import (
    expand_per_turn,
    rl_rows,
    split_per_turn,
    to_record,
    write_exports,
)


def test_record_carries_the_conversation_truth_and_flag(demo_trajectories):
    trajectory = demo_trajectories[0]
    record = to_record(trajectory)
    assert (
        record.messages[0]["role"] == "system"
        and "Available tools" in record.messages[0]["content"]
    )
    assert record.ground_truth == trajectory.ground_truth()
    assert record.metadata["error_tool_response"] == trajectory.error_tool_response
    assert record.metadata["bfcl_entry"]["id"] == trajectory.entry_id
    assert {t["function"]["name"] for t in record.tools} == {
        d["name"] for d in trajectory.function_docs
    }
    assert to_record(trajectory, with_tools=False).tools == []


def test_some_demo_trajectories_learn_from_an_error(demo_trajectories):
    flagged = [t for t in demo_trajectories if t.error_tool_response]
    assert flagged, "error_rate=0.5 over several rounds gives at least one"
    tool_texts = [m["content"] for m in flagged[0].messages() if m["role"] == "tool"]
    assert any("Error during execution" in text for text in tool_texts)


def test_split_ends_each_sample_with_its_assistant_turn(demo_trajectories):
    record = to_record(demo_trajectories[0])
    parts = split_per_turn(record)
    assert len(parts) == len(record.assistant_indices())
    for n, part in enumerate(parts):
        assert part.messages[-1]["role"] == "assistant"
        assert part.messages == record.messages[: len(part.messages)]
        assert part.metadata["supervised_turn"] == n and part.id == f"{record.id}#{n}"


def test_write_exports_every_format(demo_trajectories, tmp_path):
    paths = write_exports(demo_trajectories, tmp_path)
    assert len(read_jsonl(paths["records"])) == len(demo_trajectories)
    refs = [json.loads(x) for x in paths["split"].read_text().splitlines()]
    records = read_jsonl(paths["records"])
    split = expand_per_turn(records, refs)
    assert len(split) == sum(len(to_record(t).assistant_indices()) for t in demo_trajectories)
    # the per-turn file holds references: the system prompt is stored once per conversation
    assert [s.messages for s in split] == [p.messages for r in records for p in split_per_turn(r)]
    system = records[0].messages[0]["content"]
    assert len(system) > 5000 and system not in paths["split"].read_text()
    assert paths["split"].stat().st_size < paths["records"].stat().st_size / 20
    # LLaMA-Factory: alternating turns, the dataset registered in dataset_info.json
    rows = json.loads(paths["sharegpt"].read_text())
    assert all(r["conversations"][0]["from"] == "human" for r in rows)
    assert {"observation", "gpt"} <= {t["from"] for r in rows for t in r["conversations"]}
    info = json.loads((paths["sharegpt"].parent / "dataset_info.json").read_text())
    assert set(info) == {"funreason_mt"}  # the per-turn copy is on request
    # BFCL layout: questions and possible answers pair by id
    questions = [json.loads(x) for x in paths["bfcl"].read_text().splitlines()]
    answers = [json.loads(x) for x in paths["bfcl_answers"].read_text().splitlines()]
    assert [q["id"] for q in questions] == [a["id"] for a in answers]
    assert answers[0]["ground_truth"] == demo_trajectories[0].ground_truth()
    # error_tool_response in every export, so the card's advice (drop flagged rows) applies
    flags = [t.error_tool_response for t in demo_trajectories]
    assert any(flags) and not all(flags)
    assert [r["error_tool_response"] for r in rows] == flags
    more = write_exports(demo_trajectories, tmp_path / "more", formats=["sharegpt_per_turn"])
    per_turn = json.loads(more["sharegpt_per_turn"].read_text())
    assert len(per_turn) == len(split)
    assert [r["error_tool_response"] for r in per_turn] == [
        s.metadata["error_tool_response"] for s in split
    ]
    assert [r.metadata["error_tool_response"] for r in records] == flags
    assert {r["record"]: r["error_tool_response"] for r in refs} == {
        r.id: r.metadata["error_tool_response"] for r in records
    }
    assert [q["error_tool_response"] for q in questions] == flags


def test_verl_parquet_rows_carry_the_entry(demo_trajectories, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    path = write_exports(demo_trajectories, tmp_path, formats=["verl"])["verl"]
    table = pq.read_table(path).to_pylist()
    assert len(table) == len(demo_trajectories)
    assert [m["role"] for m in table[0]["prompt"]] == ["system", "user"]
    entry = json.loads(table[0]["extra_info"]["interaction_kwargs"]["bfcl_entry"])
    assert entry == demo_trajectories[0].bfcl_entry()


def test_rl_rows_and_errors(demo_trajectories, tmp_path):
    rows = rl_rows(demo_trajectories)
    assert json.loads(rows[0]["bfcl_entry"])["id"] == rows[0]["entry_id"]
    assert [m["role"] for m in rows[0]["prompt"]] == ["system", "user"]
    with pytest.raises(ValueError, match="unknown export formats"):
        write_exports(demo_trajectories, tmp_path, formats=["csv"])
    assert write_exports([], tmp_path) == {}
    assert all(
        to_sharegpt(to_record(t, with_tools=False))["tools"] == "" for t in demo_trajectories
    )
