"""funreason_mt.eval through an OpenAI-compatible endpoint (core's scripted server on 127.0.0.1, a
TEST DOUBLE of a model): our verdicts equal bfcl-eval's own eval runner on the result files."""

import json

import pytest

from aworld_rl_core.config import load_config
from aworld_rl_core.llm.scripted_server import ScriptedLLMServer
from aworld_rl_core.registry import get_recipe
from aworld_rl_core.runs import execute
from aworld_rl_core.testing.bfcl_agents import opening_key, scripted_replies
from aworld_rl_core.tooluse.bfcl import BfclEnv, ground_truth_replies, load_category
from aworld_rl_core.tooluse.bfcl.reference import BfclReference


def evaluate(tmp_path, preset, *overrides):
    entry = get_recipe("funreason_mt.eval")
    cfg = load_config(entry.config_cls(), preset=preset, presets=entry.presets, overrides=overrides)
    return execute("funreason_mt.eval", entry.run_fn(), cfg, output_dir=tmp_path, quiet=True)[0]


def wrong(entry):
    """A model that skips the first turn's calls (it answers without acting)."""
    turns = ground_truth_replies(entry)
    return [["I think this is done already."], *turns[1:]]


def test_model_scores_match_bfcl_evals_own_runner(tmp_path, aworld_home):
    entries = load_category("multi_turn_base", limit=3) + load_category(
        "multi_turn_miss_func", limit=3
    )
    scripts = {}
    for n, entry in enumerate(entries):
        key = opening_key(BfclEnv(entry).reset())
        scripts.setdefault(key, wrong(entry) if n % 2 else ground_truth_replies(entry))
    assert len(scripts) == len(entries)
    with ScriptedLLMServer(scripted_replies(scripts)) as server:
        result = evaluate(
            tmp_path,
            "tiny-cpu",
            "entries=bfcl",
            "agent=llm",
            "limit=3",
            "categories=[multi_turn_base, multi_turn_miss_func]",
            "llm.provider=openai",
            f"llm.base_url={server.base_url}",
            f"llm.model={server.model}",
            "llm.api_key_env=AWORLD_RL_TEST_NO_KEY",
        )
    metrics = result.metrics  # entries 1, 3 and 5 fail: one in base, two in miss_func
    assert metrics["bfcl/accuracy/multi_turn_base"] == pytest.approx(2 / 3)
    assert metrics["bfcl/accuracy/multi_turn_miss_func"] == pytest.approx(1 / 3)
    summary = json.loads((tmp_path / "bfcl" / "scores.json").read_text())
    ref = BfclReference(tmp_path / "bfcl-root")
    for category, counts in summary["categories"].items():
        path = result.outputs[f"bfcl_{category}_result"]
        assert ref.score_file(path, category)[:2] == (counts["correct"], counts["total"])
    assert "bfcl evaluate" in summary["command"]


def test_tiny_cpu_preset_ground_truth_and_held_out(tmp_path, aworld_home):
    result = evaluate(tmp_path, "tiny-cpu")
    assert result.metrics["bfcl/accuracy/average"] == 1.0
    assert result.metrics["held_out/accuracy/average"] == 1.0
    lines = (tmp_path / "outcomes.jsonl").read_text().splitlines()
    groups = {json.loads(line)["group"] for line in lines}
    assert groups == {"bfcl", "held_out"}


def test_the_held_out_split_is_stable_and_disjoint():
    from aworld_rl_funreason_mt.data import DEMO_TRAJECTORIES, read_entries
    from aworld_rl_funreason_mt.evaluation import split_entries

    entries = read_entries(DEMO_TRAJECTORIES)
    train, held = split_entries(entries, 0.1)
    assert held and len(train) + len(held) == len(entries)
    assert {e["id"] for e in train}.isdisjoint(e["id"] for e in held)
    _, held_again = split_entries(list(reversed(entries)), 0.1)
    assert [e["id"] for e in held_again] == [e["id"] for e in held]
    many = [{"id": f"e{i}"} for i in range(2000)]
    share = len(split_entries(many, 0.25)[1]) / len(many)
    assert 0.22 < share < 0.28
    with pytest.raises(ValueError, match="held_out"):
        split_entries(entries, 1.0)
