"""hf-sft on several processes: the torchrun plan, the ZeRO configs, and a real torchrun launch
on CPU (gloo) whose ranks all train in the one run directory."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from aworld_rl_core.backends.base import TrainJob
from aworld_rl_core.backends.config import ModelConfig, SFTConfig, TrainerConfig, with_section
from aworld_rl_core.backends.hf_sft_launch import (
    HfSftConfig,
    deepspeed_file,
    torchrun_command,
    zero_config,
)
from aworld_rl_core.errors import ConfigError
from aworld_rl_core.runs import Run

CHATS = [
    {
        "messages": [
            {"role": "user", "content": f"What is {i} + 1?"},
            {"role": "assistant", "content": f"<think>{i} plus one</think>{i + 1}"},
        ]
    }
    for i in range(8)
]


def job(tmp_path, hs: HfSftConfig, *, model="Qwen/Qwen2.5-7B-Instruct", **trainer):
    cfg = TrainerConfig(backend="hf-sft", batch_size=8, micro_batch_size=1, **trainer)
    return TrainJob(
        model=ModelConfig(name_or_path=model, dtype="bfloat16"),
        trainer=with_section(cfg, hs),
        run=Run(tmp_path / "run", quiet=True),
        train_rows=CHATS,
    )


def test_plan_shows_the_torchrun_command_zero3_file_and_world_size(tmp_path):
    from aworld_rl_core.backends.hf_sft import HfSftBackend

    hs = HfSftConfig(nproc_per_node=4, nnodes=2, node_rank=1, master_addr="10.0.0.1", zero_stage=3)
    plan = HfSftBackend().plan(
        job(tmp_path, hs, epochs=2.0, sft=SFTConfig(gradient_checkpointing=True))
    )
    (process,) = plan.processes
    run_dir = (tmp_path / "run").resolve()
    assert process.command[1:] == [
        "-m",
        "torch.distributed.run",
        "--nnodes=2",
        "--nproc_per_node=4",
        "--node_rank=1",
        "--master_addr=10.0.0.1",
        "--master_port=29500",
        "-m",
        "aworld_rl_core.backends.hf_sft_launch",
        str(run_dir / "hf-sft/job.pkl"),
    ]
    # 8 samples at batch 8: 1 step per epoch, 2 epochs; 8 = 1 micro x 8 GPUs x 1 accumulation
    s = plan.steps
    assert (s.steps, s.world_size, s.micro_batch, s.accumulation) == (2, 8, 1, 1)
    zero = run_dir / "hf-sft/zero3.json"
    assert s.engine_settings["deepspeed"] == str(zero) and s.engine_settings["zero_stage"] == 3
    assert s.engine_settings["gradient_checkpointing"] is True
    assert json.loads(zero.read_text())["zero_optimization"]["stage"] == 3
    assert "deepspeed" in plan.packages and str(zero) in process.writes
    # ZeRO-3 over 8 GPUs: the 7.6B model's bf16 weights are split 8 ways
    assert plan.memory_gib is not None and plan.memory_gib["weights"] < 15.3 / 8 + 0.01


def test_one_node_is_standalone_and_one_process_stays_in_process(tmp_path):
    from aworld_rl_core.backends.hf_sft import HfSftBackend

    cmd = torchrun_command(HfSftConfig(nproc_per_node=8), tmp_path / "job.pkl", python="py")
    assert cmd[:5] == ["py", "-m", "torch.distributed.run", "--nnodes=1", "--nproc_per_node=8"]
    assert "--standalone" in cmd
    plan = HfSftBackend().plan(job(tmp_path, HfSftConfig()))
    assert plan.processes[0].command == ["Trainer.train()"] and plan.steps.world_size == 1
    assert plan.steps.engine_settings["deepspeed"] is None
    assert HfSftConfig(zero_stage=3).uses_torchrun()  # ZeRO on one GPU: a 1-rank group


def test_zero_configs_leave_batch_sizes_to_transformers():
    z2, z3 = zero_config(2, bf16=True), zero_config(3, bf16=False, cpu_offload=True)
    assert z2["zero_optimization"]["stage"] == 2 and z2["bf16"] == {"enabled": "auto"}
    assert "stage3_prefetch_bucket_size" not in z2["zero_optimization"]
    assert z3["zero_optimization"]["offload_optimizer"]["device"] == "cpu"
    assert z3["fp16"] == {"enabled": "auto"} and z3["bf16"] == {"enabled": False}
    for z in (z2, z3):
        assert z["train_micro_batch_size_per_gpu"] == z["gradient_accumulation_steps"] == "auto"
    with pytest.raises(ConfigError, match="zero_stage=1"):
        zero_config(1, bf16=True)


def test_an_own_deepspeed_file_wins_over_zero_stage(tmp_path):
    own = tmp_path / "mine.json"
    j = job(tmp_path, HfSftConfig(zero_stage=2), sft=SFTConfig(deepspeed=str(own)))
    assert deepspeed_file(j, write=True) == str(own)
    assert not (tmp_path / "run/hf-sft/zero2.json").exists()


def test_the_section_is_a_config_key(tmp_path):
    from aworld_rl_core.config import load_config

    cfg = load_config(
        TrainerConfig,
        overrides=["hf-sft.nproc_per_node=8", "hf-sft.zero_stage=3"],
    )
    hs = cfg.sections["hf-sft"]
    assert (hs.nproc_per_node, hs.zero_stage, hs.world_size) == (8, 3, 8)


def test_a_lambda_loss_cannot_go_to_the_workers(tmp_path):
    from aworld_rl_core.backends.hf_sft_launch import write_job

    j = replace(job(tmp_path, HfSftConfig(launcher="torchrun")), loss=lambda *a: 0)
    with pytest.raises(ConfigError, match="not lambdas"):
        write_job(j, tmp_path / "job.pkl")


def _train_through_torchrun(tmp_path, nproc):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from aworld_rl_core.backends.hf_sft import HfSftBackend

    hs = HfSftConfig(launcher="torchrun", nproc_per_node=nproc)
    j = job(
        tmp_path,
        hs,
        model="tiny:qwen3",
        max_steps=2,
        save_steps=1,
        learning_rate=1e-3,
        sft=SFTConfig(max_length=64),
    )
    j = replace(j, model=ModelConfig(name_or_path="tiny:qwen3"))
    result = HfSftBackend().train(j)
    j.run.close()
    return result


def test_a_one_process_torchrun_launch_trains_in_the_one_run_directory(tmp_path, aworld_home):
    result = _train_through_torchrun(tmp_path, 1)
    run_dir = (tmp_path / "run").resolve()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "aworld-home") == [
        "run"
    ]  # no per-rank directory
    assert result.metrics["global_step"] == 2.0
    assert result.outputs["model"] == run_dir / "model"
    assert (run_dir / "model/config.json").is_file()
    assert [c.name for c in result.checkpoints] == ["checkpoint-1", "checkpoint-2"]
    record = json.loads((run_dir / "hf-sft/result.json").read_text())
    assert record["world_size"] == 1
    logged = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in logged if "loss" in m and "step" in m] == [1, 2]


@pytest.mark.slow
def test_two_gloo_ranks_share_the_run_directory(tmp_path, aworld_home):
    result = _train_through_torchrun(tmp_path, 2)
    run_dir = (tmp_path / "run").resolve()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "aworld-home") == ["run"]
    assert json.loads((run_dir / "hf-sft/result.json").read_text())["world_size"] == 2
    assert result.metrics["global_step"] == 2.0 and (run_dir / "model/config.json").is_file()
    logged = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in logged if "loss" in m and "step" in m] == [1, 2]  # rank 0 only
