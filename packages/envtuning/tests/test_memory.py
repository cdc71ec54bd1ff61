"""The per-GPU memory a verl launch of the paper preset needs (core's ``rl_memory_per_gpu``
through the verl backend's plan, whose arithmetic core's tests check by hand): the README's
figures. The curriculum has no estimate of its own; ``trainer.verl.dry_run`` prints core's."""

from aworld_rl_core import registry
from aworld_rl_core.backends.verl.backend import plan_memory
from aworld_rl_core.config import load_config


def _paper_trainer():
    entry = registry.get_recipe("envtuning.curriculum")
    cfg = load_config(entry.config_cls(), preset="paper", presets=entry.presets)
    return cfg.model.name_or_path, cfg.trainer


def test_paper_plan_memory_is_the_readme_figures():
    model, trainer = _paper_trainer()
    memory, note = plan_memory(model, trainer)
    assert "Qwen/Qwen2.5-7B-Instruct, 8 x 80 GiB, 65536 tokens per GPU per pass" in note
    assert "| training | **total** | **49.85** |" in note
    assert "| rollout | **total** | **78.42** |" in note
    assert "fits in 80 GiB" in note and "933k tokens per GPU" in note
    assert memory is not None and round(memory["total"], 2) == 78.42


def test_unknown_model_says_what_to_do():
    _, trainer = _paper_trainer()
    memory, note = plan_memory("no/such-model", trainer)
    assert memory is None
    assert "no memory estimate for model 'no/such-model'" in note and "config.json" in note
