"""verl launches that fit bigger jobs (dynamic batch size, fused kernels, engine limits) and the
in-run stop rule in verl's driver (``StopRuleCallback``), without verl."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "verl"))  # verl_toys (no verl import)

from verl_toys import counter_env

from aworld_rl_core.backends.base import TrainJob
from aworld_rl_core.backends.validation import HISTORY_FILE, STOP_FILE, InRunValidation
from aworld_rl_core.backends.verl.backend import VerlBackend
from aworld_rl_core.backends.verl.config import VerlConfig
from aworld_rl_core.backends.verl.launcher import STOP_CALLBACK
from aworld_rl_core.backends.verl.stopping import StopRuleCallback, validation_metrics
from aworld_rl_core.engine import Limits
from aworld_rl_core.errors import ConfigError
from aworld_rl_core.models.config import ModelConfig
from aworld_rl_core.refs import Ref
from aworld_rl_core.runs import Run
from aworld_rl_core.trainer_config import RLConfig, TrainerConfig

pytest.importorskip("pyarrow.parquet")
AR = "actor_rollout_ref"
ROWS = [{"prompt": f"count to {t}", "target": t} for t in (1, 2, 3, 4)]
STOP = Ref("stop_rules:after", kwargs={"validations": 2})


def launch(tmp_path, validation=None, save_steps=0, **verl):
    rl = RLConfig(group_size=4, max_response_tokens=1024)
    cfg = TrainerConfig(
        backend="verl",
        batch_size=2,
        max_steps=12,
        save_steps=save_steps,
        rl=rl,
        sections={
            "verl": VerlConfig(dry_run=True, resolve_config=False, max_prompt_length=512, **verl)
        },
    )
    job = TrainJob(
        model=ModelConfig(name_or_path="Qwen/Qwen2.5-0.5B-Instruct"),
        trainer=cfg,
        run=Run(tmp_path / "run", quiet=True),
        train_rows=ROWS,
        eval_rows=ROWS[:2],
        env=counter_env,
        validation=validation,
    )
    result = VerlBackend().train(job)
    record = json.loads(result.outputs["launch"].read_text())
    return dict(o.split("=", 1) for o in record["overrides"])


def test_dynamic_batch_size_fused_kernels_and_engine_limits(tmp_path):
    o = launch(
        tmp_path,
        dynamic_batch_size=True,
        max_tokens_per_gpu=4096,
        fused_kernels=True,
        entropy_checkpointing=True,
        max_num_batched_tokens=8192,
        max_model_len=2048,
    )
    for key in ("actor.use_dynamic_bsz", "ref.log_prob_use_dynamic_bsz"):
        assert o[f"{AR}.{key}"] == "true"
    assert o[f"{AR}.rollout.log_prob_use_dynamic_bsz"] == "true"
    for key in ("actor.ppo_max_token_len_per_gpu", "ref.log_prob_max_token_len_per_gpu"):
        assert o[f"{AR}.{key}"] == "4096"
    assert o[f"{AR}.rollout.log_prob_max_token_len_per_gpu"] == "4096"
    assert o[f"{AR}.model.use_fused_kernels"] == "true"
    assert o[f"{AR}.actor.entropy_checkpointing"] == "true"
    assert o[f"{AR}.rollout.max_num_batched_tokens"] == "8192"
    assert o[f"{AR}.rollout.max_model_len"] == "2048"
    assert o[f"{AR}.actor.checkpoint.save_contents"] == "[model,optimizer,extra,hf_model]"
    plain = launch(tmp_path / "plain")
    assert f"{AR}.actor.use_dynamic_bsz" not in plain
    assert f"{AR}.rollout.max_model_len" not in plain
    with pytest.raises(ConfigError, match="smaller than one sequence"):
        launch(tmp_path / "small", dynamic_batch_size=True, max_tokens_per_gpu=1000)


def test_in_run_validation_sets_test_freq_and_the_stop_callback(tmp_path):
    o = launch(tmp_path, InRunValidation(every=3, stop=STOP, before_train=True))
    assert (o["trainer.test_freq"], o["trainer.val_before_train"]) == ("3", "true")
    assert o["trainer.checkpoint_callback_class"] == STOP_CALLBACK
    rule = json.loads(o["+trainer.aworld_stop_rule"].strip("'"))
    assert Ref.from_json(rule) == STOP
    assert o["trainer.save_freq"] == "3"  # the rule runs at saves
    assert (
        launch(tmp_path / "b", InRunValidation(every=3, stop=STOP), save_steps=6)[
            "trainer.save_freq"
        ]
        == "6"
    )
    no_rule = launch(tmp_path / "c", InRunValidation(every=3))
    assert (
        no_rule["trainer.test_freq"] == "3" and "trainer.checkpoint_callback_class" not in no_rule
    )
    with pytest.raises(ConfigError, match="test_freq=2 disagrees"):
        launch(tmp_path / "d", InRunValidation(every=3), test_freq=2)
    with pytest.raises(ConfigError, match="verl validates with the training episodes' limits"):
        launch(tmp_path / "e", InRunValidation(every=3, limits=Limits(max_new_tokens=8)))


def test_validation_metrics_average_data_sources_at_the_largest_n():
    data = {
        "val-core/base/reward/mean@1": 0.5,
        "val-core/long/reward/mean@1": 0.25,
        "val-aux/base/env/return/mean@1": 0.5,
        "val-aux/long/env/return/mean@1": 0.0,
        "val-aux/base/reward/std@1": 9.0,
        "val-aux/num_turns/mean": 3.0,
        "actor/grad_norm": 1.0,
    }
    assert validation_metrics(data) == {"reward": 0.375, "env/return": 0.25}
    assert validation_metrics({"val-core/a/reward/mean@1": 0.1, "val-core/a/reward/mean@4": 0.3})[
        "reward"
    ] == pytest.approx(0.3)


def _records(*steps):
    """verl file-logger lines: a training record per step, a validation at each given step."""
    out = []
    for step in range(1, max(steps) + 1):
        data = {"actor/grad_norm": float(step), "critic/score/mean": 0.1}
        if step in steps:
            data["val-core/bfcl/reward/mean@1"] = step / 10
        out.append({"step": step, "data": data})
    return "".join(json.dumps(r) + "\n" for r in out)


def _config(tmp_path, rule=STOP):
    trainer = SimpleNamespace(
        aworld_stop_rule=json.dumps(rule.to_json()),
        default_local_dir=str(tmp_path / "ckpt"),
        project_name="p",
        experiment_name="e",
    )
    return SimpleNamespace(trainer=trainer)


def test_stop_callback_ends_the_run_at_the_save_after_the_rule_fires(tmp_path, monkeypatch):
    metrics = tmp_path / "verl_metrics.jsonl"
    monkeypatch.setenv("VERL_FILE_LOGGER_PATH", str(metrics))
    callback = StopRuleCallback(_config(tmp_path))
    trainer = SimpleNamespace(total_training_steps=100)
    metrics.write_text(_records(2))  # steps 1-2 logged; the save of step 3 sees one validation
    callback.on_save(trainer, global_step=3, checkpoint_dir="x")
    assert trainer.total_training_steps == 100
    metrics.write_text(_records(2, 4))
    callback.on_save(trainer, global_step=5, checkpoint_dir="x")
    assert trainer.total_training_steps == 5  # validate step 5, log it, end
    saved = [
        json.loads(line) for line in (tmp_path / "ckpt" / HISTORY_FILE).read_text().splitlines()
    ]
    assert [(e["step"], e["val/reward"], e["grad_norm"]) for e in saved] == [
        (2.0, 0.2, 1.5),
        (4.0, 0.4, 3.5),
    ]
    assert json.loads((tmp_path / "ckpt" / STOP_FILE).read_text()) == {"step": 5, "validations": 2}


def test_a_relaunch_keeps_the_validations_up_to_its_checkpoint(tmp_path, monkeypatch):
    metrics = tmp_path / "verl_metrics.jsonl"
    monkeypatch.setenv("VERL_FILE_LOGGER_PATH", str(metrics))
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "latest_checkpointed_iteration.txt").write_text("4")
    metrics.write_text(_records(2, 4, 6))  # the killed run validated step 6 after its last save
    callback = StopRuleCallback(
        _config(tmp_path, Ref("stop_rules:after", kwargs={"validations": 3}))
    )
    assert [e["step"] for e in callback.saved] == [2.0, 4.0]
    metrics.write_text(_records(5))  # verl truncated its log; the resumed run logs steps 5...
    trainer = SimpleNamespace(total_training_steps=100)
    callback.on_save(trainer, global_step=6, checkpoint_dir="x")
    assert trainer.total_training_steps == 6  # 2, 4 (killed run) + 5 (this run)


def test_backend_reports_the_hf_model_and_the_stop(tmp_path):
    checkpoints = tmp_path / "checkpoints"
    (checkpoints / "global_step_5" / "actor" / "huggingface").mkdir(parents=True)
    (checkpoints / STOP_FILE).write_text(json.dumps({"step": 5, "validations": 2}))
    (checkpoints / HISTORY_FILE).write_text(json.dumps({"step": 4.0, "val/reward": 0.4}) + "\n")
    outputs: dict = {}
    metrics = VerlBackend._validation_result(checkpoints, outputs)
    assert metrics == {"val/reward": 0.4, "validations": 1.0, "stopped_early": 1.0}
    assert outputs["validation"] == checkpoints / HISTORY_FILE
