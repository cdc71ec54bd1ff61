"""Core's contract tests for the FunReason plugin and recipes."""

from __future__ import annotations

from typing import ClassVar

from aworld_rl_core.testing.contracts import PluginContract, RecipeContract


class TestPlugin(PluginContract):
    plugin = "funreason"
    expected: ClassVar = {
        "recipes": ("funreason.refine", "funreason.sft", "funreason.self-refine", "funreason.eval"),
        "losses": ("funreason.srml",),
        "datasets": ("funreason.samples", "funreason.bfcl"),
    }


class TestRefineRecipe(RecipeContract):
    recipe = "funreason.refine"

    def check_result(self, result, run_dir):
        assert result.metrics["samples"] == 6
        assert (run_dir / "fcdr" / "kept.jsonl").exists()


class TestSftRecipe(RecipeContract):
    recipe = "funreason.sft"
    run_tiny_cpu = False  # test_sft_recipe.py runs it with value checks


class TestSelfRefineRecipe(RecipeContract):
    recipe = "funreason.self-refine"
    run_tiny_cpu = False  # test_self_refine.py runs it


class TestEvalRecipe(RecipeContract):
    recipe = "funreason.eval"
    run_tiny_cpu = False  # test_eval_recipe.py runs it
