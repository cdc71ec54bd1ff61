"""A tiny CPU SFT through LLaMA-Factory with our loss hook, then a resume."""

from __future__ import annotations

import importlib.metadata
import json
import sys

import pytest

try:  # the distribution, not the name: tests/llamafactory is importable as "llamafactory" too
    importlib.metadata.version("llamafactory")
except importlib.metadata.PackageNotFoundError:
    pytest.skip("needs llamafactory==0.9.5 (its own environment)", allow_module_level=True)

from lf_samples import CALC_RECORD, CALL_TEXT, THINK_TEXT, make_job

from aworld_rl_core.backends.llamafactory.backend import LlamaFactoryBackend
from aworld_rl_core.backends.llamafactory.probe import RecordingLoss, read_records


def _logged(run_dir):
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def test_tiny_sft_uses_our_loss_with_segments_then_resumes(lf_home, tmp_path):
    from transformers import AutoTokenizer

    from aworld_rl_core.models import tiny_model_dir

    run_dir = tmp_path / "run"
    probe = tmp_path / "loss.jsonl"
    job = make_job(
        run_dir, rows=[CALC_RECORD] * 2, loss=RecordingLoss(str(probe)), python=sys.executable
    )
    result = LlamaFactoryBackend().train(job)

    # the hook ran once per step (2 steps, one micro-batch each) on the known sample
    calls = read_records(probe)
    assert [c["call"] for c in calls] == [0, 1]
    first = calls[0]
    assert first["segments"] == ["call", "think"]
    assert first["logits_shape"][:2] == first["labels_shape"]
    assert first["logits_shape"][2] >= 151_669  # Qwen3's vocabulary (maybe padded)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir("qwen3", 0))
    for labels, think, call in zip(
        first["labels"], first["masks"]["think"], first["masks"]["call"], strict=True
    ):
        assert tokenizer.decode([t for t, m in zip(labels, think, strict=True) if m]) == THINK_TEXT
        assert tokenizer.decode([t for t, m in zip(labels, call, strict=True) if m]) == CALL_TEXT
        either = [bool(a or b) for a, b in zip(think, call, strict=True)]
        assert [t != -100 for t in labels] == either

    # training followed our loss: the logged loss is the hook's value, and it went down
    logged = [m for m in _logged(run_dir) if "loss" in m and "step" in m]
    assert [m["step"] for m in logged] == [1, 2]
    assert [m["loss"] for m in logged] == pytest.approx([c["loss"] for c in calls], rel=1e-4)
    assert calls[1]["loss"] < calls[0]["loss"]

    ckpt = job.run.checkpoint_dir
    assert [p.name for p in result.checkpoints] == ["checkpoint-1", "checkpoint-2"]
    assert (ckpt / "checkpoint-2" / "optimizer.pt").is_file()
    assert (ckpt / "model.safetensors").is_file()  # the final model at the top level
    assert result.outputs["model"] == ckpt
    assert result.metrics["global_step"] == 2 and result.metrics["train_samples"] == 2

    # resume: one more step from checkpoint-2 (the hook runs once), then an evaluation at the
    # end that also goes through the hook (eval_loss is our loss on the eval rows)
    probe2 = tmp_path / "loss-resumed.jsonl"
    job2 = make_job(
        run_dir,
        rows=[CALC_RECORD] * 2,
        eval_rows=[CALC_RECORD],
        loss=RecordingLoss(str(probe2)),
        python=sys.executable,
        resume=True,
        max_steps=3,
    )
    resumed = LlamaFactoryBackend().train(job2)
    assert resumed.metrics["resumed_from_step"] == 2
    assert resumed.metrics["global_step"] == 3
    assert [p.name for p in resumed.checkpoints] == ["checkpoint-1", "checkpoint-2", "checkpoint-3"]
    train_call, eval_call = read_records(probe2)
    assert train_call["loss"] < calls[1]["loss"]
    assert eval_call["labels_shape"][0] == 1  # the single eval row
    assert resumed.metrics["eval_loss"] == pytest.approx(eval_call["loss"], rel=1e-4)
    assert resumed.metrics["eval_samples"] == 1
