"""Core's contract tests for the trl backend, the toy environment and the core.grpo recipe."""

from __future__ import annotations

from aworld_rl_core.testing.contracts import BackendContract, EnvironmentContract, RecipeContract


class TestTrlBackend(BackendContract):
    backend = "trl"


class TestLowercaseEnv(EnvironmentContract):
    environment = "core.toy-lowercase"
    row = {"topic": "rain"}
    options = {"turns": 2}


class TestGrpoRecipe(RecipeContract):
    recipe = "core.grpo"
    run_tiny_cpu = False  # tests/test_grpo_recipe.py runs tiny-cpu (and resumes it)
