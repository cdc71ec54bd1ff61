"""Checkpoint folders by step: ``checkpoint-N`` (most backends), ``global_step_N`` (verl).

A checkpoint is whole or absent: a real kill -9 in the middle of a save still resumes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from aworld_rl_core.backends.checkpoints import STAGING, checkpoints, latest_checkpoint


def whole(path: Path) -> Path:
    path.mkdir()
    (path / "trainer_state.json").write_text(json.dumps({"global_step": 1}))
    return path


def test_checkpoints_sorted_by_step(tmp_path):
    for name in ("checkpoint-10", "checkpoint-2", "checkpoint-9"):
        whole(tmp_path / name)
    for name in ("runs", "checkpoint-x"):
        (tmp_path / name).mkdir()
    (tmp_path / "checkpoint-11").write_text("a file, not a checkpoint")
    assert [p.name for p in checkpoints(tmp_path)] == [
        "checkpoint-2",
        "checkpoint-9",
        "checkpoint-10",
    ]
    assert latest_checkpoint(tmp_path).name == "checkpoint-10"
    assert latest_checkpoint(tmp_path / "missing") is None


def test_incomplete_checkpoints_are_ignored(tmp_path):
    whole(tmp_path / "checkpoint-3")
    (tmp_path / "checkpoint-4").mkdir()  # killed before trainer_state.json
    torn = tmp_path / "checkpoint-5"
    torn.mkdir()
    (torn / "trainer_state.json").write_text('{"global_st')  # killed while writing it
    assert [p.name for p in checkpoints(tmp_path)] == ["checkpoint-3"]
    assert latest_checkpoint(tmp_path).name == "checkpoint-3"


def test_prefix_selects_verl_step_folders(tmp_path):
    for name in ("global_step_12", "global_step_3", "global_step_"):
        (tmp_path / name).mkdir()
    whole(tmp_path / "checkpoint-7")
    assert [p.name for p in checkpoints(tmp_path, prefix="global_step_")] == [
        "global_step_3",
        "global_step_12",
    ]
    assert latest_checkpoint(tmp_path).name == "checkpoint-7"


TRAIN = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    import torch
    from aworld_rl_core.backends.base import TrainJob
    from aworld_rl_core.models.config import ModelConfig
    from aworld_rl_core.trainer_config import SFTConfig, TrainerConfig
    from aworld_rl_core.backends.hf_sft import HfSftBackend
    from aworld_rl_core.runs import Run

    run_dir, steps, hang_at = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    real_save = torch.save

    def save(obj, f, *args, **kwargs):  # the optimizer state of step `hang_at`: stop mid-save
        real_save(obj, f, *args, **kwargs)
        if f"checkpoint-{hang_at}" in str(f) and str(f).endswith("optimizer.pt"):
            (run_dir / "saving").write_text(str(f))
            time.sleep(600)

    torch.save = save
    row = {"messages": [{"role": "user", "content": "hi"},
                        {"role": "assistant", "content": "hello there"}]}
    resume = hang_at < 0
    trainer = TrainerConfig(backend="hf-sft", learning_rate=1e-2, max_steps=steps, batch_size=1,
                            micro_batch_size=1, save_steps=1, seed=0, resume=resume,
                            sft=SFTConfig(max_length=64, lr_scheduler="constant"))
    job = TrainJob(model=ModelConfig(name_or_path="tiny:qwen3"), trainer=trainer,
                   run=Run(run_dir, quiet=True, resume=resume),
                   train_rows=[row] * int((sys.argv[4:] or ["1"])[0]))
    result = HfSftBackend().train(job)
    print("global_step", int(result.metrics["global_step"]))
    """
)


def test_kill_9_during_a_save_still_resumes(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    run_dir = tmp_path / "run"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.Popen(
        [sys.executable, str(script), str(run_dir), "3", "2"], env=env, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 300
        while not (run_dir / "saving").exists():
            assert proc.poll() is None, proc.stderr.read().decode()[-3000:]
            assert time.monotonic() < deadline, "training never reached the second save"
            time.sleep(0.2)
        os.kill(proc.pid, signal.SIGKILL)  # a real kill -9, in the middle of checkpoint 2
        proc.wait(timeout=60)
    finally:
        proc.kill()
    saved = run_dir / "checkpoints"
    assert (saved / STAGING / "checkpoint-2" / "optimizer.pt").is_file()  # half written
    assert not (saved / "checkpoint-2").exists()
    assert latest_checkpoint(saved).name == "checkpoint-1"

    resumed = subprocess.run(
        [sys.executable, str(script), str(run_dir), "3", "-1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "global_step 3" in resumed.stdout
    assert [p.name for p in checkpoints(saved)] == ["checkpoint-1", "checkpoint-2", "checkpoint-3"]
    assert not (saved / STAGING).exists()
    steps = [
        json.loads(line).get("step")
        for line in (run_dir / "metrics.jsonl").read_text().splitlines()
        if "grad_norm" in line
    ]
    # step 2 ran again after the kill (its checkpoint was lost) and is logged once (main: twice)
    assert steps == [1, 2, 3]
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    losses = [r["loss"] for r in rows if "grad_norm" in r]
    (summary,) = [r for r in rows if "train_loss" in r]
    # the run's average, not only the steps after the resume (main: steps 2 and 3 only)
    assert summary["train_loss"] == pytest.approx(sum(losses) / 3, rel=1e-6)


def test_a_resume_after_the_last_save_trains_no_step_more(tmp_path):
    """Killed after its last checkpoint (while writing its report): the resume ends at
    max_steps. With max_steps not a whole number of epochs (3 steps, 2 per epoch) transformers
    trained one step more (main: global_step 4 of 3, other weights); found by the crash
    harness (issue 29)."""
    import torch
    from safetensors.torch import load_file

    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    run_dir = tmp_path / "run"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    for hang_at in ("99", "-1"):  # the whole run, then the same run resumed
        done = subprocess.run(
            [sys.executable, str(script), str(run_dir), "3", hang_at, "2"],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert "global_step 3" in done.stdout, done.stdout
    saved = run_dir / "checkpoints"
    assert [p.name for p in checkpoints(saved)][-1] == "checkpoint-3"
    final, last = (
        load_file(run_dir / "model" / "model.safetensors"),
        load_file(saved / "checkpoint-3" / "model.safetensors"),
    )
    assert all(torch.equal(final[k], last[k]) for k in last)
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if "grad_norm" in r] == [1, 2, 3]
