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
from llamafactory.hparams import get_train_args
from transformers.integrations import is_deepspeed_zero3_enabled
args = yaml.safe_load(open(sys.argv[1]))
model, data, training, finetuning, _ = get_train_args(args)
print("RESULT " + json.dumps({
    "zero3": is_deepspeed_zero3_enabled(), "max_steps": training.max_steps,
    "accumulation": training.gradient_accumulation_steps,
    "save_total_limit": training.save_total_limit, "drop_last": training.dataloader_drop_last,
}))
"""


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
    (tmp_path / "stub" / "torchaudio").mkdir(parents=True)
    (tmp_path / "stub" / "torchaudio" / "__init__.py").write_text("")
    env = {
        **os.environ,
        # one torchrun rank: LLaMA-Factory takes DeepSpeed only in distributed mode
        "RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1",
        "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29531",
        "PYTHONPATH": str(tmp_path / "stub"),
    }  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(args_file)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
    got = json.loads(line.removeprefix("RESULT "))
    assert got == {
        "zero3": True,
        "max_steps": plan.steps.steps,
        "accumulation": plan.steps.accumulation,
        "save_total_limit": 3,
        "drop_last": True,
    }
    assert (plan.steps.steps, plan.steps.accumulation) == (3, 4)
