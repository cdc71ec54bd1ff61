"""LLaMA-Factory's own parser accepts the arguments a launch plan writes, DeepSpeed ZeRO-3
included (the llamafactory extra installs DeepSpeed; without it the parser refuses them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from lf_samples import CALC_RECORD, make_job

pytest.importorskip("llamafactory")

from aworld_rl_core.backends.llamafactory.backend import LlamaFactoryBackend
from aworld_rl_core.backends.llamafactory.config import LlamaFactoryConfig

ZERO3 = {
    "train_batch_size": "auto",
    "train_micro_batch_size_per_gpu": "auto",
    "gradient_accumulation_steps": "auto",
    "gradient_clipping": "auto",
    "bf16": {"enabled": "auto"},
    "zero_optimization": {"stage": 3, "stage3_gather_16bit_weights_on_model_save": True},
}

PROBE = """
import json, sys, yaml
import deepspeed.ops  # no JIT build of the CPU shared-memory allreduce op (minutes of C++, a
deepspeed.ops.__compatible_ops__["deepspeed_shm_comm"] = False  # shared lock): parsing needs none
from llamafactory.hparams import get_train_args
from transformers.integrations import is_deepspeed_zero3_enabled
args = yaml.safe_load(open(sys.argv[1]))
model, data, training, finetuning, _ = get_train_args(args)
result = {
    "zero3": is_deepspeed_zero3_enabled(), "max_steps": training.max_steps,
    "accumulation": training.gradient_accumulation_steps,
    "save_total_limit": training.save_total_limit, "drop_last": training.dataloader_drop_last,
}
if len(sys.argv) > 2:  # then DeepSpeed's own parser, once transformers filled the "auto"s
    from deepspeed.runtime.config import DeepSpeedConfig
    from aworld_rl_core.models import load_model_and_tokenizer
    from aworld_rl_core.models.config import ModelConfig
    tiny, _ = load_model_and_tokenizer(ModelConfig(name_or_path=sys.argv[2]))
    hf = training.hf_deepspeed_config
    hf.trainer_config_finalize(training, tiny, training.max_steps)
    ds = DeepSpeedConfig(hf.config)
    result.update(stage=int(ds.zero_optimization_stage), train_batch_size=ds.train_batch_size,
                  micro=ds.train_micro_batch_size_per_gpu,
                  ds_accumulation=ds.gradient_accumulation_steps,
                  clipping=ds.gradient_clipping)
print("RESULT " + json.dumps(result))
"""


def _parse(tmp_path, args_file, *probe_args):
    """Run the probe as one torchrun rank; its RESULT."""
    (tmp_path / "stub" / "torchaudio").mkdir(parents=True, exist_ok=True)
    (tmp_path / "stub" / "torchaudio" / "__init__.py").write_text("")
    env = {
        **os.environ,
        # one torchrun rank: LLaMA-Factory takes DeepSpeed only in distributed mode
        "RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1",
        "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29531",
        "PYTHONPATH": str(tmp_path / "stub"),
    }  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(args_file), *probe_args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line.removeprefix("RESULT "))


def test_zero_stage_plans_pass_llamafactory_transformers_and_deepspeed(tmp_path):
    """``trainer.llamafactory.zero_stage=3`` (the FunReason-MT paper preset's setting; no file
    of one's own): LLaMA-Factory's ``get_train_args`` takes the written config, transformers
    fills its ``"auto"`` values and DeepSpeed's ``DeepSpeedConfig`` accepts the result, with
    the plan's batch arithmetic (micro 1 x 1 rank x 4 accumulation = 4, clipping 1.0)."""
    import yaml

    lf = LlamaFactoryConfig(zero_stage=3, extra_args={})
    job = make_job(
        tmp_path / "run",
        rows=[CALC_RECORD] * 8,
        batch_size=4,
        micro_batch_size=1,
        max_steps=2,
        max_grad_norm=1.0,
        sections={"llamafactory": lf},
    )
    plan = LlamaFactoryBackend().plan(job)
    args_file = tmp_path / "run" / "llamafactory" / "train_args.yaml"
    args = yaml.safe_load(args_file.read_text())
    assert args["deepspeed"].endswith("llamafactory/zero3.json")
    args["model_name_or_path"] = str(tmp_path / "model")  # the parser does not load the model
    args_file.write_text(yaml.safe_dump(args))
    got = _parse(tmp_path, args_file, "tiny:qwen3")
    assert got == {
        "zero3": True,
        "max_steps": 2,
        "accumulation": 4,
        "save_total_limit": 3,
        "drop_last": True,
        "stage": 3,
        "train_batch_size": 4,
        "micro": 1,
        "ds_accumulation": 4,
        "clipping": 1.0,
    }
    assert (plan.steps.steps, plan.steps.accumulation, plan.steps.micro_batch) == (2, 4, 1)


def test_get_train_args_accepts_a_zero3_plan(tmp_path):
    import yaml

    config = tmp_path / "zero3.json"
    config.write_text(json.dumps(ZERO3))
    lf = LlamaFactoryConfig(deepspeed=str(config), extra_args={})
    job = make_job(
        tmp_path / "run",
        rows=[CALC_RECORD] * 4,
        batch_size=4,
        micro_batch_size=1,
        max_steps=3,
        sections={"llamafactory": lf},
    )
    plan = LlamaFactoryBackend().plan(job)
    args_file = tmp_path / "run" / "llamafactory" / "train_args.yaml"
    args = yaml.safe_load(args_file.read_text())
    assert args["deepspeed"] == str(config)
    assert any(p.startswith("deepspeed") for p in plan.packages)
    args["model_name_or_path"] = str(tmp_path / "model")  # the parser does not load the model
    args_file.write_text(yaml.safe_dump(args))
    got = _parse(tmp_path, args_file)
    assert got == {
        "zero3": True,
        "max_steps": plan.steps.steps,
        "accumulation": plan.steps.accumulation,
        "save_total_limit": 3,
        "drop_last": True,
    }
    assert (plan.steps.steps, plan.steps.accumulation) == (3, 4)
