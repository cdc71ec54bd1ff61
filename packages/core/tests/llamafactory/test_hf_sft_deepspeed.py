"""hf-sft + DeepSpeed: the ZeRO-2 / ZeRO-3 configs hf-sft writes (``trainer.hf-sft.zero_stage``)
pass transformers' ``TrainingArguments`` (core's ``training_args``, the one the backend trains
with) and then DeepSpeed's own config parser (``DeepSpeedConfig``: its pydantic ZeRO model and
batch-size arithmetic), once transformers has filled the ``"auto"`` values. Runs where
DeepSpeed is installed (the LLaMA-Factory session: its extra installs it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("deepspeed")
pytest.importorskip("transformers")

PROBE = """
import json, sys
import deepspeed.ops  # no JIT build of the CPU shared-memory allreduce op (minutes of C++, a
deepspeed.ops.__compatible_ops__["deepspeed_shm_comm"] = False  # shared lock): parsing needs none
from pathlib import Path
from aworld_rl_core.backends.base import TrainJob
from aworld_rl_core.backends.config import ModelConfig, SFTConfig, TrainerConfig, with_section
from aworld_rl_core.backends.hf_sft import training_args
from aworld_rl_core.backends.hf_sft_launch import HfSftConfig
from aworld_rl_core.models import load_model_and_tokenizer
from aworld_rl_core.runs import Run
from transformers.integrations import is_deepspeed_zero3_enabled
from deepspeed.runtime.config import DeepSpeedConfig

model, _ = load_model_and_tokenizer(ModelConfig(name_or_path="tiny:qwen3"))  # no zero.Init
for stage, offload, run_dir in json.loads(sys.argv[1]):
  trainer = with_section(
      TrainerConfig(backend="hf-sft", batch_size=4, micro_batch_size=2, max_grad_norm=0.5,
                    sft=SFTConfig(gradient_checkpointing=True)),
      HfSftConfig(zero_stage=stage, cpu_offload=offload),
  )
  job = TrainJob(model=ModelConfig(name_or_path="tiny:qwen3"), trainer=trainer,
                 run=Run(Path(run_dir), quiet=True), train_rows=[])
  args = training_args(job, 8)  # 8 samples; writes <run>/hf-sft/zero<stage>.json
  hf = args.hf_deepspeed_config
  hf.trainer_config_finalize(args, model, args.max_steps)  # the model-dependent "auto" values
  ds = DeepSpeedConfig(hf.config)  # DeepSpeed's own parser (raises on a bad key or batch)
  print("RESULT " + json.dumps({
      "zero3": is_deepspeed_zero3_enabled(),
      "stage": int(ds.zero_optimization_stage),
      "train_batch_size": ds.train_batch_size,
      "micro": ds.train_micro_batch_size_per_gpu,
      "accumulation": ds.gradient_accumulation_steps,
      "clipping": ds.gradient_clipping,
      "offload": ds.zero_config.offload_optimizer is not None,
      "checkpointing": bool(getattr(args, "activation_checkpointing", None)
                            or getattr(args, "gradient_checkpointing", False)),
  }))
"""


CASES = [(2, False), (3, False), (3, True)]


def test_hf_sft_zero_configs_pass_transformers_and_deepspeed(tmp_path):
    cases = [
        (stage, offload, str(tmp_path / f"run{i}")) for i, (stage, offload) in enumerate(CASES)
    ]
    env = {
        **os.environ,
        # one torchrun rank (transformers takes DeepSpeed only in distributed mode)
        "RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1",
        "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29547",
    }  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(cases)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = [json.loads(x.removeprefix("RESULT ")) for x in proc.stdout.splitlines()
           if x.startswith("RESULT ")]  # fmt: skip
    # batch 4 = micro 2 x 1 process x 2 accumulation; clipping from trainer.max_grad_norm
    assert got == [
        {
            "zero3": stage == 3,
            "stage": stage,
            "train_batch_size": 4,
            "micro": 2,
            "accumulation": 2,
            "clipping": 0.5,
            "offload": offload,
            "checkpointing": True,
        }
        for stage, offload in CASES
    ]
    for stage, _, run_dir in cases:
        written = json.loads((Path(run_dir) / f"hf-sft/zero{stage}.json").read_text())
        assert written["zero_optimization"]["stage"] == stage
