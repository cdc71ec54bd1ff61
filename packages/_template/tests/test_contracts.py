from aworld_rl_core.testing.contracts import PluginContract, RecipeContract, RewardContract


class TestPlugin(PluginContract):
    plugin = "mypaper"
    expected = {"recipes": ["mypaper.score"], "rewards": ["mypaper.exact"]}


class TestScoreRecipe(RecipeContract):
    recipe = "mypaper.score"

    def check_result(self, result, run_dir):
        assert result.metrics == {"accuracy": 0.5}


class TestExactReward(RewardContract):
    reward = "mypaper.exact"
    examples = [(["42", " 7 ", "x"], {"answer": ["42", "7", "y"]}, [1.0, 1.0, 0.0])]
