"""``funreason.eval``: BFCL ground truth rendered as FunReason replies scores 100%; the tiny-cpu
preset runs a tiny random model end to end."""

from __future__ import annotations

import json

import pytest

from aworld_rl_core.config import load_config
from aworld_rl_core.runs import execute
from aworld_rl_funreason.recipes.evaluate import CATEGORIES, EvalConfig, run

PRESETS = "aworld_rl_funreason:configs/eval"
# entries whose BFCL ground truth no reply can satisfy: empty allowed lists, a parameter missing
# from the doc or misspelt (live); Java arrays BFCL reads verbatim or as strings (see core's tests)
UNSATISFIABLE = {
    "live_simple_106-63-0",
    "live_simple_112-68-0",
    "live_multiple_862-181-3",
    "live_multiple_964-207-0",
    "simple_java_35",
    "simple_java_36",
    "simple_java_65",
}


@pytest.fixture(scope="module")
def sizes():
    from aworld_rl_core.tooluse.bfcl import load_category

    return {c: len(load_category(c)) for c in CATEGORIES}


@pytest.fixture(autouse=True)
def _bfcl_root(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("BFCL_PROJECT_ROOT", str(tmp_path_factory.mktemp("bfcl")))


def test_presets_load():
    for preset in ("tiny-cpu", "paper", "ground-truth", "bfcl"):
        load_config(EvalConfig, preset=preset, presets=PRESETS)
    assert load_config(EvalConfig, preset="paper", presets=PRESETS).protocol == "funreason"


def test_ground_truth_scores_what_bfcl_evals_runner_scores(tmp_path, sizes):
    from aworld_rl_core.tooluse.bfcl.reference import BfclReference

    cfg = load_config(EvalConfig, preset="ground-truth", presets=PRESETS)
    result, _ = execute("funreason.eval", run, cfg, output_dir=tmp_path / "run", quiet=True)
    m = result.metrics
    rows = [json.loads(x) for x in (tmp_path / "run/outputs.jsonl").read_text().splitlines()]
    assert len(rows) == sum(sizes.values())
    assert {r["id"] for r in rows if not r["valid"]} == UNSATISFIABLE
    assert all(r["answer"] == r["output"] for r in rows)  # protocol bfcl: judged as written
    for cat in ("simple_python", "simple_javascript", "multiple", "parallel", "irrelevance"):
        assert m[f"acc/{cat}"] == 1.0
    assert m["acc/simple_java"] == 0.97
    assert m["acc/simple"] == pytest.approx((1 + 0.97 + 1) / 3)
    assert m["acc/non_live"] == pytest.approx((m["acc/simple"] + 3) / 4)
    assert m["acc/live"] == pytest.approx((1351 - 4) / 1351)
    assert m["acc/overall_funreason"] == pytest.approx((m["acc/non_live"] + m["acc/live"]) / 2)
    assert m["acc/overall_bfcl"] == pytest.approx((m["acc/non_live"] + m["acc/live"] + 1) / 3)
    summary = json.loads((tmp_path / "run/bfcl/scores.json").read_text())
    ref = BfclReference(tmp_path / "bfcl-root")
    for category, counts in summary["categories"].items():
        path = result.outputs[f"bfcl_{category}_result"]
        ours = (counts["correct"], counts["total"])
        assert ref.score_file(path, category)[:2] == ours, category
    assert summary["categories"]["live_relevance"]["correct"] == sizes["live_relevance"]
    assert set(summary["categories"]) == set(sizes)
    report = (tmp_path / "run/report.md").read_text()
    assert "## BFCL single-turn (bfcl protocol)" in report and "FunReason overall" in report


def test_funreason_protocol_strips_the_reasoning(tmp_path):
    overrides = ["protocol=funreason", "limit=3", "categories=[simple_java,live_simple]"]
    cfg = load_config(EvalConfig, preset="ground-truth", presets=PRESETS, overrides=overrides)
    result, _ = execute("funreason.eval", run, cfg, output_dir=tmp_path, quiet=True)
    rows = [json.loads(x) for x in (tmp_path / "outputs.jsonl").read_text().splitlines()]
    assert all(r["output"].startswith("<think>") and r["answer"].startswith("[") for r in rows)
    assert result.metrics["acc/simple_java"] == 1.0 and result.metrics["acc/live_simple"] == 1.0
    written = json.loads(result.outputs["bfcl_simple_java_result"].read_text().splitlines()[0])
    assert written["result"] == rows[0]["answer"]  # the judged text is what BFCL scores


def test_bfcl_protocol_is_one_greedy_reply(tmp_path):
    for i, overrides in enumerate((["generator.temperature=0.7"], ["num_samples=3"])):
        cfg = load_config(EvalConfig, overrides=overrides)
        with pytest.raises(ValueError, match="protocol=bfcl takes one greedy reply"):
            execute("funreason.eval", run, cfg, output_dir=tmp_path / str(i), quiet=True)


def test_tiny_cpu_preset_runs_a_local_model(tmp_path, monkeypatch):
    monkeypatch.setenv("AWORLD_RL_HOME", str(tmp_path / "home"))
    cfg = load_config(EvalConfig, preset="tiny-cpu", presets=PRESETS)
    result, _ = execute("funreason.eval", run, cfg, output_dir=tmp_path / "run", quiet=True)
    rows = [json.loads(x) for x in (tmp_path / "run/outputs.jsonl").read_text().splitlines()]
    assert sorted(r["id"] for r in rows) == ["multiple_0", "simple_java_0", "simple_python_0"]
    for r in rows:
        assert r["answer"] == r["output"]  # protocol bfcl: judged as written
        assert result.metrics[f"acc/{r['category']}"] == float(r["valid"])
