"""A user's own API class, registered through the plugin hook, plays and is judged like BFCL's."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "support"))

pytest.importorskip("bfcl_eval")


@pytest.fixture
def counter_registry():
    from counter_api import CounterPlugin

    from aworld_rl_core.registry import build_registry, use_registry

    with use_registry(build_registry([("counter", CounterPlugin())], entry_points=False)) as reg:
        yield reg


def test_a_registered_class_plays_and_is_judged(counter_registry):
    from aworld_rl_core.tooluse.bfcl import entry_from_raw, function_docs, judge_multi_turn
    from aworld_rl_core.tooluse.bfcl.apis import api_class

    assert "counter.CounterAPI" in counter_registry.entries["tool_apis"]
    assert api_class("counter.CounterAPI").__name__ == "CounterAPI"
    docs = function_docs(["counter.CounterAPI", "MathAPI"])
    assert [d["name"] for d in docs["counter.CounterAPI"]] == [
        "counter_login",
        "bump",
        "read_count",
    ]
    raw = {
        "id": "multi_turn_base_counter",
        "question": [[{"role": "user", "content": "bump ada twice"}]],
        "initial_config": {"counter.CounterAPI": {"counts": {"ada": 2}}},
        "involved_classes": ["counter.CounterAPI"],
    }
    truth = [["counter_login(name='ada')", "bump(by=2)"]]
    entry = entry_from_raw(raw, ground_truth=truth)
    assert judge_multi_turn(entry, truth).valid
    wrong = judge_multi_turn(entry, [["counter_login(name='ada')", "bump(by=1)"]])
    assert not wrong.valid and wrong.error_type == "multi_turn:instance_state_mismatch"


def test_unknown_and_bad_registrations_are_named(counter_registry):
    from aworld_rl_core.tooluse.bfcl.apis import api_class

    with pytest.raises(ValueError, match="register_tool_apis"):
        api_class("NoSuchAPI")
