"""The rl recipe's paper preset launches verl: a dry run writes the parquet rows and the launch."""

import json

import pytest

from aworld_rl_core.config import load_config
from aworld_rl_core.registry import get_recipe
from aworld_rl_core.runs import execute

pq = pytest.importorskip("pyarrow.parquet")


def test_paper_preset_dry_run_writes_verl_rows_and_launch(tmp_path, aworld_home):
    entry = get_recipe("funreason_mt.rl")
    cfg = load_config(
        entry.config_cls(),
        preset="paper",
        presets=entry.presets,
        overrides=[
            "data.path=aworld_rl_funreason_mt:data/demo_trajectories.jsonl",
            "trainer.verl.dry_run=true",
            "trainer.verl.resolve_config=false",
        ],
    )
    result, run = execute(
        "funreason_mt.rl", entry.run_fn(), cfg, output_dir=tmp_path / "run", quiet=True
    )
    # one of the six entries is held out: verl validates on it, never trains on it
    assert result.metrics["train_entries"] == 5.0 and result.metrics["held_out_entries"] == 1.0
    rows = pq.read_table(next(run.dir.rglob("train.parquet"))).to_pylist()
    assert len(rows) == 5 and rows[0]["agent_name"] == "aworld_env"
    val = pq.read_table(next(run.dir.rglob("val.parquet"))).to_pylist()
    held_id = json.loads(json.loads(val[0]["extra_info"]["aworld"])["task"]["bfcl_entry"])["id"]
    trained = {
        json.loads(json.loads(r["extra_info"]["aworld"])["task"]["bfcl_entry"])["id"] for r in rows
    }
    assert len(val) == 1 and held_id not in trained and len(trained) == 5
    launch = json.loads(next(run.dir.rglob("verl_launch.json")).read_text())
    overrides = dict(o.split("=", 1) for o in launch["overrides"])
    assert overrides["actor_rollout_ref.model.path"] == "Qwen/Qwen3-4B-Instruct-2507"
    assert overrides["data.max_prompt_length"] == "16384"
    text = json.dumps(rows[0], default=str)
    assert "core.bfcl-multi-turn" in text and "funreason_mt" in text  # the env travels as a Ref


def test_paper_plan_packs_long_trajectories_and_fits_in_80_gib(tmp_path, aworld_home, capsys):
    """16k + 16k-token trajectories: dynamic batch size (one trajectory's tokens per pass),
    fused kernels (no full-vocabulary logits) and a per-GPU estimate that fits."""
    from aworld_rl_core import cli

    code = cli.main(
        ["funreason_mt.rl", "--preset", "paper", "--dry-run", "--output-dir", str(tmp_path / "r")]
    )
    assert code == 0
    (plan,) = json.loads((tmp_path / "r" / "plan.json").read_text())["plans"]
    settings = plan["steps"]["engine_settings"]
    assert settings["actor_rollout_ref.actor.use_dynamic_bsz"] == "true"
    assert settings["actor_rollout_ref.actor.ppo_max_token_len_per_gpu"] == "32768"
    assert plan["memory_gib"]["total"] < 80
    assert "fits in 80 GiB" in plan["memory_note"]
