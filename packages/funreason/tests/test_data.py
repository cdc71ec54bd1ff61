"""Readers, target rendering and schema checks on hand-written records."""

from __future__ import annotations

import json

import pytest

from aworld_rl_core.tooluse.calls import Call, parse_python_calls
from aworld_rl_funreason.data import (
    FcSample,
    read_bfcl,
    read_samples,
    read_xlam,
    render_target,
    split_response,
)
from aworld_rl_funreason.schema import check_calls, xlam_tool_to_schema, xlam_type_to_json

XLAM = {
    "id": 7,
    "query": "Where can I find live giveaways for beta access and games?",
    "answers": json.dumps(
        [
            {"name": "live_giveaways_by_type", "arguments": {"type": "beta"}},
            {"name": "live_giveaways_by_type", "arguments": {"type": "game"}},
        ]
    ),
    "tools": json.dumps(
        [
            {
                "name": "live_giveaways_by_type",
                "description": "Retrieve live giveaways.",
                "parameters": {
                    "type": {"description": "giveaway type", "type": "str", "default": "game"},
                    "limit": {"description": "max items", "type": "int, optional"},
                },
            }
        ]
    ),
}


def test_xlam_types():
    assert xlam_type_to_json("str") == ("string", False)
    assert xlam_type_to_json("int, optional") == ("integer", True)
    assert xlam_type_to_json("List[Dict[str, Any]]") == ("array", False)
    assert xlam_type_to_json("Optional[float]") == ("number", True)
    assert xlam_type_to_json("Callable") == ("any", False)


def test_read_xlam_jsonl_and_json(tmp_path):
    (tmp_path / "a.jsonl").write_text(json.dumps(XLAM) + "\n\n", encoding="utf-8")
    (tmp_path / "b.json").write_text(json.dumps([XLAM]), encoding="utf-8")
    for name in ("a.jsonl", "b.json"):
        [s] = read_xlam(tmp_path / name)
        assert s.id == "7"
        assert s.answer == (
            "[live_giveaways_by_type(type='beta'), live_giveaways_by_type(type='game')]"
        )
        params = s.tools[0]["parameters"]
        assert params["required"] == ["type"]
        assert params["properties"]["limit"] == {"description": "max items", "type": "integer"}
        assert params["properties"]["type"]["default"] == "game"


def test_read_samples_roundtrip_and_errors(tmp_path):
    s = FcSample(id="1", query="q", tools=[], answer="[f(a=1)]", reasoning="r", meta={"k": 1})
    (tmp_path / "s.jsonl").write_text(json.dumps(s.to_dict()) + "\n", encoding="utf-8")
    assert read_samples(tmp_path / "s.jsonl") == [s]
    (tmp_path / "bad.jsonl").write_text('{"query": "q"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match="lacks"):
        read_samples(tmp_path / "bad.jsonl")
    with pytest.raises(FileNotFoundError):
        read_xlam(tmp_path / "missing.jsonl")


def test_render_and_split_target():
    calls = [Call("f", {"a": 1, "b": "x"})]
    text = render_target("  step 1\nstep 2 ", calls)
    assert text == "<think>\nstep 1\nstep 2\n</think>\n\n[f(a=1, b='x')]"
    assert split_response(text) == ("step 1\nstep 2", "[f(a=1, b='x')]")
    assert split_response("[f()]") == (None, "[f()]")
    assert split_response("half thought</think> [g()]") == ("half thought", "[g()]")
    assert render_target(None, "plain") == "plain"


def test_read_bfcl_single_turn(tmp_path, monkeypatch):
    monkeypatch.setenv("BFCL_PROJECT_ROOT", str(tmp_path))
    [s] = read_bfcl("simple", limit=1)
    assert s.id == "simple_python_0" and s.meta["category"] == "simple_python"
    assert "triangle" in s.query
    assert s.tools[0]["name"] == "calculate_triangle_area"
    # BFCL's possible answer: base=[10], height=[5], unit=["units", ""] (optional, left out)
    assert parse_python_calls(s.answer) == [
        Call("calculate_triangle_area", {"base": 10, "height": 5})
    ]


def test_check_calls_finds_schema_violations():
    tool = xlam_tool_to_schema(json.loads(XLAM["tools"])[0])
    ok = parse_python_calls("[live_giveaways_by_type(type='beta', limit=3)]")
    assert check_calls(ok, [tool]) == []
    assert check_calls(parse_python_calls("[live_giveaways_by_type()]"), [tool]) == []  # default
    bad = parse_python_calls("[live_giveaways_by_type(kind='x', limit='3'), other()]")
    assert check_calls(bad, [tool]) == [
        "live_giveaways_by_type: unknown parameter 'kind'",
        "live_giveaways_by_type: limit='3' is not of type integer",
        "unknown function 'other' (tools: live_giveaways_by_type)",
    ]
    strict = {
        "name": "f",
        "parameters": {
            "type": "object",
            "properties": {"x": {"type": "number"}},
            "required": ["x"],
        },
    }
    assert check_calls([Call("f", {})], [strict]) == ["f: missing required parameter 'x'"]
    assert check_calls([Call("f", {"x": True})], [strict]) == ["f: x=True is not of type number"]
    assert check_calls([Call("f", {"x": 2})], [{"type": "function", "function": strict}]) == []
