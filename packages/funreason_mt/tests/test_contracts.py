"""Core's contracts for the plugin and every recipe (presets, overrides, tiny-cpu runs)."""

import json

from aworld_rl_core.testing.contracts import PluginContract, RecipeContract
from aworld_rl_funreason_mt.graph import ToolGraph


class TestPlugin(PluginContract):
    plugin = "funreason_mt"
    expected = {
        "recipes": [
            "funreason_mt.graph",
            "funreason_mt.synthesize",
            "funreason_mt.sft",
            "funreason_mt.rl",
            "funreason_mt.eval",
        ],
        "datasets": ["funreason_mt.trajectories"],
    }


def test_trajectories_dataset_builder():
    from aworld_rl_core.registry import get_dataset

    builder = get_dataset("funreason_mt.trajectories")
    records = list(builder())
    assert len(records) == 6 and all(r.messages[0]["role"] == "system" for r in records)
    clean = list(builder(drop_error_responses=True))
    assert 0 < len(clean) < 6 and not any(r.metadata["error_tool_response"] for r in clean)


class TestGraphRecipe(RecipeContract):
    recipe = "funreason_mt.graph"

    def check_result(self, result, run_dir):
        graph = ToolGraph.load(run_dir / "graph.json")
        assert result.metrics["tools"] == len(graph.tools) == 128
        assert result.metrics["edges_probe"] > 0 and result.metrics["edges_name_type"] > 0
        assert (run_dir / "graph.png").stat().st_size > 10_000
        report = (run_dir / "report.md").read_text()
        assert "| TravelAPI | 18 |" in report and "`authenticate_travel` -> `book_flight`" in report


class TestSynthesizeRecipe(RecipeContract):
    """tiny-cpu: a tiny random model answers the agents; nothing passes, the run completes."""

    recipe = "funreason_mt.synthesize"
    override_values = {
        f"agents.{role}": {"model": "Qwen/Qwen3-8B"}
        for role in ("tooling", "querying", "reasoning", "critiquing")
    }

    def check_result(self, result, run_dir):
        assert result.metrics["attempted"] == 2.0 and result.metrics["kept"] == 0.0
        assert result.metrics["yield"] == 0.0
        records = [json.loads(x) for x in (run_dir / "synthesis.jsonl").read_text().splitlines()]
        assert len(records) == 2 and not any(r["passed"] for r in records)
        # the yields say where the garbage was stopped: the tooling agent's reply is no tool
        report = (run_dir / "report.md").read_text()
        assert "Yields by stage kind" in report
        stages = {step["stage"] for r in records for step in r["trail"]}
        assert "round1/tool" in stages
        tool_fails = [s for r in records for s in r["trail"] if s["stage"] == "round1/tool"]
        assert all(s["outcome"] == "failed" and s["reason"] == "bad_tool" for s in tool_fails)
        assert (run_dir / "trajectories.jsonl").read_text() == ""


class TestSftRecipe(RecipeContract):
    recipe = "funreason_mt.sft"

    def check_result(self, result, run_dir):
        assert result.metrics["trajectories"] == 2.0 and result.metrics["global_step"] == 2
        assert result.metrics["supervised_tokens"] > 0 and result.checkpoints
        assert result.metrics["samples"] > 2  # split per assistant turn
        assert (
            result.metrics["srml"] in (0.0, 1.0)
            and "## Loss" in (run_dir / "report.md").read_text()
        )


class TestRlRecipe(RecipeContract):
    recipe = "funreason_mt.rl"

    def check_result(self, result, run_dir):
        assert result.metrics["train_entries"] == 1.0 and result.metrics["global_step"] == 1
        assert result.metrics["held_out_entries"] >= 1.0  # validation on held-out rows
        assert result.checkpoints and result.checkpoints[-1].exists()
        steps = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
        played = [s for s in steps if "episode/turns" in s]
        assert played and played[0]["episode/turns"] >= 1  # episodes ran in core's BFCL env
        assert played[0]["reward_mean"] == 0.0  # a random tiny model never earns the binary reward


class TestEvalRecipe(RecipeContract):
    """tiny-cpu: the entries' ground truth through BFCL's protocol (a 100% pipeline check)."""

    recipe = "funreason_mt.eval"

    def check_result(self, result, run_dir):
        assert result.metrics["bfcl/accuracy/average"] == 1.0
        assert result.metrics["held_out/accuracy/average"] == 1.0
        assert (run_dir / "bfcl" / "scores.json").exists()
        assert "Held-out synthesized entries" in (run_dir / "report.md").read_text()


def test_old_names_are_errors_naming_the_new_keys():
    """One vocabulary: a round's reply cap is ``synthesis.max_steps_per_turn`` (was
    ``max_steps``) and "first N" is ``limit`` with null = all (0 once meant all): the old
    spellings are errors that say what to write, never silently taken."""
    import pytest

    from aworld_rl_core import registry
    from aworld_rl_core.config import load_config
    from aworld_rl_core.errors import ConfigError

    def load(recipe, *overrides):
        entry = registry.get_recipe(recipe)
        return load_config(entry.config_cls(), presets=entry.presets, overrides=list(overrides))

    with pytest.raises(ConfigError, match="synthesis.max_steps is not set here: .*_per_turn"):
        load("funreason_mt.synthesize", "synthesis.max_steps=3")
    cfg = load("funreason_mt.synthesize", "synthesis.max_steps_per_turn=3")
    assert cfg.synthesis.max_steps_per_turn == 3
    for recipe, key in [("funreason_mt.eval", "limit"), ("funreason_mt.sft", "data.limit")]:
        with pytest.raises(ConfigError, match=f"{key}: must be >= 1, got 0; null takes all"):
            load(recipe, f"{key}=0")
    assert load("funreason_mt.eval").limit is None
