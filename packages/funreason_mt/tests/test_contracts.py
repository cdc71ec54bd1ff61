"""Core's contracts for the plugin and every recipe (presets, overrides, tiny-cpu runs)."""

import json

from aworld_rl_core.testing.contracts import PluginContract, RecipeContract
from aworld_rl_funreason_mt.graph import ToolGraph


class TestPlugin(PluginContract):
    plugin = "funreason_mt"
    expected = {"recipes": ["funreason_mt.graph", "funreason_mt.sft", "funreason_mt.rl"]}


class TestGraphRecipe(RecipeContract):
    recipe = "funreason_mt.graph"

    def check_result(self, result, run_dir):
        graph = ToolGraph.load(run_dir / "graph.json")
        assert result.metrics["tools"] == len(graph.tools) == 128
        assert result.metrics["edges_probe"] > 0 and result.metrics["edges_name_type"] > 0
        assert (run_dir / "graph.png").stat().st_size > 10_000
        report = (run_dir / "report.md").read_text()
        assert "| TravelAPI | 18 |" in report and "`authenticate_travel` -> `book_flight`" in report


class TestSftRecipe(RecipeContract):
    recipe = "funreason_mt.sft"

    def check_result(self, result, run_dir):
        assert result.metrics["trajectories"] == 2.0 and result.metrics["global_step"] == 2
        assert result.metrics["supervised_tokens"] > 0 and result.checkpoints
        assert result.metrics["samples"] > 2  # split per assistant turn


class TestRlRecipe(RecipeContract):
    recipe = "funreason_mt.rl"

    def check_result(self, result, run_dir):
        assert result.metrics["train_entries"] == 2.0 and result.metrics["global_step"] == 1
        assert result.checkpoints and result.checkpoints[-1].exists()
        steps = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
        played = [s for s in steps if "episode/turns" in s]
        assert played and played[0]["episode/turns"] >= 1  # episodes ran in core's BFCL env
        assert played[0]["reward_mean"] == 0.0  # a random tiny model never earns the binary reward
