"""Launch plans: every backend's ``plan(job)``, ``--dry-run`` for any recipe, plan.json."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "verl"))  # verl_toys (no verl import)

from verl_toys import counter_env, exact_answer

from aworld_rl_core import cli
from aworld_rl_core.backends.base import TrainJob
from aworld_rl_core.backends.verl.config import VerlConfig
from aworld_rl_core.dry_run import planning, planning_active
from aworld_rl_core.models.config import ModelConfig
from aworld_rl_core.runs import Run
from aworld_rl_core.trainer_config import RLConfig, SFTConfig, TrainerConfig, with_section

pytest.importorskip("pyarrow.parquet")

PROMPTS = [
    {"prompt": [{"role": "user", "content": f"count to {t}"}], "target": t} for t in range(10)
]
CHATS = [
    {
        "messages": [
            {"role": "user", "content": f"q{i}"},
            {"role": "assistant", "content": "a"},
            {"role": "user", "content": "more"},
            {"role": "assistant", "content": "b"},
        ]
    }
    for i in range(5)
]


def rl_job(tmp_path, backend, **trainer):
    cfg = TrainerConfig(
        backend=backend,
        batch_size=4,
        micro_batch_size=2,
        rl=RLConfig(group_size=4, max_response_tokens=512),
        **trainer,
    )
    return TrainJob(
        model=ModelConfig(name_or_path="Qwen/Qwen2.5-7B-Instruct"),
        trainer=cfg,
        run=Run(tmp_path / backend, quiet=True),
        train_rows=PROMPTS,
        env=counter_env,
        rewards=[exact_answer],
    )


def test_verl_plan_counts_steps_as_verl_and_estimates_memory(tmp_path):
    from aworld_rl_core.backends.verl.backend import VerlBackend

    job = rl_job(tmp_path, "verl", max_steps=7, save_steps=2)
    plan = VerlBackend().plan(job)
    # 10 prompts at batch 4: 2 steps per epoch (2 dropped); 7 steps need 4 epochs
    assert (plan.steps.steps, plan.steps.steps_per_epoch, plan.steps.epochs) == (7, 2, 4)
    assert plan.steps.engine_settings["trainer.total_training_steps"] == "7"
    assert plan.steps.world_size == 8 and plan.steps.samples_per_step == 16
    assert plan.checkpoints.keep == 3 and plan.checkpoints.every == 2
    assert plan.checkpoints.model.endswith("checkpoints/global_step_7/actor/huggingface")
    assert "vllm==0.24.0" in plan.packages and "verl[verl-core]==0.9.1" in plan.packages
    assert plan.memory_gib is not None and plan.memory_gib["total"] > 14  # 7.6B params
    assert plan.processes[0].command[1:3] == ["-m", "verl.trainer.main_ppo"]


def test_trl_plan_is_one_process_with_trls_steps(tmp_path):
    from aworld_rl_core.backends.trl_grpo import TrlGrpoBackend

    job = rl_job(tmp_path, "trl", epochs=2.0, keep_checkpoints=None)
    plan = TrlGrpoBackend().plan(job)
    assert (plan.steps.steps, plan.steps.accumulation) == (4, 8)  # 2 per epoch x 2; 16 / 2
    assert plan.checkpoints.keep is None
    assert plan.checkpoints.final.endswith("checkpoint-4")


def sft_job(tmp_path, backend, sft=None, **trainer):
    return TrainJob(
        model=ModelConfig(name_or_path="Qwen/Qwen2.5-7B-Instruct"),
        trainer=TrainerConfig(
            backend=backend, batch_size=2, micro_batch_size=1, sft=sft or SFTConfig(), **trainer
        ),
        run=Run(tmp_path / backend, quiet=True),
        train_rows=CHATS,
    )


def test_hf_sft_plan_counts_per_turn_samples_and_zero3_memory(tmp_path):
    from aworld_rl_core.backends.hf_sft import HfSftBackend

    ds = tmp_path / "zero3.json"
    ds.write_text(json.dumps({"zero_optimization": {"stage": 3}}))
    from aworld_rl_core.backends.hf_sft_launch import HfSftConfig

    sft = SFTConfig(deepspeed=str(ds), gradient_checkpointing=True, max_length=4096)
    job = sft_job(tmp_path, "hf-sft", sft=sft)
    job = replace(job, trainer=with_section(job.trainer, HfSftConfig(nproc_per_node=2)))
    plan = HfSftBackend().plan(job)
    # 5 chats x 2 assistant turns = 10 samples, batch 2: 5 steps; 2 = 1 micro x 2 GPUs
    assert (plan.steps.steps, plan.steps.world_size, plan.steps.accumulation) == (5, 2, 1)
    assert plan.steps.engine_settings["zero_stage"] == 3 and "deepspeed" in plan.packages
    zero3 = plan.memory_gib
    plain = HfSftBackend().plan(sft_job(tmp_path, "hf-sft")).memory_gib
    assert zero3 is not None and plain is not None
    assert zero3["weights"] == pytest.approx(plain["weights"] / 2)  # sharded over 2 GPUs
    assert plan.checkpoints.model.endswith("hf-sft/model")


def test_llamafactory_plan_writes_the_args_it_will_run(tmp_path):
    import yaml

    from aworld_rl_core.backends.llamafactory.backend import LlamaFactoryBackend

    plan = LlamaFactoryBackend().plan(sft_job(tmp_path, "llamafactory", save_steps=2))
    args = yaml.safe_load((tmp_path / "llamafactory/llamafactory/train_args.yaml").read_text())
    assert args["max_steps"] == plan.steps.steps == 5 and args["save_total_limit"] == 3
    assert plan.processes[0].command[-2] == "aworld_rl_core.backends.llamafactory.worker"


def test_backends_plan_instead_of_training_inside_planning(tmp_path, capsys):
    """A multi-stage recipe chains through the planned final models."""
    from aworld_rl_core.backends.trl_grpo import TrlGrpoBackend

    job = rl_job(tmp_path, "trl", max_steps=3)
    with planning() as plans:
        assert planning_active()
        first = TrlGrpoBackend().train(job)
        second_job = replace(
            job,
            model=ModelConfig(name_or_path=str(first.outputs["model"])),
            run=Run(tmp_path / "stage2", quiet=True),
        )
        TrlGrpoBackend().train(second_job)
    assert not planning_active() and len(plans) == 2
    assert first.outputs["model"] == tmp_path / "trl/checkpoints/checkpoint-3"
    assert (
        json.loads((tmp_path / "stage2/plan.json").read_text())["plans"][0]["steps"]["steps"] == 3
    )
    assert "== trl launch plan" in capsys.readouterr().out


def test_cli_dry_run_writes_plan_json(tmp_path, aworld_home, capsys):
    out = tmp_path / "run"
    code = cli.main(
        ["core.grpo", "--preset", "tiny-cpu", "--dry-run", "--output-dir", str(out),
         "trainer.backend=verl", "trainer.max_steps=20"]
    )  # fmt: skip
    assert code == 0
    (plan,) = json.loads((out / "plan.json").read_text())["plans"]
    assert plan["backend"] == "verl" and plan["steps"]["steps"] == 20
    assert plan["steps"]["engine_settings"]["trainer.total_training_steps"] == "20"
    assert not (out / "checkpoints" / "global_step_20").exists()  # nothing trained
    assert "1 launch plan(s) written to" in capsys.readouterr().out


def test_dry_run_of_a_section_flag_is_a_dry_run():
    from aworld_rl_core.backends.plan import is_dry_run

    trainer = TrainerConfig(backend="verl")
    assert not is_dry_run(trainer)
    assert is_dry_run(with_section(trainer, VerlConfig(dry_run=True)))
    with planning():
        assert is_dry_run(TrainerConfig(backend="trl"))


def test_readme_dry_run_commands_are_found_as_a_shell_splits_them(tmp_path, aworld_home):
    from aworld_rl_core.testing.readme import dry_run_commands, run_as_written

    readme = tmp_path / "README.md"
    readme.write_text(
        "```bash\n"
        "aworld-run core.grpo --preset paper --dry-run 'a=[x, y]'  # plan only\n"
        "aworld-run core.grpo --preset tiny-cpu --dry-run\n"
        "aworld-run core.grpo --preset paper b=1\n"
        "aworld-run core.grpo --dry-run \\\n    --preset paper c=2\n"
        "```\n"
    )
    assert dry_run_commands(readme) == [
        ["aworld-run", "core.grpo", "--preset", "paper", "--dry-run", "a=[x, y]"],
        ["aworld-run", "core.grpo", "--dry-run", "--preset", "paper", "c=2"],
    ]
    words = ["aworld-run", "core.grpo", "--preset", "tiny-cpu", "--dry-run", "trainer.backend=verl"]
    (plan,) = run_as_written(words, aworld_home)
    assert plan["backend"] == "verl"
    with pytest.raises(AssertionError, match="exited with 2"):
        run_as_written(["aworld-run", "core.grpo", "--dry-run", "nosuch.key=1"], aworld_home)


def test_a_later_stage_planned_from_a_planned_model_keeps_its_memory_estimate(tmp_path):
    """Stage 2 starts from stage 1's planned (unwritten) model: its shape is the base's."""
    from aworld_rl_core.backends.verl.backend import VerlBackend

    job = rl_job(tmp_path, "verl", max_steps=3)
    with planning():
        first = VerlBackend().train(job)
        second = replace(
            job,
            model=ModelConfig(name_or_path=str(first.outputs["model"])),
            run=Run(tmp_path / "stage2", quiet=True),
        )
        plan = VerlBackend().plan(second)
    assert not Path(first.outputs["model"]).exists()
    assert plan.memory_gib is not None and plan.memory_gib["total"] > 14
