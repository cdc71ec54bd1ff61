"""The crash-and-fault harness itself (``aworld_rl_core.testing.crash``): what it compares and
finds, by hand-made run directories; ``core.grpo`` killed and resumed for real (slow)."""

import json
import random
import subprocess
import sys

import pytest

from aworld_rl_core.testing.crash import (
    CrashCase,
    _kill_on_appearance,
    check_kill_resume,
    compare_runs,
    fuzz_for,
    without_timing,
)


def _run(directory, rows, outputs, status="completed", validation=None):
    directory.mkdir(parents=True)
    (directory / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (directory / "status.json").write_text(
        json.dumps({"status": status, "outputs": {k: k for k in outputs}})
    )
    for name, text in outputs.items():
        (directory / name).write_text(text.replace("<run>", str(directory)))
    if validation is not None:
        (directory / "checkpoints").mkdir()
        (directory / "checkpoints" / "validation.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in validation)
        )
    return directory


ROWS = [{"step": 1, "loss": 0.5, "time": 1.0, "step_time": 3.0}, {"step": 2, "loss": 0.25}]


def test_equal_runs_differ_only_in_timing_and_their_own_path(tmp_path):
    a = _run(tmp_path / "a", ROWS, {"out.jsonl": '{"x": 1}\n{"x": 2, "seconds": 4}\n'})
    later = [{"resume_found_checkpoint": 0.0}, {**ROWS[0], "time": 9.0, "step_time": 7.5}, ROWS[1]]
    b = _run(tmp_path / "b", later, {"out.jsonl": '{"x": 2, "seconds": 1}\n{"x": 1}\n'})
    assert compare_runs(a, b) == []  # JSON Lines compared as a multiset of rows
    paths = {"paths.txt": "model at <run>/final\n"}  # each run's own directory in the text
    assert compare_runs(_run(tmp_path / "c", ROWS, paths), _run(tmp_path / "d", ROWS, paths)) == []


def test_what_the_harness_finds(tmp_path):
    a = _run(
        tmp_path / "a", ROWS, {"out.jsonl": '{"x": 1}\n'}, validation=[{"step": 2, "val/r": 0.2}]
    )
    twice = [ROWS[0], ROWS[0], ROWS[1]]  # issue 29 item 8: a step logged twice after a resume
    b = _run(
        tmp_path / "b",
        twice,
        {"out.jsonl": '{"x": 1}\n{"x": 1}\n'},
        status="running",
        validation=[{"step": 2, "val/r": 0.29}],  # item 10: another validation after resume
    )
    found = compare_runs(a, b)
    assert "status.json says 'running' after the resume" in found
    assert "metrics.jsonl: step(s) [1] logged more than once after the resume" in found
    assert "metrics.jsonl: 2 rows uninterrupted, 3 after kill and resume" in found
    assert "checkpoints/validation.jsonl: row 0 differs in ['val/r']" in found
    assert "output 'out.jsonl': 0 row(s) only uninterrupted, 1 only after resume" in found


def test_a_step_with_a_training_and_an_evaluation_row_is_no_repeat(tmp_path):
    """funreason_mt.rl logs a training row and an eval row at step 1 in every run: the harness
    called that a repeat after the resume (a false finding); a third row would be one."""
    rows = [{"step": 1, "loss": 0.0}, {"step": 1, "eval_loss": 0.0}]
    a = _run(tmp_path / "a", rows, {})
    assert compare_runs(a, _run(tmp_path / "b", rows, {})) == []
    found = compare_runs(a, _run(tmp_path / "c", [rows[0], *rows], {}))
    assert "metrics.jsonl: step(s) [1] logged more than once after the resume" in found


def test_json_lines_under_a_json_name_compare_as_rows(tmp_path):
    """BFCL's ``*_result.json`` files are JSON Lines: compared as rows without timing keys."""
    lines = {
        "r.json": '{"id": "a", "result": [1], "latency": [[1.5]]}\n{"id": "b", "result": []}\n'
    }
    later = {
        "r.json": '{"id": "b", "result": []}\n{"id": "a", "result": [1], "latency": [[9.0]]}\n'
    }
    a = _run(tmp_path / "a", ROWS, lines)
    assert compare_runs(a, _run(tmp_path / "b", ROWS, later)) == []
    other = {"r.json": '{"id": "a", "result": [2]}\n{"id": "b", "result": []}\n'}
    assert compare_runs(a, _run(tmp_path / "c", ROWS, other)) == [
        "output 'r.json': JSON Lines content differs"
    ]


def test_a_cases_own_wall_time_keys_are_not_compared(tmp_path):
    a = _run(tmp_path / "a", [{"x/seconds_per_question": 1.0, "x/em": 0.5}], {})
    b = _run(tmp_path / "b", [{"x/seconds_per_question": 2.0, "x/em": 0.5}], {})
    assert compare_runs(a, b) == ["metrics.jsonl: row 0 differs in ['x/seconds_per_question']"]
    assert compare_runs(a, b, timing=("seconds_per_question",)) == []


def test_timing_keys_are_dropped_recursively():
    row = {
        "step": 1,
        "time": 2,
        "encode_s": 1.0,
        "train_runtime": 3,
        "samples_per_second": 4,
        "nested": {"latency_ms": 5, "value": 6},
        "tokens_per_s": 7,
        "reward": 8,
        "latency": [[45.1], [42.2]],  # BFCL result files: seconds per turn (envtuning.eval)
        "entries_per_s/simple_python": 9,  # a rate per category (core.bfcl-check)
        "bfcl_eval_entries_per_s/irrelevance": 10,
        "train/step_time": 11,
        "llm_calls": 3,  # the calls this process made: fewer after a resume
        "llm_errors": 0,
        "skipped_done": 2,
    }
    assert without_timing(row) == {"step": 1, "nested": {"value": 6}, "reward": 8}


def test_kill_when_lands_while_the_matching_path_exists(tmp_path):
    """``CrashCase.kill_when``: the kill lands as soon as a new match of the glob appears (a
    checkpoint's staging folder: mid-save), not at a time; an old match does not count."""
    (tmp_path / ".staging" / "checkpoint-1").mkdir(parents=True)  # there before: no trigger
    saver = (
        "import os, time\n"
        "time.sleep(0.3)\n"
        "os.makedirs('.staging/checkpoint-2')\n"
        "time.sleep(0.5)  # the save's writes\n"
        "os.rename('.staging/checkpoint-2', 'checkpoint-2')\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", saver], cwd=tmp_path, start_new_session=True)
    case = CrashCase("none", kill_when=(".staging/checkpoint-*",), timeout_s=60)
    assert _kill_on_appearance(proc, tmp_path, case) == ".staging/checkpoint-2"
    assert proc.returncode == -9
    assert (tmp_path / ".staging" / "checkpoint-2").is_dir()  # killed mid-save
    assert not (tmp_path / "checkpoint-2").exists()
    done = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    assert _kill_on_appearance(done, tmp_path, case) is None  # ended without a new match


def test_fuzz_runs_on_a_cpu_time_budget_and_collects_escapes():
    def cases():
        rng = random.Random(0)
        while True:
            yield rng.randrange(100)

    def target(n):
        if n == 7:
            raise ValueError("seven")

    ran, failures = fuzz_for(cases(), target, cpu_seconds=0.05)
    assert ran > 100  # stopped by the budget, not by the generator
    assert failures and all(case == 7 and str(exc) == "seven" for case, exc in failures)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_grpo_killed_at_a_random_point_resumes_to_the_same_metrics(tmp_path, seed):
    case = CrashCase(
        "core.grpo",
        overrides=("trainer.save_steps=1",),
        env={"AWORLD_RL_HOME": str(tmp_path / "home")},
    )
    report = check_kill_resume(case, tmp_path / "runs", seed)
    assert report.killed and report.differences == [], report.summary()


def test_bfcl_check_resumed_after_its_rows_logs_each_category_once(tmp_path, monkeypatch):
    """The harness on ``core.bfcl-check`` (tiny-cpu): killed after its per-category rows but
    before the run was marked completed, the resume replayed every category again and logged
    its row again (14 rows for 7). The kill is put exactly there: a finished run whose status
    is set back to running, then ``--resume``."""
    from aworld_rl_core import cli

    monkeypatch.setenv("AWORLD_RL_HOME", str(tmp_path / "home"))
    out = tmp_path / "run"
    base = ["core.bfcl-check", "--output-dir", str(out)]
    assert cli.main([*base, "--preset", "tiny-cpu", "--quiet"]) == 0
    first = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    status = json.loads((out / "status.json").read_text())
    (out / "status.json").write_text(json.dumps({**status, "status": "running"}))
    assert cli.main([*base, "--resume", "--quiet"]) == 0
    again = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in again] == [r["step"] for r in first] == list(range(len(first)))
    assert len(first) >= 2


def test_bfcl_check_killed_at_a_random_point_resumes_to_the_same_rows(tmp_path):
    """Default CI: about 5 CPU-seconds for the three runs."""
    case = CrashCase("core.bfcl-check", env={"AWORLD_RL_HOME": str(tmp_path / "home")})
    report = check_kill_resume(case, tmp_path / "runs", 0)
    assert report.killed and report.differences == [], report.summary()
