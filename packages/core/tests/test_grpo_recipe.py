"""Recipe ``core.grpo``: presets load, tiny-cpu trains end to end and resumes from the CLI."""

from __future__ import annotations

import json
import shutil

import pytest

from aworld_rl_core.config import load_config
from aworld_rl_core.errors import ConfigError
from aworld_rl_core.recipes.grpo import GrpoRecipeConfig, build_job, run
from aworld_rl_core.runs import Run, execute

PRESETS = "aworld_rl_core:configs/grpo"


def test_presets_load():
    tiny = load_config(GrpoRecipeConfig, preset="tiny-cpu", presets=PRESETS)
    assert tiny.model.name_or_path == "tiny:qwen3" and tiny.trainer.backend == "trl"
    assert (tiny.trainer.max_steps, tiny.trainer.rl.group_size, tiny.env.turns) == (3, 4, 2)
    learn = load_config(GrpoRecipeConfig, preset="learn-cpu", presets=PRESETS)
    assert learn.trainer.max_steps == 15 and learn.trainer.save_steps == 5
    with pytest.raises(ConfigError):
        load_config(GrpoRecipeConfig, preset="tiny-cpu", presets=PRESETS, overrides=["env.turn=3"])


def test_job_rows_rewards_and_environment(tmp_path):
    cfg = load_config(
        GrpoRecipeConfig,
        preset="tiny-cpu",
        presets=PRESETS,
        overrides=["data.eval_tasks=4", "env.turns=3"],
    )
    job = build_job(cfg, Run(tmp_path, quiet=True))
    assert len(job.train_rows) == 16 and len(job.eval_rows) == 4
    env = job.env_factory()(job.train_rows[0])
    env.reset()
    assert [env.step("ok").done for _ in range(3)] == [False, False, True]
    assert job.rewards == [] and job.reward_weights is None
    bad = load_config(GrpoRecipeConfig, overrides=["reward.weights=[1.0]"])
    with pytest.raises(ValueError, match=r"reward\.weights"):
        build_job(bad, Run(tmp_path, quiet=True))


def test_tiny_cpu_trains_then_resumes(tmp_path):
    pytest.importorskip("trl")
    cfg = load_config(
        GrpoRecipeConfig, preset="tiny-cpu", presets=PRESETS, overrides=["trainer.max_steps=1"]
    )
    result, _ = execute("core.grpo", run, cfg, output_dir=tmp_path, quiet=True)
    assert result.metrics["global_step"] == 1
    assert 0.0 < result.metrics["reward_first"] <= 1.0
    assert [p.name for p in result.checkpoints] == ["checkpoint-1"]
    assert json.loads((tmp_path / "status.json").read_text())["status"] == "completed"
    assert "## Reward" in (tmp_path / "report.md").read_text()

    more = load_config(
        GrpoRecipeConfig, preset="tiny-cpu", presets=PRESETS, overrides=["trainer.max_steps=2"]
    )
    resumed, _ = execute("core.grpo", run, more, output_dir=tmp_path, resume=True, quiet=True)
    assert resumed.metrics["global_step"] == 2
    assert [p.name for p in resumed.checkpoints] == ["checkpoint-1", "checkpoint-2"]
    logged = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in logged if "reward_mean" in r] == [1, 2]

    # as if killed while saving checkpoint-2 (after step 2 was logged): step 2 runs again and
    # is logged once (main logged it twice)
    shutil.rmtree(tmp_path / "checkpoints" / "checkpoint-2")
    again, _ = execute("core.grpo", run, more, output_dir=tmp_path, resume=True, quiet=True)
    assert again.metrics["global_step"] == 2
    logged = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in logged if "reward_mean" in r] == [1, 2]
