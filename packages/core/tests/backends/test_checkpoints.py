"""Checkpoint folders by step: ``checkpoint-N`` (most backends), ``global_step_N`` (verl)."""

from __future__ import annotations

from aworld_rl_core.backends.checkpoints import checkpoints, latest_checkpoint


def test_checkpoints_sorted_by_step(tmp_path):
    for name in ("checkpoint-10", "checkpoint-2", "checkpoint-9", "runs", "checkpoint-x"):
        (tmp_path / name).mkdir()
    (tmp_path / "checkpoint-11").write_text("a file, not a checkpoint")
    assert [p.name for p in checkpoints(tmp_path)] == [
        "checkpoint-2",
        "checkpoint-9",
        "checkpoint-10",
    ]
    assert latest_checkpoint(tmp_path).name == "checkpoint-10"
    assert latest_checkpoint(tmp_path / "missing") is None


def test_prefix_selects_verl_step_folders(tmp_path):
    for name in ("global_step_12", "global_step_3", "checkpoint-7", "global_step_"):
        (tmp_path / name).mkdir()
    assert [p.name for p in checkpoints(tmp_path, prefix="global_step_")] == [
        "global_step_3",
        "global_step_12",
    ]
    assert latest_checkpoint(tmp_path).name == "checkpoint-7"
