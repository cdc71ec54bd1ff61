"""An override changes exactly its key, for every core recipe and preset.

A paper package checks its own recipes with ``RecipeContract`` and the override values its keys
need (a type alone cannot fill an agent's client section or a reward name).
"""

import pytest
import yaml

from aworld_rl_core import cli, registry
from aworld_rl_core.config import list_presets
from aworld_rl_core.testing.contracts import override_problems

CASES = [
    (recipe, preset)
    for recipe in registry.names("recipes")
    if recipe.startswith("core.")
    for preset in [None, *list_presets(registry.get_recipe(recipe).presets)]
]


@pytest.mark.parametrize(("recipe", "preset"), CASES, ids=[f"{r}:{p or '-'}" for r, p in CASES])
def test_override_changes_exactly_that_key(recipe, preset):
    assert override_problems(recipe, preset) == []


def test_show_config_keeps_the_recipes_trainer(capsys):
    assert cli.main(["show-config", "core.grpo"]) == 0
    base = yaml.safe_load(capsys.readouterr().out)
    assert cli.main(["show-config", "core.grpo", "trainer.seed=1"]) == 0
    changed = yaml.safe_load(capsys.readouterr().out)
    assert changed["trainer"]["batch_size"] == base["trainer"]["batch_size"] == 4
    assert changed["trainer"]["rl"] == base["trainer"]["rl"]
    assert changed["trainer"]["seed"] == 1 and base["trainer"]["seed"] == 0


def test_help_shows_the_presets_values_and_bounds(demo_registry, capsys):
    assert cli.main(["demo.count", "--help", "--preset", "tiny-cpu"]) == 0
    out = capsys.readouterr().out
    assert "steps (int, default 4)" in out and "defaults: with tiny-cpu" in out
    assert cli.main(["core.grpo", "--help"]) == 0
    out = capsys.readouterr().out
    assert "trainer.batch_size (int, >= 1, default 4)" in out
    assert "trainer.rl.top_p (float, > 0, <= 1, default 1.0)" in out
