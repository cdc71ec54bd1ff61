"""The parts of the llamafactory backend that need no LLaMA-Factory (they run in every env)."""

from __future__ import annotations

import functools
import json
import pickle
import subprocess
import sys

import pytest
from lf_samples import CALC_RECORD, make_job

from aworld_rl_core.backends.llamafactory import launch
from aworld_rl_core.backends.llamafactory.backend import LlamaFactoryBackend, _follow
from aworld_rl_core.backends.llamafactory.config import LlamaFactoryConfig
from aworld_rl_core.backends.llamafactory.launch import LlamaFactoryError
from aworld_rl_core.backends.llamafactory.probe import mean_token_cross_entropy
from aworld_rl_core.backends.llamafactory.worker import device_args
from aworld_rl_core.testing.contracts import BackendContract, heavy_modules_after
from aworld_rl_core.trainer_config import with_section


def test_train_args_map_our_config(tmp_path):
    job = make_job(tmp_path / "run", batch_size=8, micro_batch_size=2, save_steps=0)
    args = launch.build_train_args(
        job, tmp_path / "data", has_eval=True, resume_from=None, n_samples=8
    )
    assert args["stage"] == "sft" and args["do_train"] is True
    assert args["model_name_or_path"] == "tiny:qwen3"  # the worker substitutes the tiny path
    assert args["dataset"] == "train" and args["eval_dataset"] == "eval"
    assert args["dataset_dir"] == str((tmp_path / "data").resolve())
    assert args["output_dir"] == str(job.run.checkpoint_dir.resolve())
    assert args["per_device_train_batch_size"] == 2
    assert args["gradient_accumulation_steps"] == 4
    assert args["learning_rate"] == 1e-3 and args["max_steps"] == 2
    assert args["lr_scheduler_type"] == "constant"
    assert args["cutoff_len"] == 512 and args["mask_history"] is False
    assert args["template"] == "qwen" and args["finetuning_type"] == "full"
    assert args["save_strategy"] == "steps" and args["save_steps"] == 2**31 - 1
    assert args["overwrite_output_dir"] is True and "resume_from_checkpoint" not in args
    assert args["report_to"] == "none" and args["seed"] == 0
    assert "lora_rank" not in args and "deepspeed" not in args
    assert None not in args.values()


def test_train_args_lora_resume_and_template_from_tokenizer(tmp_path):
    lf = LlamaFactoryConfig(finetuning_type="lora", lora_rank=4, template=None)
    job = make_job(tmp_path / "run", sections={"llamafactory": lf}, save_steps=5)
    ckpt = job.run.checkpoint_dir / "checkpoint-5"
    args = launch.build_train_args(job, tmp_path / "data", has_eval=False, resume_from=ckpt)
    assert (args["lora_rank"], args["lora_alpha"], args["lora_target"]) == (4, 8, "all")
    assert "template" not in args  # LLaMA-Factory parses the tokenizer's chat template
    assert args["resume_from_checkpoint"] == str(ckpt)
    assert args["overwrite_output_dir"] is False and args["save_steps"] == 5
    assert "eval_dataset" not in args


def test_tokenizer_and_chat_template_overrides_are_refused(tmp_path):
    from dataclasses import replace

    job = make_job(tmp_path / "run")
    for model in (
        replace(job.model, tokenizer="/some/tokenizer"),
        replace(job.model, chat_template="t.jinja"),
    ):
        bad = replace(job, model=model)
        with pytest.raises(LlamaFactoryError, match="leave model"):
            launch.build_train_args(bad, tmp_path, has_eval=False, resume_from=None)


def test_per_turn_records_cut_after_each_assistant_turn():
    from aworld_rl_core.records import as_record

    parts = launch.per_turn_records(as_record(CALC_RECORD))
    assert [len(p.messages) for p in parts] == [3, 5]
    assert [p.messages[-1]["role"] for p in parts] == ["assistant", "assistant"]
    assert [p.id for p in parts] == ["calc-1#turn0", "calc-1#turn1"]
    assert parts[0].tools == parts[1].tools == as_record(CALC_RECORD).tools


def test_write_dataset_writes_sharegpt_and_dataset_info(tmp_path):
    n = launch.write_dataset([CALC_RECORD], tmp_path, "train", per_turn=True)
    assert n == 2
    info = json.loads((tmp_path / "dataset_info.json").read_text())
    assert info["train"]["formatting"] == "sharegpt" and info["train"]["file_name"] == "train.json"
    rows = json.loads((tmp_path / "train.json").read_text())
    assert [[t["from"] for t in r["conversations"]] for r in rows] == [
        ["human", "function_call"],
        ["human", "function_call", "observation", "gpt"],
    ]
    assert rows[0]["system"] == "You are a calculator."
    assert json.loads(rows[0]["tools"])[0]["name"] == "add"


def test_command_single_process_and_torchrun(tmp_path):
    spec = tmp_path / "spec.json"
    worker = ["-m", "aworld_rl_core.backends.llamafactory.worker", str(spec)]
    assert launch.command("/env/bin/python", 1, spec) == ["/env/bin/python", *worker]
    assert launch.command("py", 4, spec) == [
        "py",
        "-m",
        "torch.distributed.run",
        "--nproc_per_node=4",
        *worker,
    ]
    # DeepSpeed on one process goes through torchrun too (LLaMA-Factory refuses it otherwise)
    assert launch.command("py", 1, spec, deepspeed=True) == [
        "py",
        "-m",
        "torch.distributed.run",
        "--nproc_per_node=1",
        *worker,
    ]


@pytest.mark.parametrize("stage", [2, 3])
def test_zero_stage_writes_cores_zero_config_and_launches_through_torchrun(tmp_path, stage):
    """``trainer.llamafactory.zero_stage`` without a file of one's own: core's ZeRO config (the
    one hf-sft writes, precisions left to the worker) in ``<run>/llamafactory/``, passed as
    ``deepspeed``, the estimate sharded for ZeRO-3, and torchrun even on one GPU."""
    import yaml

    from aworld_rl_core.backends.hf_sft_launch import zero_config

    lf = LlamaFactoryConfig(zero_stage=stage, cpu_offload=stage == 2)
    job = make_job(tmp_path / "run", rows=[CALC_RECORD] * 4, sections={"llamafactory": lf})
    plan = LlamaFactoryBackend().plan(job)
    work = (tmp_path / "run" / "llamafactory").resolve()
    args = yaml.safe_load((work / "train_args.yaml").read_text())
    assert args["deepspeed"] == str(work / f"zero{stage}.json")
    written = json.loads((work / f"zero{stage}.json").read_text())
    assert written == zero_config(stage, bf16=None, cpu_offload=stage == 2)
    assert written["bf16"] == written["fp16"] == {"enabled": "auto"}
    assert ("offload_optimizer" in written["zero_optimization"]) == (stage == 2)
    assert plan.steps.engine_settings["deepspeed"] == args["deepspeed"]
    assert plan.processes[0].command[1:4] == ["-m", "torch.distributed.run", "--nproc_per_node=1"]
    assert any(p.startswith("deepspeed") for p in plan.packages)


def test_a_deepspeed_file_of_ones_own_takes_precedence(tmp_path):
    mine = tmp_path / "mine.json"
    mine.write_text(json.dumps({"zero_optimization": {"stage": 2}}))
    lf = LlamaFactoryConfig(deepspeed=str(mine), zero_stage=3)
    job = make_job(tmp_path / "run", rows=[CALC_RECORD] * 4, sections={"llamafactory": lf})
    plan = LlamaFactoryBackend().plan(job)
    assert plan.steps.engine_settings["deepspeed"] == str(mine)
    assert not (tmp_path / "run" / "llamafactory" / "zero3.json").exists()


def test_zero_stage_1_is_refused_with_the_choices(tmp_path):
    from aworld_rl_core.config import load_config
    from aworld_rl_core.errors import ConfigError

    with pytest.raises(ConfigError, match="zero_stage"):
        load_config(LlamaFactoryConfig, overrides=["zero_stage=1"])


def test_python_path_dir_links_our_packages_and_stubs_torchaudio(tmp_path):
    folder = launch.python_path_dir(tmp_path / "pp", stub_torchaudio=True)
    assert (folder / "aworld_rl_core").resolve() == (
        launch.Path(launch.__file__).resolve().parents[2]
    )
    code = "import torchaudio\ntry:\n    torchaudio.load('x.wav')\nexcept RuntimeError as e:\n"
    code += "    print('stub:', 'unsupported' in str(e))"
    env = launch.subprocess_env(folder)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "stub: True", out.stderr
    assert env["PYTHONPATH"].split(launch.os.pathsep)[0] == str(folder)
    again = launch.python_path_dir(tmp_path / "pp2", stub_torchaudio=False)
    assert not (again / "torchaudio").exists()


def test_write_loss_pickles_by_reference_and_refuses_lambdas(tmp_path):
    hook = functools.partial(mean_token_cross_entropy, segments=None)
    path = launch.write_loss(hook, tmp_path / "loss.pkl")
    assert pickle.loads(path.read_bytes()).func is mean_token_cross_entropy
    with pytest.raises(LlamaFactoryError, match="module-level"):
        launch.write_loss(lambda logits, labels, segments: 0.0, tmp_path / "bad.pkl")


def test_device_args():
    assert device_args("auto", cuda=False, bf16_ok=False) == {
        "use_cpu": True,
        "bf16": False,
        "fp16": False,
    }
    assert device_args("auto", cuda=True, bf16_ok=True) == {"bf16": True, "fp16": False}
    assert device_args("auto", cuda=True, bf16_ok=False) == {"bf16": False, "fp16": True}
    assert device_args("float32", cuda=True, bf16_ok=True) == {"bf16": False, "fp16": False}
    with pytest.raises(ValueError, match="needs a GPU"):
        device_args("bfloat16", cuda=False, bf16_ok=False)


def test_backend_refuses_rl_jobs_and_bad_python(tmp_path):
    from dataclasses import replace

    job = make_job(tmp_path / "run")
    with pytest.raises(LlamaFactoryError, match="supervised fine-tuning only"):
        LlamaFactoryBackend().train(replace(job, rewards=[lambda completions, **kw: [0.0]]))
    bad = replace(
        job,
        trainer=with_section(job.trainer, LlamaFactoryConfig(python=str(tmp_path / "no-python"))),
    )
    with pytest.raises(LlamaFactoryError, match="not an executable"):
        LlamaFactoryBackend().train(bad)


def test_backend_names_the_install_when_llamafactory_is_missing(tmp_path):
    from dataclasses import replace

    bare = tmp_path / "bare-python"  # a python that cannot find llamafactory
    bare.write_text(f'#!/bin/sh\nexec {sys.executable} -I -S "$@"\n')
    bare.chmod(0o755)
    job = make_job(tmp_path / "run")
    job = replace(job, trainer=with_section(job.trainer, LlamaFactoryConfig(python=str(bare))))
    with pytest.raises(LlamaFactoryError, match=r"not installed for .*llamafactory==0\.9\.5"):
        LlamaFactoryBackend().train(job)


class _FinishedProcess:
    """Stands in for a worker process that has already exited."""

    def poll(self):
        return 0


def test_follow_hands_every_event_over_and_yields_once_per_step(tmp_path):
    events = tmp_path / "events.jsonl"
    records = [
        {"event": "begin", "step": 3, "max_steps": 6},
        {"event": "log", "step": 4, "metrics": {"loss": 2.0}},
        {"event": "save", "step": 4, "path": "checkpoint-4"},
        {"event": "log", "step": 6, "metrics": {"loss": 1.0}},
        {"event": "end", "step": 6},
    ]
    text = "".join(json.dumps(r) + "\n" for r in records)
    events.write_text(text + '{"event": "log", "st')  # a torn last line is left for later
    seen = []
    steps = list(_follow(_FinishedProcess(), events, seen.append))
    assert steps == [4, 5, 6]
    assert seen == records


class TestLlamaFactoryContract(BackendContract):
    backend = "llamafactory"
    kind = "sft"
    trains_on_cpu = False  # its training runs in test_lf_train.py (LLaMA-Factory's own CLI)


def test_backend_import_is_light():
    code = (
        "import aworld_rl_core.backends.llamafactory.backend as b\n"
        "import aworld_rl_core.backends.llamafactory.launch\n"
        "assert b.LlamaFactoryBackend.name == 'llamafactory'\n"
    )
    assert heavy_modules_after(code, ("torch", "transformers", "llamafactory")) == []


def test_the_planned_deepspeed_is_the_one_the_llamafactory_extra_installs(tmp_path):
    """The plan names the DeepSpeed range ``aworld-rl-core[llamafactory]`` installs (it said
    ``<=0.18.4`` while the extra installs ``<=0.16.4``)."""
    from importlib.metadata import requires

    from packaging.requirements import Requirement

    job = make_job(
        tmp_path / "run",
        rows=[CALC_RECORD] * 4,
        sections={"llamafactory": LlamaFactoryConfig(zero_stage=3)},
    )
    (planned,) = [p for p in LlamaFactoryBackend().plan(job).packages if "deepspeed" in p]
    (deepspeed,) = [
        r
        for r in map(Requirement, requires("aworld-rl-core") or [])
        if r.name == "deepspeed" and r.marker and r.marker.evaluate({"extra": "llamafactory"})
    ]
    assert Requirement(planned.split(" ")[0]).specifier == deepspeed.specifier
