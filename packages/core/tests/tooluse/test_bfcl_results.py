"""BFCL result files: the layout `bfcl evaluate` reads, the registry check, the score reader."""

from __future__ import annotations

import json

import pytest
from bfcl_helpers import entries, reference

from aworld_rl_core.tooluse.bfcl import ground_truth_text
from aworld_rl_core.tooluse.bfcl.results import (
    DEFAULT_MODEL,
    check_model,
    evaluate_command,
    read_scores,
    registry,
    result_path,
    write_results,
)


def test_files_land_where_bfcl_evaluate_looks_sorted_as_bfcl_sorts(tmp_path):
    rows = [
        {"id": "live_simple_10-3-0", "result": "[f(a=1)]", "latency": 0.5},
        {"id": "live_simple_2-1-0", "result": "[f(a=2)]"},
        {"id": "simple_python_10", "result": "[g()]"},
        {"id": "simple_python_9", "result": "[g()]"},
        {"id": "multi_turn_base_3", "result": [["[ls()]", "Done."]]},
    ]
    paths = write_results(tmp_path, DEFAULT_MODEL, rows)
    assert paths == {
        "live_simple": tmp_path / "Qwen_Qwen3-8B/live/BFCL_v4_live_simple_result.json",
        "multi_turn_base": tmp_path
        / "Qwen_Qwen3-8B/multi_turn/BFCL_v4_multi_turn_base_result.json",
        "simple_python": tmp_path / "Qwen_Qwen3-8B/non_live/BFCL_v4_simple_python_result.json",
    }
    lines = [json.loads(x) for x in paths["live_simple"].read_text().splitlines()]
    assert [x["id"] for x in lines] == ["live_simple_2-1-0", "live_simple_10-3-0"]
    assert lines[1] == {"id": "live_simple_10-3-0", "result": "[f(a=1)]", "latency": 0.5}
    ids = [json.loads(x)["id"] for x in paths["simple_python"].read_text().splitlines()]
    assert ids == ["simple_python_9", "simple_python_10"]
    assert result_path(tmp_path, DEFAULT_MODEL, "irrelevance").parent.name == "non_live"
    with pytest.raises(ValueError, match="needs 'id' and 'result'"):
        write_results(tmp_path, DEFAULT_MODEL, [{"id": "simple_python_0"}])


def test_bfcl_evals_runner_scores_the_files(tmp_path):
    rows = [{"id": e.id, "result": ground_truth_text(e)} for e in entries("simple_java")]
    rows[0]["result"] = "I need more information."
    path = write_results(tmp_path, DEFAULT_MODEL, rows)["simple_java"]
    correct, total, failed = reference().score_file(path, "simple_java")
    assert (correct, total) == (96, 100)
    assert failed == {"simple_java_0", "simple_java_35", "simple_java_36", "simple_java_65"}


def test_the_model_name_must_be_a_registered_prompting_model_with_bfcls_decoder():
    assert check_model(DEFAULT_MODEL).handler == "QwenHandler"
    assert len(registry()) == 175
    assert check_model("meta-llama/Llama-3.1-8B-Instruct").default_decoding
    with pytest.raises(ValueError, match="function-calling model"):
        check_model("Qwen/Qwen3-8B-FC")
    with pytest.raises(ValueError, match="OpenAIResponsesHandler"):
        check_model("gpt-4o-2024-11-20")
    with pytest.raises(
        ValueError, match=r"not in bfcl-eval's model registry \(close: Qwen/Qwen3-8B"
    ):
        check_model("Qwen3-8B")
    with pytest.raises(ValueError, match="registry"):
        write_results("unused", "my-checkpoint", [{"id": "simple_python_0", "result": ""}])


def test_scores_are_read_from_bfcls_score_files(tmp_path):
    folder = tmp_path / "Qwen_Qwen3-8B" / "non_live"
    folder.mkdir(parents=True)
    header = {"accuracy": 0.97, "correct_count": 97, "total_count": 100}
    failure = {"id": "simple_java_35", "valid": False}
    (folder / "BFCL_v4_simple_java_score.json").write_text(
        json.dumps(header) + "\n" + json.dumps(failure) + "\n"
    )
    assert read_scores(tmp_path, DEFAULT_MODEL) == {"simple_java": (97, 100)}
    command = evaluate_command(DEFAULT_MODEL, ["simple_java", "live_simple"], "r", "s")
    assert command == [
        "bfcl", "evaluate", "--model", "Qwen/Qwen3-8B", "--test-category",
        "simple_java,live_simple", "--result-dir", "r", "--score-dir", "s", "--partial-eval",
    ]  # fmt: skip


def test_the_leaderboards_data_is_the_pinned_release(monkeypatch):
    from aworld_rl_core.tooluse.bfcl import _install
    from aworld_rl_core.tooluse.bfcl.results import check_leaderboard_data

    check_leaderboard_data()  # 2026.3.23 is installed
    monkeypatch.setattr(_install, "version", lambda: "2025.8.5")
    with pytest.raises(ValueError, match=r"bfcl-eval 2025\.8\.5 is installed"):
        check_leaderboard_data()
