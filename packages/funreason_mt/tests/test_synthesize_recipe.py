"""funreason_mt.synthesize --preset demo: replayable trajectories, exports, and a real kill -9."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from aworld_rl_core.config import load_config
from aworld_rl_core.registry import get_recipe
from aworld_rl_core.runs import execute
from aworld_rl_funreason_mt.data import read_entries, read_records
from aworld_rl_funreason_mt.trajectory import Trajectory, replay

OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def demo(tmp_path, *overrides, resume=False):
    entry = get_recipe("funreason_mt.synthesize")
    cfg = load_config(entry.config_cls(), preset="demo", presets=entry.presets, overrides=overrides)
    return execute(
        "funreason_mt.synthesize",
        entry.run_fn(),
        cfg,
        output_dir=tmp_path,
        quiet=True,
        resume=resume,
    )


def test_demo_preset_writes_replayable_trajectories(tmp_path, aworld_home):
    from aworld_rl_core.tooluse.bfcl import entry_from_raw, judge_multi_turn

    result, run = demo(tmp_path / "run", "records=6")
    assert result.metrics["attempted"] == 6.0 and result.metrics["kept"] >= 3
    lines = (run.dir / "trajectories.jsonl").read_text().splitlines()
    assert len(lines) == result.metrics["kept"]
    for line in lines:
        entry = Trajectory.from_dict(json.loads(line)).bfcl_entry()
        assert replay(entry)  # a fresh episode gives the recorded results
        assert judge_multi_turn(entry_from_raw(entry), entry["ground_truth"]).valid
    assert len(read_entries(str(run.dir))) == len(lines) == len(read_records(str(run.dir)))
    assert len(read_entries(str(run.dir / "synthesis.jsonl"))) == len(lines)
    for name in ("records", "split", "sharegpt", "verl", "bfcl"):
        assert result.outputs[name].exists()
    report = (run.dir / "report.md").read_text()
    assert "PIPELINE DEMO" in report and "| round1/reason |" in report


def lines_of(path):
    return (
        [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []
    )


def test_killed_run_resumes_with_nothing_lost_or_duplicated(tmp_path, aworld_home):
    args = [
        "--preset",
        "demo",
        "records=5",
        "concurrency=1",
        "synthesis.rounds=1",
        "demo.latency_s=0.15",
    ]
    run_dir = tmp_path / "killed"
    cmd = [
        sys.executable,
        "-m",
        "aworld_rl_core.cli",
        "funreason_mt.synthesize",
        *args,
        "--output-dir",
        str(run_dir),
    ]
    env = {**os.environ, **OFFLINE, "AWORLD_RL_HOME": str(aworld_home)}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    path = run_dir / "synthesis.jsonl"
    deadline = time.monotonic() + 240
    while len(lines_of(path)) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = [r["key"] for r in lines_of(path)]
    assert 2 <= len(done_before) < 5

    again = subprocess.run([*cmd, "--resume"], env=env, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr[-2000:]
    records = lines_of(path)
    keys = [r["key"] for r in records]
    assert sorted(keys) == [f"trajectory-{i:06d}" for i in range(5)]  # none lost, none twice
    assert keys[: len(done_before)] == done_before  # finished records were not redone
    metrics = lines_of(run_dir / "metrics.jsonl")
    assert metrics[-1]["skipped_done"] == len(done_before)

    # the same run without a kill gives the same trajectories
    clean, _ = demo(tmp_path / "clean", "records=5", "concurrency=1", "synthesis.rounds=1")
    by_key = {r["key"]: r["item"] for r in records}
    clean_by_key = {r["key"]: r["item"] for r in lines_of(tmp_path / "clean" / "synthesis.jsonl")}
    assert by_key == clean_by_key
    assert (run_dir / "trajectories.jsonl").read_text() and clean.metrics["kept"] > 0


@pytest.mark.parametrize("bad", ["records=0", "synthesis.k_max=0", "guard.max_overlap=2"])
def test_bad_settings_are_named(bad):
    from aworld_rl_core.errors import ConfigError

    entry = get_recipe("funreason_mt.synthesize")
    with pytest.raises(ConfigError, match=bad.split("=")[0]):
        load_config(entry.config_cls(), preset="demo", presets=entry.presets, overrides=[bad])


def test_packaged_demo_trajectories_still_replay():
    """The data the sft/rl tiny-cpu presets train on: every entry replays and is judged valid."""
    from aworld_rl_funreason_mt.data import DEMO_TRAJECTORIES

    entries = read_entries(DEMO_TRAJECTORIES)
    assert len(entries) == 6 and any(e["error_tool_response"] for e in entries)
    for entry in entries:
        verdict = replay(entry)
        assert verdict, (entry["id"], verdict.reason)
    # the kept conversations pass the gate, and no ground truth holds an unflagged error (the
    # earlier packaged data had trading_logout's failure status and a wrapped auth error)
    from aworld_rl_funreason_mt.data import _rows
    from aworld_rl_funreason_mt.synthesis import ground_truth_errors
    from aworld_rl_funreason_mt.trajectory import check_conversation

    for row in _rows(DEMO_TRAJECTORIES):
        trajectory = Trajectory.from_dict(row)
        assert check_conversation(trajectory), trajectory.id
        for round_ in trajectory.rounds:
            assert round_.error_injected or not ground_truth_errors(round_.trace)


def test_packaged_entries_play_in_core_bfcl_prompting_env():
    """BFCL's own protocol (core's BfclEnv, the leaderboard's prompting loop) scores them fully."""
    from aworld_rl_core.tooluse.bfcl import entry_from_raw
    from aworld_rl_core.tooluse.bfcl.prompting import BfclEnv, ground_truth_replies
    from aworld_rl_funreason_mt.data import DEMO_TRAJECTORIES

    for raw in read_entries(DEMO_TRAJECTORIES):
        entry = entry_from_raw(raw)
        env = BfclEnv(entry)
        env.reset()
        step = None
        for reply in [r for turn in ground_truth_replies(entry) for r in turn]:
            step = env.step(reply)
        assert step is not None and step.done and step.info["progress"] == 1.0, entry.id


def test_a_resume_may_raise_the_record_count(tmp_path, aworld_home):
    from aworld_rl_core.runs import may_change_on_resume
    from aworld_rl_funreason_mt.recipes.synthesize import SynthesizeConfig

    assert may_change_on_resume("records", SynthesizeConfig)
    assert not may_change_on_resume("synthesis.rounds", SynthesizeConfig)
    first, _ = demo(tmp_path, "records=2", "synthesis.rounds=1")
    more, _ = demo(tmp_path, "records=3", "synthesis.rounds=1", resume=True)
    assert first.metrics["attempted"] == 2.0 and more.metrics["attempted"] == 3.0
    assert more.metrics["skipped_done"] == 2.0


def test_trajectories_are_appended_as_they_pass(tmp_path, aworld_home, monkeypatch):
    from aworld_rl_funreason_mt.recipes import synthesize

    seen = []
    real = synthesize.append_trajectory

    def spy(path, trajectory):
        real(path, trajectory)
        seen.append(len(path.read_text().splitlines()))  # on disk already, one more each time

    monkeypatch.setattr(synthesize, "append_trajectory", spy)
    result, run = demo(tmp_path, "records=3", "concurrency=1")
    assert seen == list(range(1, int(result.metrics["kept"]) + 1)) and seen
    assert len(lines_of(run.dir / "trajectories.jsonl")) == result.metrics["kept"]
