"""Every ``aworld-run ... --preset paper ... --dry-run`` command of the README runs as written on
a fresh install (the packaged sample data) and writes ``plan.json`` (core's ``--dry-run``)."""

import json
from pathlib import Path
from typing import Any

import pytest

from aworld_rl_core.backends.hf_sft_launch import zero_config
from aworld_rl_core.testing.readme import ReadmeDryRuns


class TestReadmeDryRuns(ReadmeDryRuns):
    readme = Path(__file__).parents[1] / "README.md"
    recipes = ["funreason_mt.rl", "funreason_mt.sft"]
    backend = {"funreason_mt.rl": "verl", "funreason_mt.sft": "llamafactory"}

    def check_plans(self, plans: list[dict[str, Any]]) -> None:
        (plan,) = plans
        if plan["backend"] == "llamafactory":
            check_sft_plan(plan)


def check_sft_plan(plan: dict[str, Any]) -> None:
    """The paper SFT launch: torchrun over 8 GPUs with core's ZeRO-3 config, and a per-GPU
    estimate that fits 80 GiB (on main: 1 GPU, no DeepSpeed, 114.55 GiB)."""
    assert plan["processes"][0]["command"][1:4] == [
        "-m",
        "torch.distributed.run",
        "--nproc_per_node=8",
    ]
    steps = plan["steps"]
    assert (steps["world_size"], steps["micro_batch"], steps["accumulation"]) == (8, 1, 8)
    deepspeed = Path(steps["engine_settings"]["deepspeed"])
    assert deepspeed.name == "zero3.json"
    assert json.loads(deepspeed.read_text()) == zero_config(3, bf16=None)
    assert any(p.startswith("deepspeed") for p in plan["packages"])
    # Qwen3-4B (4.02e9 parameters, vocabulary 151,936), 1 x 32,768 tokens, ZeRO-3 over 8:
    # bf16 weights 7.49 GiB / 8 = 0.94, AdamW fp32 state 44.93 / 8 = 5.62,
    # logits 32,768 x 151,936 x 10 bytes = 46.37 GiB (a token loss needs them all)
    memory = plan["memory_gib"]
    assert memory["weights"] == pytest.approx(0.94, abs=0.01)
    assert memory["optimizer"] == pytest.approx(5.62, abs=0.01)
    assert memory["logits"] == pytest.approx(46.37, abs=0.01)
    assert memory["total"] == pytest.approx(62.14, abs=0.01)
    assert "fits in 80 GiB (ZeRO-3 over 8 GPU(s)" in plan["memory_note"]


def test_paper_sft_plan_fits_on_8_gpus_with_zero3(tmp_path, aworld_home):
    """The preset with the data named explicitly (as a user points it at a synthesize run): the
    plan is 8 GPUs with ZeRO-3 and fits (main planned 1 GPU without ZeRO: 114.55 GiB)."""
    from aworld_rl_core import cli

    out = tmp_path / "r"
    data = "data.path=aworld_rl_funreason_mt:data/demo_trajectories.jsonl"
    assert cli.main(["funreason_mt.sft", "--preset", "paper", "--dry-run", "--output-dir",
                     str(out), data]) == 0  # fmt: skip
    (plan,) = json.loads((out / "plan.json").read_text())["plans"]
    check_sft_plan(plan)
    assert not list((out / "checkpoints").glob("checkpoint-*"))  # nothing trained
