"""The paper presets chain and fit: ZeRO-3 through LLaMA-Factory with a per-GPU memory estimate
in the dry run, self-refine trains like SFT, later recipes find an SFT run's model."""

from __future__ import annotations

import json

import pytest

from aworld_rl_core.backends.llamafactory.config import LlamaFactoryConfig
from aworld_rl_core.config import load_config
from aworld_rl_core.errors import AworldError
from aworld_rl_core.runs import execute
from aworld_rl_core.trainer_config import section
from aworld_rl_funreason.paths import model_source
from aworld_rl_funreason.recipes.self_refine import SelfRefineConfig
from aworld_rl_funreason.recipes.sft import SftRecipeConfig, run

SAMPLES = "data.path=aworld_rl_funreason:sample_data/fcdr_tiny.jsonl"


@pytest.fixture(autouse=True)
def _home(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("AWORLD_RL_HOME", str(tmp_path_factory.mktemp("home")))


def test_paper_dry_run_prints_zero3_launch_and_memory(tmp_path, capsys):
    cfg = load_config(
        SftRecipeConfig,
        preset="paper",
        presets="aworld_rl_funreason:configs/sft",
        overrides=[SAMPLES, "dry_run=true"],
    )
    result, _ = execute("funreason.sft", run, cfg, output_dir=tmp_path, quiet=True)
    printed = capsys.readouterr().out
    assert "torch.distributed.run --nproc_per_node=8" in printed
    assert "deepspeed:" in printed and '"stage": 3' in printed
    assert result.metrics["memory/total_gib"] == pytest.approx(42.32, abs=0.01)
    assert "| logits | 23.2 |" in (tmp_path / "launch.md").read_text()
    assert not list((tmp_path / "checkpoints").glob("checkpoint-*"))  # nothing trained
    assert not (tmp_path / "llamafactory").exists()  # no worker inputs either


def test_self_refine_trains_like_sft():
    presets = "aworld_rl_funreason:configs"
    sft = load_config(SftRecipeConfig, preset="paper", presets=f"{presets}/sft").trainer
    assert SelfRefineConfig().trainer == SftRecipeConfig().trainer
    for preset in ("paper", "paper-v3"):
        refine = load_config(SelfRefineConfig, preset=preset, presets=f"{presets}/self-refine")
        t = refine.trainer
        assert (t.sft.max_length, t.epochs, t.micro_batch_size) == (
            sft.sft.max_length,
            sft.epochs,
            sft.micro_batch_size,
        )
        lf = LlamaFactoryConfig
        assert section(t, lf).deepspeed == section(sft, lf).deepspeed
        assert refine.model.name_or_path == "runs/funreason.sft"  # the run, not a guessed subdir


def test_a_run_directory_stands_for_its_final_model(tmp_path):
    run_dir = tmp_path / "sft"
    run_dir.mkdir()
    assert model_source(str(run_dir)) == str(run_dir)  # not a run: kept
    assert model_source("tiny:qwen3") == "tiny:qwen3"
    status = {"status": "completed", "outputs": {"model": "checkpoints"}}  # llamafactory's
    (run_dir / "status.json").write_text(json.dumps(status))
    assert model_source(str(run_dir)) == str(run_dir / "checkpoints")
    (run_dir / "status.json").write_text(json.dumps({"status": "failed"}))
    with pytest.raises(AworldError, match="status: failed.*without a 'model' output"):
        model_source(str(run_dir))
