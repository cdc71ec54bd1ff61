"""The per-GPU memory note a verl dry run prints (core's ``rl_memory_per_gpu``, whose
arithmetic core's tests check by hand): the README's figures for the paper preset."""

from aworld_rl_core import registry
from aworld_rl_core.config import load_config
from aworld_rl_envtuning.recipes.training import memory_note


def _paper_trainer():
    entry = registry.get_recipe("envtuning.curriculum")
    cfg = load_config(entry.config_cls(), preset="paper", presets=entry.presets)
    return cfg.model.name_or_path, cfg.trainer


def test_paper_note_prints_the_readme_figures():
    model, trainer = _paper_trainer()
    note = memory_note(model, trainer)
    assert "Qwen/Qwen2.5-7B-Instruct, 8 x 80 GiB, 65536 tokens per micro-batch" in note
    assert "| training | **total** | **49.85** |" in note
    assert "| rollout | **total** | **78.42** |" in note
    assert "fits in 80 GiB" in note and "933k tokens per GPU" in note


def test_unknown_model_says_what_to_do():
    _, trainer = _paper_trainer()
    note = memory_note("no/such-model", trainer)
    assert "no memory estimate for model 'no/such-model'" in note and "config.json" in note
