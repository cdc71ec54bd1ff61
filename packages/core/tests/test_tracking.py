import json
import math

import pytest

from aworld_rl_core.report import plot_series
from aworld_rl_core.runs import Run
from aworld_rl_core.tracking import TrackingConfig, read_metrics


def test_metrics_jsonl_values_and_torn_last_line(tmp_path):
    np = pytest.importorskip("numpy")
    run = Run(tmp_path / "r", quiet=True)
    run.log({"loss": np.float32(0.5), "bad": math.inf}, step=3)
    run.log({"loss": 0.25})
    run.close()
    lines = [json.loads(x) for x in (tmp_path / "r" / "metrics.jsonl").read_text().splitlines()]
    assert lines[0]["step"] == 3 and lines[0]["loss"] == 0.5 and lines[0]["bad"] == "inf"
    assert "step" not in lines[1] and lines[1]["loss"] == 0.25
    with (tmp_path / "r" / "metrics.jsonl").open("a") as f:
        f.write('{"loss": 0.1')  # a run killed mid-write
    assert [r["loss"] for r in read_metrics(tmp_path / "r" / "metrics.jsonl")] == [0.5, 0.25]


def test_plots_only_for_series_logged_more_than_once(tmp_path):
    records = [{"step": 0, "a": 1.0, "once": 2}, {"step": 1, "a": 0.5, "flag": True}]
    paths = plot_series(records, tmp_path)
    assert [p.name for p in paths] == ["a.png"]


def test_tracking_defaults_are_off():
    assert TrackingConfig() == TrackingConfig(tensorboard=False, wandb=False)


def test_rewind_drops_rows_past_the_checkpoint_step_once(tmp_path):
    """A resume from checkpoint-2 after rows 3 and 4 were logged (and a torn last line)."""
    from aworld_rl_core.tracking import MetricsLog, TrackingConfig, read_metrics

    log = MetricsLog(tmp_path, TrackingConfig(), "demo")
    log.log({"setup": 1.0})
    for step in (1, 2, 3, 4):
        log.log({"loss": float(step)}, step=step)
    log.close()
    with (tmp_path / "metrics.jsonl").open("a") as handle:
        handle.write('{"step": 5, "lo')
    log = MetricsLog(tmp_path, TrackingConfig(), "demo")  # cuts the torn line
    assert log.rewind(2) == 2
    log.log({"loss": 3.5}, step=3)
    log.close()
    rows = read_metrics(tmp_path / "metrics.jsonl")
    assert [(r.get("step"), r.get("loss"), r.get("setup")) for r in rows] == [
        (None, None, 1.0),
        (1, 1.0, None),
        (2, 2.0, None),
        (3, 3.5, None),
    ]


def test_rewind_at_the_end_drops_the_summary_logged_after_training(tmp_path):
    """Killed after the last checkpoint and the end-of-training summary row: the resume logs
    the summary again, so the rewind drops it (main kept both: two summaries; issue 29's
    crash harness on funreason.sft)."""
    from aworld_rl_core.tracking import MetricsLog, TrackingConfig, read_metrics

    log = MetricsLog(tmp_path, TrackingConfig(), "demo")
    log.log({"setup": 1.0})
    for step in (1, 2):
        log.log({"loss": float(step)}, step=step)
    log.log({"train_loss": 1.5})  # the summary, after training
    log.close()
    log = MetricsLog(tmp_path, TrackingConfig(), "demo")
    assert log.rewind(2) == 1
    log.log({"train_loss": 1.5})
    log.close()
    rows = read_metrics(tmp_path / "metrics.jsonl")
    assert [(r.get("step"), r.get("train_loss")) for r in rows] == [
        (None, None),
        (1, None),
        (2, None),
        (None, 1.5),
    ]


def test_a_row_logged_after_a_torn_line_is_kept(tmp_path):
    """A kill mid-write leaves a line without its newline; the next run's first row used to be
    glued onto it (one unreadable line: the row lost)."""
    from aworld_rl_core.tracking import MetricsLog, TrackingConfig, read_metrics

    (tmp_path / "metrics.jsonl").write_text('{"step": 1, "loss": 1.0}\n{"step": 2, "lo')
    log = MetricsLog(tmp_path, TrackingConfig(), "demo", resume=True)
    log.log({"loss": 2.0}, step=2)
    log.close()
    rows = read_metrics(tmp_path / "metrics.jsonl")
    assert [(r["step"], r["loss"]) for r in rows] == [(1, 1.0), (2, 2.0)]


def test_a_resumed_run_logs_its_stepless_summary_once(tmp_path):
    """Killed after a recipe logged its summary row (no step) but before the run was marked
    completed: the resumed run does the rest again and logs the summary again, which replaces
    the first (main kept both: issue 29's crash harness on v2p.generate, 2 rows for 1)."""
    from aworld_rl_core.tracking import MetricsLog, TrackingConfig, read_metrics

    log = MetricsLog(tmp_path, TrackingConfig(), "demo")
    log.log({"setup": 1.0})
    log.log({"pages": 4.0, "samples": 8.0})
    log.close()
    log = MetricsLog(tmp_path, TrackingConfig(), "demo", resume=True)
    log.log({"setup": 1.0})
    log.log({"other": 3.0})  # a row the first run never logged stays
    log.log({"pages": 4.0, "samples": 8.0})
    log.close()
    rows = [{k: v for k, v in r.items() if k != "time"} for r in read_metrics(log.path)]
    assert rows == [{"setup": 1.0}, {"other": 3.0}, {"pages": 4.0, "samples": 8.0}]
    # a run started afresh (not resumed) appends as before
    log = MetricsLog(tmp_path, TrackingConfig(), "demo")
    log.log({"other": 3.0})
    log.close()
    assert len(read_metrics(log.path)) == 4


def test_a_resume_without_a_whole_checkpoint_logs_each_step_once(tmp_path):
    """Killed while saving its first checkpoint, a run resumes from step 0 and logs steps 1..
    again: the rows of before go (main kept them: step 1 twice in a curriculum stage, found by
    the crash harness on envtuning.curriculum killed mid-save)."""
    from types import SimpleNamespace

    pytest.importorskip("transformers")
    from aworld_rl_core.backends.run_log import RunLogCallback

    def train(run):
        callback = RunLogCallback(run, desc="steps")
        state = SimpleNamespace(global_step=0, max_steps=2, num_input_tokens_seen=0)
        callback.on_train_begin(None, state, None)
        for step in (1, 2):
            state.global_step = step
            callback.on_log(None, state, None, logs={"loss": float(step)})
        callback.on_train_end(None, state, None)
        run.close()

    run = Run(tmp_path, quiet=True)
    run.log({"setup": 1.0})
    train(run)
    train(Run(tmp_path, quiet=True, resume=True))
    rows = read_metrics(tmp_path / "metrics.jsonl")
    assert [(r.get("step"), r.get("loss"), r.get("setup")) for r in rows] == [
        (None, None, 1.0),
        (1, 1.0, None),
        (2, 2.0, None),
    ]


def test_a_row_logged_again_at_its_step_after_a_resume_replaces_the_earlier_one(tmp_path):
    """Killed after the final evaluation at the last step was logged (before the run was
    marked completed), the resume evaluates again: its row replaces the earlier one (main kept
    both: funreason_mt.rl under the crash harness, the eval row of step 1 twice)."""
    from aworld_rl_core.tracking import MetricsLog

    log = MetricsLog(tmp_path, TrackingConfig(), "demo")
    log.log({"loss": 0.5}, step=1)
    log.log({"eval_loss": 0.25}, step=1)
    log.close()
    log = MetricsLog(tmp_path, TrackingConfig(), "demo", resume=True)
    assert log.rewind(1) == 0  # resumed from checkpoint-1, the last step
    log.log({"eval_loss": 0.25}, step=1)
    log.log({"eval_loss": 0.5}, step=1)  # the same process logging twice keeps both
    log.close()
    rows = read_metrics(tmp_path / "metrics.jsonl")
    assert [(r["step"], r.get("loss"), r.get("eval_loss")) for r in rows] == [
        (1, 0.5, None),
        (1, None, 0.25),
        (1, None, 0.5),
    ]
