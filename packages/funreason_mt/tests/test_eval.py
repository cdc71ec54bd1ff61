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


# -- BFCL v4 agentic ------------------------------------------------------------------------------


def test_agentic_memory_scores_match_bfcl_evals_own_runner(tmp_path, aworld_home):
    """A served model (scripted) plays memory_kv and memory_rec_sum through the same client and
    engine as multi-turn; bfcl-eval's eval runner scores our result files identically."""
    from aworld_rl_core.tooluse.bfcl.agentic import load_agentic, reference_replies

    model_dir = tmp_path / "x"
    entries = [
        e
        for c in ("memory_kv", "memory_rec_sum")
        for e in load_agentic(c, limit=2, model_result_dir=model_dir)
    ]
    reference = reference_replies(entries)
    scripts = {}
    for entry in entries:
        turns = reference[entry.id]
        if entry.id.startswith("memory_rec_sum_1-"):  # "thirty-five" is not BFCL's "thirty five"
            turns = [["[memory_retrieve()]", "{'answer': 'thirty-five', 'context': 'memory'}"]]
        if entry.id.startswith("memory_kv_1-"):  # looks, then gives up
            turns = [["[archival_memory_list_keys()]", "{'answer': 'I do not know'}"]]
        scripts[(entry.id.split("_")[1], entry.turns[0][-1]["content"])] = turns

    def key(body):
        backend = "kv" if "archival_memory_key_search" in body["messages"][0]["content"] else "rec"
        first_user = next(m for m in body["messages"] if m["role"] == "user")
        return (backend, first_user["content"])

    with ScriptedLLMServer(scripted_replies(scripts, key=key)) as server:
        result = evaluate(
            tmp_path,
            "agentic-ground-truth",
            "agent=llm",
            "limit=2",
            "categories=memory_kv,memory_rec_sum",
            "llm.provider=openai",
            f"llm.base_url={server.base_url}",
            f"llm.model={server.model}",
            "llm.api_key_env=AWORLD_RL_TEST_NO_KEY",
        )
    metrics = result.metrics
    assert metrics["bfcl/accuracy/memory_kv"] == 0.5
    assert metrics["bfcl/accuracy/memory_rec_sum"] == 0.5
    summary = json.loads((tmp_path / "bfcl" / "scores.json").read_text())
    assert set(summary["categories"]) == {"memory_kv", "memory_rec_sum"}
    ref = BfclReference(tmp_path / "bfcl-root")
    for category, counts in summary["categories"].items():
        path = result.outputs[f"bfcl_{category}_result"]
        assert "agentic/memory/" in str(path)
        assert ref.score_file(path, category)[:2] == (counts["correct"], counts["total"])


def test_agentic_presets_score_the_range(tmp_path, aworld_home):
    """The reference behaviour scores 100% and the no-tools control 0% on the first entries of
    every memory backend (the vector one with the packaged all-MiniLM-L6-v2)."""
    pytest.importorskip("sentence_transformers")
    truth = evaluate(tmp_path / "gt", "agentic-ground-truth", "limit=1")
    assert truth.metrics["bfcl/memory"] == 1.0
    assert {k for k in truth.metrics if k.startswith("bfcl/accuracy/memory")} == {
        "bfcl/accuracy/memory_kv", "bfcl/accuracy/memory_vector", "bfcl/accuracy/memory_rec_sum"
    }  # fmt: skip
    control = evaluate(tmp_path / "none", "agentic-no-tools", "limit=1")
    assert control.metrics["bfcl/memory"] == 0.0


def test_agentic_categories_and_web_search_key(tmp_path, aworld_home, monkeypatch):
    from aworld_rl_core.tooluse.bfcl.agentic_backends import WebSearchKeyError
    from aworld_rl_funreason_mt.recipes.evaluate import categories

    assert categories("agentic") == (
        "web_search_base", "web_search_no_snippet", "memory_kv", "memory_vector", "memory_rec_sum"
    )  # fmt: skip
    assert categories("multi_turn_base,memory") == (
        "multi_turn_base", "memory_kv", "memory_vector", "memory_rec_sum"
    )  # fmt: skip
    with pytest.raises(ValueError, match="memory_kvv"):
        categories("memory_kvv")
    monkeypatch.delenv("SERPAPI_API_KEY", raising=False)
    with pytest.raises(WebSearchKeyError, match="SERPAPI_API_KEY"):
        evaluate(tmp_path / "a", "agentic-no-tools", "categories=web_search")
    recording = tmp_path / "rec.json"
    recording.write_text(json.dumps({"search": {}}))
    result = evaluate(
        tmp_path / "b", "agentic-no-tools", "categories=web_search", "limit=2",
        f"web_search_replay={recording}",
    )  # fmt: skip
    assert result.metrics["bfcl/accuracy/web_search_base"] == 0.0
    assert result.metrics["bfcl/web_search"] == 0.0
