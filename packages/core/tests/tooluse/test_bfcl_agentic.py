"""BFCL v4's agentic categories: loading, memory episodes with bfcl-eval's backends, the answer
judge and the overall score, each checked against bfcl-eval's own code."""

from __future__ import annotations

import asyncio
import csv
import json
import random
import sys
import types

import pytest
from bfcl_helpers import reference

from aworld_rl_core.tooluse.bfcl import BfclEnv
from aworld_rl_core.tooluse.bfcl.agentic import (
    answer_matches,
    judge_agentic,
    load_agentic,
    phases,
    reference_replies,
)
from aworld_rl_core.tooluse.bfcl.agentic_backends import (
    AGENTIC_CATEGORIES,
    RecordedWebSearchAPI,
    WebSearchKeyError,
    agentic_class,
    check_web_search,
)
from aworld_rl_core.tooluse.bfcl.leaderboard import aggregate
from aworld_rl_core.tooluse.bfcl.results import group_of


def _play(entry, replies):
    from aworld_rl_core.engine import play
    from aworld_rl_core.llm.wrappers import ScriptClient

    env = BfclEnv(entry)
    episode = asyncio.run(play(ScriptClient(replies), env))
    return dict(episode.info) if "result" in episode.info else env.final_info()


def test_memory_entries_follow_bfcl_ids_order_and_prerequisites(tmp_path):
    entries = load_agentic("memory_kv", model_result_dir=tmp_path)
    questions = [e for e in entries if e.category == "memory_kv"]
    prereqs = [e for e in entries if e.category == "memory_kv_prereq"]
    assert len(questions) == 155 and len(prereqs) == 10 + 7 + 5 + 5 + 10
    assert questions[0].id == "memory_kv_0-customer-0"
    assert prereqs[0].id.startswith("memory_kv_prereq_") and prereqs[0].id.endswith("-0")
    assert questions[0].involved_classes == ["MemoryAPI_kv"]
    # the answer-format prompt opens every question, never a prerequisite conversation
    assert questions[0].turns[0][0]["role"] == "system"
    assert "'answer'" in questions[0].turns[0][0]["content"]
    assert prereqs[0].turns[0][0]["role"] == "user"
    waves = phases(entries)
    assert len(waves) == 11 and waves[-1] == questions  # the longest chain has 10 conversations
    assert sorted(len(w) for w in waves[:-1])[0] == 2  # only student and customer have 10
    # the first 2 questions need only their scenario's (customer) chain
    assert {
        e.raw["scenario"] for e in load_agentic("memory_kv", limit=2, model_result_dir=tmp_path)
    } == {"customer"}


def test_result_folders_are_bfclss():
    assert group_of("memory_vector") == "agentic/memory/vector"
    assert group_of("memory_rec_sum_prereq") == "agentic/memory/rec_sum"
    assert group_of("web_search_no_snippet") == "agentic"
    assert set(AGENTIC_CATEGORIES) == {
        "memory_kv", "memory_vector", "memory_rec_sum", "web_search_base", "web_search_no_snippet"
    }  # fmt: skip


def test_answer_matching_equals_bfcls_agentic_checker():
    reference()  # BFCL_PROJECT_ROOT under a temporary folder before bfcl-eval's modules load
    from bfcl_eval.eval_checker.agentic_eval.agentic_checker import agentic_checker

    cases = [
        ("{'answer': 'Michael', 'context': 'x'}", ["Michael"]),
        ("{'answer': 'Mich', 'context': 'x'}", ["Michael"]),
        ("I am thirty-five", ["35", "thirty five"]),
        ("April 1, 2024", ["April 1 2024"]),
        ("The value is 3.5%", ["35%"]),
        ("Seattle,WA", ["seattle"]),
        ("the answer is (B)", ["b"]),
        ("", ["x"]),
        ("no", ["No"]),
    ]
    for response, possible in cases:
        assert answer_matches(response, possible) == agentic_checker(response, possible)["valid"]


def test_judge_takes_the_last_reply_that_is_not_a_call(tmp_path):
    entries = load_agentic("memory_rec_sum", limit=1, model_result_dir=tmp_path)
    (entry,) = [e for e in entries if not e.category.endswith("prereq")]
    good = judge_agentic(entry, [["[memory_retrieve()]", "{'answer': 'Michael'}"]])
    assert good.valid and good.answer == "{'answer': 'Michael'}"
    # the last non-call reply counts, even with a call after it (as BFCL's runner reads it)
    assert judge_agentic(entry, [["Michael?", "[memory_retrieve()]"]]).valid
    assert judge_agentic(entry, [["[memory_retrieve()]"]]).error_type == "agentic:no_last_message"
    assert judge_agentic(entry, [["Bob"]]).error_type == "agentic:answer_not_found"
    assert judge_agentic(entry, [["Michael"], ["Michael"]]).error_type == "agentic:inference_error"


@pytest.mark.parametrize("category", ["memory_kv", "memory_rec_sum"])
def test_reference_behaviour_stores_recalls_and_answers(tmp_path, category):
    pytest.importorskip("rank_bm25") if category == "memory_kv" else None
    model_dir = tmp_path / "Qwen_Qwen3-8B"
    entries = load_agentic(category, limit=3, model_result_dir=model_dir)
    replies = reference_replies(entries)
    verdicts = []
    for wave in phases(entries):
        for entry in wave:
            info = _play(entry, [r for turn in replies[entry.id] for r in turn])
            if not entry.category.endswith("_prereq"):
                verdicts.append(judge_agentic(entry, info["result"]))
    assert [v.valid for v in verdicts] == [True, True, True]
    backend = category.removeprefix("memory_")
    final = model_dir / "agentic" / "memory" / backend / "memory_snapshot" / "customer_final.json"
    stored = json.loads(final.read_text())
    text = json.dumps(stored)
    # the three questions' sources (BFCL's possible answers quote them) were written to memory
    assert "My name is Michael" in text and "I'm 35 years old, live in Seattle" in text


def test_a_question_sees_the_memory_the_prerequisites_wrote(tmp_path):
    pytest.importorskip("rank_bm25")
    model_dir = tmp_path / "m"
    entries = load_agentic("memory_kv", limit=1, model_result_dir=model_dir)
    replies = reference_replies(entries)
    for wave in phases(entries)[:-1]:
        for entry in wave:
            _play(entry, [r for turn in replies[entry.id] for r in turn])
    question = phases(entries)[-1][0]
    env = BfclEnv(question)
    opening = env.reset()
    system = opening[0]["content"]
    # BFCL's prompting prompt, then the memory instruction, then the answer format
    assert system.index("archival_memory_key_search") < system.index("customer support")
    assert system.index("customer support") < system.index("'answer'")
    step = env.step("[archival_memory_key_search(query='first name')]")
    assert "fact_0" in step.observation[0]["content"]
    step = env.step("[archival_memory_retrieve(key='fact_0')]")
    assert "My name is Michael" in step.observation[0]["content"]
    env.close()


def test_recorded_web_search_shapes_results_as_bfcl_does():
    recording = {
        "search": {"tea": [{"title": "T", "link": "https://a.b/t", "snippet": "S"}] * 3},
        "pages": {"https://a.b/t": {"raw": "<p>x</p>", "markdown": "x"}},
    }
    api = RecordedWebSearchAPI(recording)
    api._load_scenario({"show_snippet": True})
    assert (
        api.search_engine_query("tea", max_results=2)
        == [{"title": "T", "href": "https://a.b/t", "body": "S"}] * 2
    )
    api._load_scenario({"show_snippet": False})
    assert api.search_engine_query("tea")[0] == {"title": "T", "href": "https://a.b/t"}
    assert "error" in api.search_engine_query("coffee")
    assert api.fetch_url_content("https://a.b/t", mode="markdown") == {"content": "x"}
    assert "no recorded response" in api.fetch_url_content("https://c.d")["error"]


def test_web_search_episode_with_a_recording(tmp_path):
    recording = tmp_path / "rec.json"
    recording.write_text(json.dumps({"search": {"richest tea": [
        {"title": "Forbes", "link": "https://f.com", "snippet": "Jensen Huang"}]}}))  # fmt: skip
    (entry,) = load_agentic("web_search_no_snippet", limit=1, web_search_replay=recording)
    assert entry.id == "web_search_no_snippet_0"
    info = _play(entry, ["[search_engine_query(keywords='richest tea')]", "I do not know"])
    assert info["result"] == [["[search_engine_query(keywords='richest tea')]", "I do not know"]]
    env = BfclEnv(entry)
    env.reset()
    observation = env.step("[search_engine_query(keywords='richest tea')]").observation
    assert "Forbes" in observation[0]["content"] and "Jensen" not in observation[0]["content"]
    env.close()


def test_web_search_without_a_key_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.delenv("SERPAPI_API_KEY", raising=False)
    with pytest.raises(WebSearchKeyError, match="SERPAPI_API_KEY"):
        check_web_search()
    with pytest.raises(FileNotFoundError, match="recording"):
        check_web_search(tmp_path / "missing.json")
    (entry,) = load_agentic("web_search_base", limit=1)
    env = BfclEnv(entry)
    with pytest.raises(WebSearchKeyError, match="SERPAPI_API_KEY"):
        env.reset()


# -- the overall score, against bfcl-eval's own leaderboard code -----------------------------------

_CATEGORIES = (
    "simple_python", "simple_java", "simple_javascript", "multiple", "parallel",
    "parallel_multiple", "live_simple", "live_multiple", "live_parallel",
    "live_parallel_multiple", "irrelevance", "live_irrelevance", "live_relevance",
    "multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param",
    "multi_turn_long_context", *AGENTIC_CATEGORIES,
)  # fmt: skip


def _bfcl_overall(counts, tmp_path) -> tuple[float, dict[str, str]]:
    """bfcl-eval's ``generate_leaderboard_csv`` on the same counts (its registry stubbed)."""
    reference()
    pytest.importorskip("pandas")
    name = "bfcl_eval.constants.model_config"
    config = types.SimpleNamespace(
        display_name="m", url="u", org="o", license="l", input_price=None, output_price=None
    )
    stub = types.ModuleType(name)
    stub.MODEL_CONFIG_MAPPING = {"Qwen/Qwen3-8B": config}  # type: ignore[attr-defined]
    saved = sys.modules.get(name)
    sys.modules[name] = stub
    try:
        helper = __import__("bfcl_eval.eval_checker.eval_runner_helper", fromlist=["x"])
        scores = {c: {"accuracy": k / n, "total_count": n} for c, (k, n) in counts.items()}
        table = {"Qwen_Qwen3-8B": scores}
        helper.generate_leaderboard_csv(table, tmp_path)
    finally:
        sys.modules.pop("bfcl_eval.eval_checker.eval_runner_helper", None)
        if saved is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = saved
    with (tmp_path / "data_overall.csv").open() as handle:
        row = next(csv.DictReader(handle))
    with (tmp_path / "data_agentic.csv").open() as handle:
        agentic = next(csv.DictReader(handle))
    return float(row["Overall Acc"].rstrip("%")), agentic


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_overall_is_bfcl_evals_on_every_category(tmp_path, seed):
    rng = random.Random(seed)
    sizes = {c: rng.randint(5, 300) for c in _CATEGORIES}
    counts = {c: (rng.randint(0, n), n) for c, n in sizes.items()}
    theirs, agentic = _bfcl_overall(counts, tmp_path)
    ours = aggregate(counts, missing="zero")
    assert f"{100 * ours['overall']:.2f}" == f"{theirs:.2f}"
    assert f"{100 * ours['agentic']:.2f}%" == agentic["Agentic Overall Acc"]
    assert f"{100 * ours['memory']:.2f}%" == agentic["Memory Summary"]


def test_overall_with_only_the_agentic_categories_run(tmp_path):
    counts = {"memory_kv": (3, 10), "memory_vector": (5, 10), "web_search_base": (1, 4)}
    theirs, _ = _bfcl_overall(counts, tmp_path)
    ours = aggregate(counts, missing="zero")
    # memory (0.3 + 0.5 + 0) / 3, web search (0.25 + 0) / 2, agentic their mean, 40% of overall
    assert ours["agentic"] == pytest.approx(((0.8 / 3) + 0.125) / 2)
    assert ours["overall"] == pytest.approx(0.4 * ours["agentic"])
    assert f"{100 * ours['overall']:.2f}" == f"{theirs:.2f}"
    skip = aggregate(counts)
    assert skip["memory"] == pytest.approx(0.4) and skip["agentic"] == pytest.approx(0.325)


# -- entries and opening messages, against bfcl-eval's own loading and prompting -----------------


@pytest.mark.parametrize("category", ["memory_kv", "memory_rec_sum", "web_search_no_snippet"])
def test_entries_and_openings_are_what_bfcls_inference_sends(category, tmp_path):
    import copy

    reference()
    from bfcl_eval.model_handler import utils
    from bfcl_eval.utils import load_dataset_entry, populate_initial_settings_for_memory_test_cases

    theirs = load_dataset_entry(category, include_prereq=True)
    recording = tmp_path / "rec.json"
    recording.write_text("{}")
    model_dir = tmp_path / "model"
    ours = load_agentic(category, model_result_dir=model_dir, web_search_replay=recording)
    assert sorted(e.id for e in ours) == sorted(e["id"] for e in theirs)
    questions = [e["id"] for e in theirs if "prereq" not in e["id"]]
    assert [e.id for e in ours if not e.category.endswith("_prereq")] == questions
    by_id = {e["id"]: e for e in theirs}
    # the first conversation of each chain and the first questions (empty memory: nothing ran)
    sample = [e for e in ours if e.id.endswith("-0")][:8] + ours[-3:]
    if category.startswith("memory"):
        populate_initial_settings_for_memory_test_cases(theirs, tmp_path / "theirs")
    for entry in sample:
        raw = copy.deepcopy(by_id[entry.id])
        question = raw["question"]
        if category.startswith("memory"):
            instance = agentic_class(raw["involved_classes"][0])()
            instance._load_scenario(raw["initial_config"][raw["involved_classes"][0]])
            question = utils.add_memory_instruction_system_prompt(
                question, category, raw["scenario"], instance
            )
        expected = utils.system_prompt_pre_processing_chat_model(
            question[0], raw["function"], raw["id"]
        )
        env = BfclEnv(entry)
        assert env.reset() == expected, entry.id
        env.close()
