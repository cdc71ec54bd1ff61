"""A killed warm start resumes from its latest checkpoint (issue 29, item 10): main saved none,
so a kill at step 150 of 300 started it again from step 1."""

import pytest

from aworld_rl_core.config import load_config
from aworld_rl_core.runs import Run


def test_a_killed_warm_start_continues_from_its_checkpoint(aworld_home, tmp_path, monkeypatch):
    import torch
    import transformers
    from safetensors.torch import load_file

    from aworld_rl_envtuning.data import bfcl_split
    from aworld_rl_envtuning.recipes import warm_start as module
    from aworld_rl_envtuning.recipes.curriculum import CurriculumConfig
    from aworld_rl_envtuning.recipes.training import local_model_path

    cfg = load_config(
        CurriculumConfig,
        preset="tiny-cpu",
        presets="aworld_rl_envtuning:configs/curriculum",
        overrides=[
            "warm_start.steps=4",
            "warm_start.save_steps=2",
            "warm_start.entries=1",
            "warm_start.batch_size=1",
        ],
    )
    assert module.sft_trainer(cfg.warm_start, 0).save_steps == 2
    # the greedy before/after measurements are not what is tested here
    measured = {"random start": {"reward": 0.0}, "after": {"reward": 0.0}}
    monkeypatch.setattr(module, "_before_after", lambda *args: measured)
    split = bfcl_split(cfg.data)
    start = local_model_path(cfg.model.name_or_path)
    real_step, steps = transformers.Trainer.training_step, []

    def step(kill_at):
        def training_step(self, *args, **kwargs):
            steps.append(self.state.global_step + 1)
            if steps[-1] == kill_at:
                raise KeyboardInterrupt("kill -9 in this step")
            return real_step(self, *args, **kwargs)

        return training_step

    def warm(directory, resume):
        run = Run(directory, quiet=True, resume=resume)
        try:
            return module.warm_start(cfg, start, split, run)
        finally:
            run.close()

    monkeypatch.setattr(transformers.Trainer, "training_step", step(kill_at=3))
    with pytest.raises(KeyboardInterrupt):
        warm(tmp_path / "killed", resume=False)
    saved = tmp_path / "killed" / "warm-start" / "checkpoints"
    assert sorted(p.name for p in saved.glob("checkpoint-*")) == ["checkpoint-2"]
    steps.clear()
    monkeypatch.setattr(transformers.Trainer, "training_step", step(kill_at=None))
    resumed = warm(tmp_path / "killed", resume=True)
    assert steps == [3, 4]  # main: [1, 2, 3, 4], the warm start from the beginning
    steps.clear()
    whole = warm(tmp_path / "whole", resume=False)
    assert steps == [1, 2, 3, 4]
    a = load_file(f"{resumed}/model.safetensors")
    b = load_file(f"{whole}/model.safetensors")
    assert a.keys() == b.keys()
    for name in a:
        assert torch.allclose(a[name], b[name], rtol=0, atol=1e-6), name
