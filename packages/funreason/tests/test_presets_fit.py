"""The paper presets chain and fit: ZeRO-3 through LLaMA-Factory with a per-GPU memory estimate
in the dry run, self-refine trains like SFT, later recipes find an SFT run's model."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from aworld_rl_core.backends.hf_sft_launch import zero_config
from aworld_rl_core.backends.llamafactory.config import LlamaFactoryConfig
from aworld_rl_core.config import load_config
from aworld_rl_core.errors import AworldError
from aworld_rl_core.trainer_config import section
from aworld_rl_funreason.paths import model_source
from aworld_rl_funreason.recipes.self_refine import SelfRefineConfig
from aworld_rl_funreason.recipes.sft import SftRecipeConfig

SAMPLES = "data.path=aworld_rl_funreason:sample_data/fcdr_tiny.jsonl"


@pytest.fixture(autouse=True)
def _home(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("AWORLD_RL_HOME", str(tmp_path_factory.mktemp("home")))


def test_paper_dry_run_plans_the_zero3_llamafactory_launch(tmp_path, capsys):
    """Core's ``--dry-run`` (funreason.sft has no dry-run code of its own): LLaMA-Factory's plan
    of the paper preset, torchrun over 8 GPUs with core's ZeRO-3 config (the one
    tests_llamafactory passes through LLaMA-Factory's and DeepSpeed's parsers) and the memory of
    core's estimator (SRML is a token loss: the full logits count)."""
    from aworld_rl_core import cli

    code = cli.main(
        ["funreason.sft", "--preset", "paper", "--dry-run", "--output-dir", str(tmp_path / "r"),
         SAMPLES]
    )  # fmt: skip
    assert code == 0
    (plan,) = json.loads((tmp_path / "r/plan.json").read_text())["plans"]
    assert plan["backend"] == "llamafactory"
    assert plan["processes"][0]["command"][1:4] == [
        "-m",
        "torch.distributed.run",
        "--nproc_per_node=8",
    ]
    deepspeed = plan["steps"]["engine_settings"]["deepspeed"]
    assert deepspeed == str((tmp_path / "r/llamafactory/zero3.json").resolve())
    assert json.loads(Path(deepspeed).read_text()) == zero_config(3, bf16=None)  # checked in CI
    # 512 = micro 2 x 8 GPUs x 32 accumulation; Qwen2.5-Coder-7B, 2 x 8192 tokens, ZeRO-3
    assert (plan["steps"]["world_size"], plan["steps"]["accumulation"]) == (8, 32)
    assert plan["memory_gib"]["total"] == pytest.approx(42.32, abs=0.01)
    assert plan["memory_gib"]["logits"] == pytest.approx(23.2, abs=0.05)
    assert not list((tmp_path / "r/checkpoints").glob("checkpoint-*"))  # nothing trained
    assert "dry_run" not in {f.name for f in dataclasses.fields(SftRecipeConfig)}
    assert "== llamafactory launch plan" in capsys.readouterr().out


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
        assert section(t, lf).deepspeed == section(sft, lf).deepspeed is None
        assert section(t, lf).zero_stage == section(sft, lf).zero_stage == 3
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
