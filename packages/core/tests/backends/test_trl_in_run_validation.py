"""In-run validation on the ``trl`` backend: validations every N steps, a stop rule that ends
the run with a checkpoint, and a killed run that resumes the same run (the KL reference stays
the starting policy, the optimizer state is restored)."""

from __future__ import annotations

import copy
import json
from dataclasses import replace

import pytest
from small_vocab import small_vocab_model_dir

from aworld_rl_core.backends import trl_grpo
from aworld_rl_core.backends.base import TrainJob
from aworld_rl_core.backends.validation import HISTORY_FILE, STOP_FILE, InRunValidation
from aworld_rl_core.engine import Limits
from aworld_rl_core.envs.toy import toy_tasks
from aworld_rl_core.errors import ConfigError
from aworld_rl_core.models.config import ModelConfig
from aworld_rl_core.refs import Ref
from aworld_rl_core.runs import Run
from aworld_rl_core.trainer_config import RLConfig, TrainerConfig

pytest.importorskip("trl")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return small_vocab_model_dir(tmp_path_factory.mktemp("small-vocab"))


def make_job(run_dir, model_dir, validation, *, resume=False, **trainer):
    rl = RLConfig(group_size=2, max_turns=2, max_new_tokens=6, max_response_tokens=80, kl_coef=0.1)
    settings = dict(learning_rate=1e-2, batch_size=2, micro_batch_size=4, seed=0, **trainer)
    return TrainJob(
        model=ModelConfig(name_or_path=str(model_dir)),
        trainer=TrainerConfig(rl=rl, **settings),
        run=Run(run_dir, quiet=True, resume=resume),
        train_rows=toy_tasks()[:8],
        eval_rows=toy_tasks()[8:10],
        env=Ref.named("core.toy-lowercase", {"turns": 2}),
        validation=validation,
    )


def history(run_dir):
    return [json.loads(line) for line in (run_dir / HISTORY_FILE).read_text().splitlines()]


def test_the_stop_rule_ends_the_run_after_a_validation_with_its_checkpoint(
    model_dir, tmp_path, monkeypatch
):
    from aworld_rl_core.backends import trl_trainer

    own = Limits(max_turns=3, max_new_tokens=6)  # validation episodes' own limits
    rule = InRunValidation(
        every=2, stop=Ref("stop_rules:after", kwargs={"validations": 2}), limits=own
    )
    play, seen = trl_trainer.EpisodeRollout.play, []

    def recording(self, model, tokenizer, rows, **kwargs):
        seen.append(kwargs.get("limits"))
        return play(self, model, tokenizer, rows, **kwargs)

    monkeypatch.setattr(trl_trainer.EpisodeRollout, "play", recording)
    result = trl_grpo.TrlGrpoBackend().train(make_job(tmp_path, model_dir, rule, max_steps=8))
    # training episodes: the rollout's limits; the two validations: their own
    assert seen.count(None) == 4 and [x for x in seen if x is not None] == [own, own]
    assert result.metrics["global_step"] == 4.0 and result.metrics["stopped_early"] == 1.0
    assert [p.name for p in result.checkpoints] == ["checkpoint-4"]
    saved = history(tmp_path)
    assert [e["step"] for e in saved] == [2.0, 4.0]
    for entry in saved:  # greedy episodes of the 2 eval rows, and the period's gradient norm
        assert 0.0 <= entry["val/reward"] <= 1.0 and entry["grad_norm"] > 0.0
    assert entry["val/reward"] == result.metrics["val/reward"]
    assert json.loads((tmp_path / STOP_FILE).read_text()) == {"step": 4, "validations": 2}
    logged = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in logged if "val/reward" in r] == [2, 4]


def test_a_killed_run_resumes_with_the_same_reference_and_optimizer(
    model_dir, tmp_path, monkeypatch
):
    import torch
    from safetensors.torch import load_file
    from transformers import TrainerCallback

    from aworld_rl_core.backends import trl_trainer

    initial = load_file(model_dir / "model.safetensors")
    every = InRunValidation(every=2, stop="stop_rules:never")
    backend = trl_grpo.TrlGrpoBackend()
    play, calls = trl_trainer.EpisodeRollout.__call__, []

    def killed_at_step_3(self, prompts, trainer):
        calls.append(trainer.state.global_step)
        if trainer.state.global_step == 2:
            raise KeyboardInterrupt("killed in step 3")
        return play(self, prompts, trainer)

    monkeypatch.setattr(trl_trainer.EpisodeRollout, "__call__", killed_at_step_3)
    with pytest.raises(KeyboardInterrupt):
        backend.train(make_job(tmp_path, model_dir, every, max_steps=4, save_steps=2))
    assert [e["step"] for e in history(tmp_path)] == [2.0]
    monkeypatch.setattr(trl_trainer.EpisodeRollout, "__call__", play)

    seen = {}

    class Probe(TrainerCallback):
        def __init__(self, trainer):
            self.trainer = trainer

        def on_train_begin(self, args, state, control, **kwargs):
            seen["step"] = state.global_step
            seen["optimizer"] = copy.deepcopy(self.trainer.optimizer.state_dict())

        def on_train_end(self, args, state, control, **kwargs):
            seen["ref"] = {
                k: v.detach().clone() for k, v in self.trainer.ref_model.state_dict().items()
            }
            seen["policy"] = {
                k: v.detach().clone() for k, v in self.trainer.model.state_dict().items()
            }

    build = backend.build_trainer

    def probed(job):
        trainer, callback = build(job)
        trainer.add_callback(Probe(trainer))
        return trainer, callback

    monkeypatch.setattr(backend, "build_trainer", probed)
    job = make_job(tmp_path, model_dir, every, resume=True, max_steps=4, save_steps=2)
    result = backend.train(job)

    assert seen["step"] == 2 and result.metrics["global_step"] == 4.0
    saved = torch.load(
        tmp_path / "checkpoints" / "checkpoint-2" / "optimizer.pt", weights_only=True
    )
    restored = seen["optimizer"]["state"]
    assert saved["state"].keys() == restored.keys() and saved["state"]
    for index, state in saved["state"].items():
        for name in ("exp_avg", "exp_avg_sq"):
            assert torch.equal(state[name], restored[index][name]), (index, name)
    for name, weight in initial.items():  # the reference is the starting policy, still
        assert torch.equal(seen["ref"][name], weight), name
    assert any(not torch.equal(seen["policy"][n], w) for n, w in initial.items())
    assert [e["step"] for e in history(tmp_path)] == [2.0, 4.0]


def test_in_run_validation_needs_eval_rows_and_an_importable_rule(model_dir, tmp_path):
    job = make_job(tmp_path, model_dir, InRunValidation(every=1))
    with pytest.raises(ValueError, match="eval_rows"):
        trl_grpo.check_job(replace(job, eval_rows=[]))
    with pytest.raises(ConfigError, match="import path"):
        InRunValidation(every=2, stop="core.some-name")
    with pytest.raises(ConfigError, match="every >= 1"):
        InRunValidation(every=0)


def test_the_grad_norm_a_stop_rule_reads_survives_a_resume_between_validations(tmp_path):
    """Validations every 2 steps, a checkpoint at step 3 and a kill in step 4: the resumed
    validation at step 4 averages the norms of steps 3 and 4, as the uninterrupted run does
    (main lost step 3's, kept only in memory, and recorded 4.0 instead of 3.5)."""
    from types import SimpleNamespace

    from aworld_rl_core.backends import trl_trainer

    norms = {1: 1.0, 2: 2.0, 3: 3.0, 4: 4.0}

    def drive(run_dir, steps, log_history, begin_at):
        run = Run(run_dir, quiet=True)
        callback = trl_trainer.ValidationCallback(
            InRunValidation(every=2), lambda model: {"reward": 0.5}, run
        )
        state = SimpleNamespace(global_step=begin_at, max_steps=4, log_history=log_history)
        control = SimpleNamespace(should_log=False, should_save=False, should_training_stop=False)
        callback.on_train_begin(None, state, control)
        for step in steps:
            state.global_step = step
            callback.on_step_end(None, state, control)
            logs = {"grad_norm": norms[step]}
            state.log_history.append({**logs, "step": step})
            callback.on_log(None, state, control, logs=logs)
        run.close()
        return [(e["step"], e["grad_norm"]) for e in history(run_dir)]

    whole = drive(tmp_path / "whole", [1, 2, 3, 4], [], 0)
    assert whole == [(2.0, 1.5), (4.0, 3.5)]
    killed = drive(tmp_path / "killed", [1, 2, 3], [], 0)  # killed in step 4
    checkpoint_3 = [{"grad_norm": norms[s], "step": s} for s in (1, 2, 3)]
    resumed = drive(tmp_path / "killed", [4], checkpoint_3, 3)
    assert killed == [(2.0, 1.5)] and resumed == whole
