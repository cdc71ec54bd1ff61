import json

import pytest

from aworld_rl_core.config import load_config
from aworld_rl_core.registry import get_recipe
from aworld_rl_core.runs import execute
from aworld_rl_core.testing.contracts import (
    DatasetContract,
    EnvironmentContract,
    PluginContract,
    RecipeContract,
    RewardContract,
)


class TestPlugin(PluginContract):
    plugin = "mypaper"
    expected = {
        "datasets": ["mypaper.topics"],
        "environments": ["mypaper.describe"],
        "rewards": ["mypaper.lowercase"],
        "recipes": ["mypaper.grpo"],
    }


class TestTopics(DatasetContract):
    dataset = "mypaper.topics"
    options = {"num_rows": 3, "seed": 1}

    def check_rows(self, rows):
        assert len(rows) == 3 and all(set(row) == {"topic"} for row in rows)


class TestDescribeEnv(EnvironmentContract):
    environment = "mypaper.describe"
    row = {"topic": "rain"}


class TestLowercaseReward(RewardContract):
    reward = "mypaper.lowercase"
    examples = [(["abcd", "AB!?", "ab C"], {}, [1.0, 0.0, 0.75])]


class TestGrpoRecipe(RecipeContract):
    recipe = "mypaper.grpo"
    tiny_cpu_overrides = ("trainer.max_steps=2",)  # the whole preset runs in the slow test

    def check_result(self, result, run_dir):
        assert result.metrics["global_step"] == 2
        assert 0.0 < result.metrics["reward_first"] <= 1.0


@pytest.mark.slow
def test_tiny_cpu_learns_the_toy_game(tmp_path, aworld_home):
    """The tiny-cpu preset: the mean reward of the last quarter of the steps beats the first."""
    entry = get_recipe("mypaper.grpo")
    cfg = load_config(entry.config_cls(), preset="tiny-cpu", presets=entry.presets)
    result, run = execute("mypaper.grpo", entry.run_fn(), cfg, output_dir=tmp_path, quiet=True)
    curve = [
        r["reward_mean"]
        for r in map(json.loads, (run.dir / "metrics.jsonl").read_text().splitlines())
        if "reward_mean" in r
    ]
    assert result.metrics["reward_last"] > result.metrics["reward_first"] + 0.05, curve
