"""``funreason.sft`` through LLaMA-Factory (its own environment) with a learnable alpha."""

from __future__ import annotations

import importlib.util
import json
import sys

import pytest

if importlib.util.find_spec("llamafactory") is None:
    pytest.skip("needs llamafactory==0.9.5 (its own environment)", allow_module_level=True)

from aworld_rl_core.config import load_config
from aworld_rl_core.runs import execute
from aworld_rl_funreason.recipes.sft import SftRecipeConfig, run


@pytest.mark.slow
def test_sft_through_llamafactory_trains_alpha(tmp_path, monkeypatch):
    monkeypatch.setenv("BFCL_PROJECT_ROOT", str(tmp_path / "bfcl"))
    monkeypatch.setenv("AWORLD_RL_HOME", str(tmp_path / "home"))
    overrides = [
        "trainer.backend=llamafactory",
        "data.prompt=chat_tools",  # no bfcl-eval in the LLaMA-Factory environment
        f"trainer.llamafactory.python={sys.executable}",
    ]
    cfg = load_config(
        SftRecipeConfig,
        preset="tiny-cpu",
        presets="aworld_rl_funreason:configs/sft",
        overrides=overrides,
    )
    result, _ = execute("funreason.sft", run, cfg, output_dir=tmp_path / "run", quiet=True)
    assert result.metrics["global_step"] == 2
    logged = [json.loads(x) for x in (tmp_path / "run/metrics.jsonl").read_text().splitlines()]
    alphas = [m["loss_alpha"] for m in logged if "loss_alpha" in m]
    assert alphas and all(0.0 < a < 1.0 for a in alphas)
    assert alphas[-1] != pytest.approx(0.7, abs=1e-7)
