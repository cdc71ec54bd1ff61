"""Loading BFCL categories from the installed bfcl-eval: counts, aliases, docs, errors."""

from __future__ import annotations

import pytest
from bfcl_helpers import entries

from aworld_rl_core.tooluse.bfcl import (
    ALL_CATEGORIES,
    canonical_category,
    entry_from_raw,
    function_docs,
    ground_truth_calls,
    language_of,
    load_category,
    version,
)
from aworld_rl_core.tooluse.bfcl.loader import file_prefix

COUNTS = {
    "simple_python": 400,
    "simple_java": 100,
    "simple_javascript": 50,
    "multiple": 200,
    "parallel": 200,
    "parallel_multiple": 200,
    "live_simple": 258,
    "live_multiple": 1053,
    "live_parallel": 16,
    "live_parallel_multiple": 24,
    "irrelevance": 240,
    "live_irrelevance": 884,
    "multi_turn_base": 200,
    "multi_turn_miss_func": 200,
    "multi_turn_miss_param": 200,
    "multi_turn_long_context": 200,
}


def test_version_and_prefix():
    assert version() == "2026.3.23"
    assert file_prefix() == "BFCL_v4"


def test_category_counts():
    assert {c: len(entries(c)) for c in COUNTS} == COUNTS
    assert [e.ground_truth for e in entries("irrelevance")[:3]] == [None, None, None]


def test_simple_alias_and_first_entry():
    first = load_category("simple", limit=2)
    assert len(first) == 2 and canonical_category("simple") == "simple_python"
    assert canonical_category("java") == "simple_java"
    assert [language_of(c) for c in ("simple_java", "simple_javascript", "live_simple")] == [
        "java",
        "javascript",
        "python",
    ]
    entry = first[0]
    assert (entry.id, entry.category) == ("simple_python_0", "simple_python")
    assert entry.ground_truth == [
        {"calculate_triangle_area": {"base": [10], "height": [5], "unit": ["units", ""]}}
    ]
    # "" marks unit as optional, so the rendered answer leaves it out
    assert [c.to_python() for c in ground_truth_calls(entry)] == [
        "calculate_triangle_area(base=10, height=5)"
    ]


def test_multi_turn_entries_carry_their_docs_and_flags():
    base = entries("multi_turn_base")[0]
    assert base.involved_classes == ["TwitterAPI", "GorillaFileSystem"]
    assert len(base.functions) == 32 and not base.long_context
    assert base.ground_truth[2] == ["sort('final_report.pdf')"]
    miss = entries("multi_turn_miss_func")[0]
    assert len(miss.functions) == 31 and [d["name"] for d in miss.missed_functions[3]] == ["sort"]
    # turn 2 asks for the held-out sort (the model must abstain); turn 3 reveals it, no message
    assert miss.ground_truth[2] == [] and miss.turns[3] == []
    assert miss.ground_truth[3] == ["sort('final_report.pdf')"]
    assert entries("multi_turn_long_context")[0].long_context
    assert '"workspace"' in base.initial_config_json["GorillaFileSystem"]


def test_function_docs_per_class_in_the_order_asked():
    docs = function_docs(["TravelAPI", "GorillaFileSystem"])
    assert list(docs) == ["TravelAPI", "GorillaFileSystem"]
    assert [len(v) for v in docs.values()] == [18, 18]
    assert docs["GorillaFileSystem"][0]["name"] == "cat"
    assert docs["GorillaFileSystem"] == entries("multi_turn_base")[0].functions[-18:]
    with pytest.raises(ValueError, match="unknown API classes"):
        function_docs(["NoSuchAPI"])


def test_entry_from_raw_matches_the_loader():
    miss = entries("multi_turn_miss_func")[0]
    raw = {k: v for k, v in miss.raw.items() if k != "function"}
    again = entry_from_raw(raw, ground_truth=miss.ground_truth, category="multi_turn_miss_func")
    assert again.functions == miss.functions and again.missed_functions == miss.missed_functions
    base = entries("multi_turn_base")[0]
    docs = base.functions[:3]
    given = entry_from_raw({**base.raw, "function": docs, "ground_truth": [["ls()"]]})
    assert given.functions == docs and given.missed_functions == {}
    assert given.ground_truth == [["ls()"]] and given.category == "multi_turn_base"
    with pytest.raises(ValueError, match=r"lacks the fields \['initial_config'\]"):
        entry_from_raw({"id": "x", "question": [], "involved_classes": []})
    with pytest.raises(ValueError, match="multi-turn"):
        entry_from_raw(raw, category="simple_python")


def test_unknown_category_names_the_choices():
    with pytest.raises(ValueError, match="unknown BFCL category 'web_search'") as info:
        load_category("web_search")
    assert all(name in str(info.value) for name in ALL_CATEGORIES)
