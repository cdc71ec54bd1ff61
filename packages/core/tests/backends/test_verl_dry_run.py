"""The verl launch built without verl: parquet rows, Hydra overrides, commands and errors."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "verl"))  # verl_toys (no verl import)

from verl_toys import counter_env, exact_answer

from aworld_rl_core.backends.base import TrainJob
from aworld_rl_core.backends.verl.backend import VerlBackend, find_checkpoints, read_metrics
from aworld_rl_core.backends.verl.config import VerlConfig
from aworld_rl_core.backends.verl.launcher import hydra_value
from aworld_rl_core.backends.verl.specs import EpisodeSpec
from aworld_rl_core.errors import AworldError, ConfigError
from aworld_rl_core.models.config import ModelConfig
from aworld_rl_core.refs import Ref
from aworld_rl_core.runs import Run
from aworld_rl_core.trainer_config import RLConfig, TrainerConfig, with_section

pq = pytest.importorskip("pyarrow.parquet")

MODEL = ModelConfig(name_or_path="Qwen/Qwen2.5-0.5B-Instruct")
ROWS = [
    {"prompt": [{"role": "user", "content": f"count to {t}"}], "target": t, "ground_truth": "ok"}
    for t in (1, 2, 3, 4)
]


def trainer(**verl: object) -> TrainerConfig:
    rl = RLConfig(group_size=4, kl_coef=0.001, clip_low=0.2, clip_high=0.28, dual_clip=3.5)
    return TrainerConfig(
        backend="verl",
        learning_rate=2e-6,
        batch_size=4,
        micro_batch_size=2,
        max_steps=10,
        save_steps=5,
        rl=replace(rl, max_turns=5, max_new_tokens=64, max_response_tokens=512),
        sections={"verl": VerlConfig(**{"dry_run": True, "resolve_config": False, **verl})},
    )


def make_job(tmp_path: Path, cfg: TrainerConfig, **kw: object) -> TrainJob:
    run = Run(tmp_path / "run", quiet=True)
    fields = {"env": counter_env, "rewards": [exact_answer, "toy.brevity"]}
    fields["reward_weights"] = [1.0, 0.5]
    fields.update(kw)
    return TrainJob(model=MODEL, trainer=cfg, run=run, train_rows=ROWS, **fields)


def overrides_of(launch_file: Path) -> dict[str, str]:
    record = json.loads(launch_file.read_text())
    return dict(o.split("=", 1) for o in record["overrides"])


def test_dry_run_writes_rows_with_episode_specs(tmp_path, capsys):
    result = VerlBackend().train(make_job(tmp_path, trainer(rollout_engine="sglang")))
    table = pq.read_table(result.outputs["data"] / "train.parquet").to_pylist()
    assert len(table) == 4
    row = table[2]
    assert row["prompt"] == [{"role": "user", "content": "count to 3"}]
    assert row["agent_name"] == "aworld_env"
    assert row["reward_model"] == {"style": "rule", "ground_truth": "ok"}
    assert row["extra_info"]["index"] == 2 and row["extra_info"]["split"] == "train"
    spec = EpisodeSpec.loads(row["extra_info"]["aworld"])
    assert spec.task == ROWS[2]
    assert spec.env == Ref("verl_toys:counter_env")
    assert [r.target for r in spec.rewards] == ["verl_toys:exact_answer", "toy.brevity"]
    assert spec.weights == (1.0, 0.5) and spec.max_new_tokens == 64
    assert spec.build_env().target == 3  # the row's factory, rebuilt from the reference
    val = pq.read_table(result.outputs["data"] / "val.parquet").to_pylist()
    assert [r["extra_info"]["split"] for r in val] == ["val"] * 4
    printed = capsys.readouterr().out
    assert "-m verl.trainer.main_ppo" in printed and "dry run" in printed


def test_dry_run_overrides_follow_the_config(tmp_path):
    result = VerlBackend().train(make_job(tmp_path, trainer(rollout_engine="sglang", nnodes=2)))
    o = overrides_of(result.outputs["launch"])
    ar = "actor_rollout_ref"
    expected = {
        "data.train_batch_size": "4",
        "data.max_response_length": "512",
        f"{ar}.model.path": "Qwen/Qwen2.5-0.5B-Instruct",
        f"{ar}.actor.optim.lr": "2e-06",
        f"{ar}.actor.ppo_mini_batch_size": "4",
        f"{ar}.actor.ppo_micro_batch_size_per_gpu": "2",
        f"{ar}.actor.use_kl_loss": "true",
        f"{ar}.actor.kl_loss_coef": "0.001",
        f"{ar}.actor.kl_loss_type": "low_var_kl",
        f"{ar}.actor.clip_ratio_low": "0.2",
        f"{ar}.actor.clip_ratio_high": "0.28",
        f"{ar}.actor.clip_ratio_c": "3.5",
        f"{ar}.rollout.name": "sglang",
        f"{ar}.rollout.n": "4",
        f"{ar}.rollout.multi_turn.enable": "true",
        f"{ar}.rollout.multi_turn.max_assistant_turns": "5",
        f"{ar}.rollout.agent.default_agent_loop": "aworld_env",
        "algorithm.adv_estimator": "grpo",
        "reward.custom_reward_function.path": "pkg://aworld_rl_core.backends.verl.reward",
        "trainer.nnodes": "2",
        "trainer.n_gpus_per_node": "8",
        "trainer.total_training_steps": "10",
        "trainer.save_freq": "5",
        "trainer.resume_mode": "disable",
        "trainer.default_local_dir": str(tmp_path / "run" / "checkpoints"),
    }
    assert {k: o.get(k) for k in expected} == expected
    assert o["data.train_files"] == str(tmp_path / "run" / "verl_data" / "train.parquet")
    assert o["trainer.logger"] == "[console,file]"


def test_ppo_fields_give_gae_a_critic_and_the_kl_in_the_reward(tmp_path):
    from aworld_rl_core.backends.verl.config import CriticConfig

    grpo = overrides_of(VerlBackend().train(make_job(tmp_path / "g", trainer())).outputs["launch"])
    assert grpo["algorithm.use_kl_in_reward"] == "false"
    assert not [k for k in grpo if k.startswith(("critic.", "algorithm.kl_ctrl"))]  # no critic
    critic = CriticConfig(learning_rate=1e-5, warmup_ratio=0.015, micro_batch_size=8)
    cfg = trainer(
        adv_estimator="gae", gamma=0.99, lam=0.95, kl_in_reward=True, actor_warmup_ratio=0.285,
        critic=critic,
    )  # fmt: skip
    o = overrides_of(VerlBackend().train(make_job(tmp_path / "p", cfg)).outputs["launch"])
    expected = {
        "algorithm.adv_estimator": "gae",
        "algorithm.gamma": "0.99",
        "algorithm.lam": "0.95",
        "algorithm.use_kl_in_reward": "true",
        "algorithm.kl_penalty": "kl",
        "algorithm.kl_ctrl.type": "fixed",
        "algorithm.kl_ctrl.kl_coef": "0.001",
        "actor_rollout_ref.actor.optim.lr_warmup_steps_ratio": "0.285",
        "actor_rollout_ref.actor.ppo_epochs": "1",
        "critic.model.path": "Qwen/Qwen2.5-0.5B-Instruct",
        "critic.optim.lr": "1e-05",
        "critic.optim.lr_warmup_steps_ratio": "0.015",
        "critic.ppo_mini_batch_size": "4",
        "critic.ppo_micro_batch_size_per_gpu": "8",
        "critic.cliprange_value": "0.5",
        "trainer.critic_warmup": "0",
    }
    assert {k: o.get(k) for k in expected} == expected
    assert "algorithm.kl_ctrl.target_kl" not in o  # only the adaptive controller has a target


def test_extra_overrides_come_last_and_single_turn_rows_use_verl_loop(tmp_path):
    cfg = trainer(extra_overrides=("trainer.val_before_train=true",))
    result = VerlBackend().train(make_job(tmp_path, cfg, env=None))
    record = json.loads(result.outputs["launch"].read_text())
    assert record["overrides"][-1] == "trainer.val_before_train=true"
    o = overrides_of(result.outputs["launch"])
    assert o["actor_rollout_ref.rollout.agent.default_agent_loop"] == "single_turn_agent"
    assert o["actor_rollout_ref.rollout.multi_turn.enable"] == "false"
    row = pq.read_table(result.outputs["data"] / "train.parquet").to_pylist()[0]
    assert row["agent_name"] == "single_turn_agent"


def test_ray_job_submission_command(tmp_path):
    cfg = trainer(ray_address="http://head:8265", ray_runtime_env='{"pip": ["aworld-rl-core"]}')
    result = VerlBackend().train(make_job(tmp_path, cfg))
    record = json.loads(result.outputs["launch"].read_text())
    command = record["command"]
    data_dir = str(tmp_path / "run" / "verl_data")
    assert command[:9] == [
        "ray", "job", "submit", "--address", "http://head:8265", "--working-dir", data_dir,
        "--runtime-env-json", '{"pip": ["aworld-rl-core"]}',
    ]  # fmt: skip
    assert command[9:13] == ["--", "python3", "-m", "verl.trainer.main_ppo"]
    o = overrides_of(result.outputs["launch"])
    assert o["data.train_files"] == "train.parquet"  # relative to the uploaded working dir
    assert o["trainer.logger"] == "[console]" and record["env"] == {}


def test_resume_selects_auto_mode(tmp_path):
    result = VerlBackend().train(make_job(tmp_path, replace(trainer(), resume=True)))
    assert overrides_of(result.outputs["launch"])["trainer.resume_mode"] == "auto"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (True, "true"),
        (None, "null"),
        (3, "3"),
        (1e-6, "1e-06"),
        ("pkg://a.b", "pkg://a.b"),
        ("a b", "'a b'"),
        ("true", "'true'"),
        ("1e-6", "'1e-6'"),
        ("it's", "'it\\'s'"),
        (["console", "file"], "[console,file]"),
    ],
)
def test_hydra_value_quotes_what_needs_it(value, text):
    assert hydra_value(value) == text


def test_bad_jobs_raise_clear_errors(tmp_path):
    with pytest.raises(ConfigError, match="importable"):
        VerlBackend().train(make_job(tmp_path, trainer(), env=lambda row: None))
    with pytest.raises(ConfigError, match="needs a reward"):
        VerlBackend().train(make_job(tmp_path, trainer(), env=None, rewards=[]))
    with pytest.raises(ConfigError, match="mini_batch_size=3 must divide"):
        VerlBackend().train(make_job(tmp_path, trainer(mini_batch_size=3)))
    with pytest.raises(ConfigError, match="one weight per reward"):
        VerlBackend().train(make_job(tmp_path, trainer(), reward_weights=[1.0]))
    job = replace(make_job(tmp_path, trainer()), train_rows=[{"question": "x"}], env=None)
    with pytest.raises(ConfigError, match="row 0 has no 'prompt'"):
        VerlBackend().train(job)
    bad_row = [{"prompt": [{"role": "user", "content": "x"}], "when": object()}]
    job = replace(make_job(tmp_path, trainer()), train_rows=bad_row)
    with pytest.raises(ConfigError, match=r"row 0\.when is a object"):
        VerlBackend().train(job)


def test_real_launch_refuses_a_machine_without_cuda(tmp_path, monkeypatch):
    import aworld_rl_core.backends.verl.backend as backend

    monkeypatch.setattr(backend, "cuda_available", lambda: False)
    monkeypatch.setattr(backend, "verl_installed", lambda: True)
    monkeypatch.setattr(backend, "check_rollout_engine", lambda engine: "0.24.0")
    job = make_job(tmp_path, with_section(trainer(), VerlConfig()))
    with pytest.raises(AworldError, match="has none"):
        VerlBackend().train(job)
    tiny = replace(job, model=ModelConfig(name_or_path="tiny:qwen3"))
    with pytest.raises(ConfigError, match="CPU test model"):
        VerlBackend().train(tiny)


def test_metrics_and_checkpoints_are_read_back(tmp_path):
    log = tmp_path / "m.jsonl"
    lines = [
        {"step": 1, "data": {"critic/score/mean": 0.25, "note": "x", "flag": True}},
        {"step": 2, "data": {"critic/score/mean": 0.5}},
    ]
    log.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    assert read_metrics(log) == [(1, {"critic/score/mean": 0.25}), (2, {"critic/score/mean": 0.5})]
    for step in (10, 2, 5):
        (tmp_path / f"global_step_{step}").mkdir()
    assert [p.name for p in find_checkpoints(tmp_path)] == [
        "global_step_2", "global_step_5", "global_step_10",
    ]  # fmt: skip


def test_dry_run_imports_neither_verl_nor_torch(tmp_path):
    code = f"""
import sys
sys.path.insert(0, {str(Path(__file__).parents[1] / "verl")!r})
from aworld_rl_core.backends.base import TrainJob
from aworld_rl_core.models.config import ModelConfig
from aworld_rl_core.trainer_config import TrainerConfig
from aworld_rl_core.backends.verl.config import VerlConfig
from aworld_rl_core.backends.verl.backend import VerlBackend
from aworld_rl_core.runs import Run
from verl_toys import counter_env
verl = VerlConfig(dry_run=True, resolve_config=False)
cfg = TrainerConfig(backend="verl", batch_size=1, sections={{"verl": verl}})
run = Run({str(tmp_path)!r}, quiet=True)
job = TrainJob(model=ModelConfig(name_or_path="m"), trainer=cfg, run=run,
               train_rows=[{{"prompt": "hi"}}], env=counter_env)
VerlBackend().train(job)
print(sorted(m for m in ("verl", "torch", "transformers") if m in sys.modules))
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_extra_overrides_replace_ours_for_the_same_key(tmp_path):
    extra = ("actor_rollout_ref.model.use_remove_padding=false", "+trainer.new_key=1")
    result = VerlBackend().train(make_job(tmp_path, trainer(extra_overrides=extra)))
    overrides = json.loads(result.outputs["launch"].read_text())["overrides"]
    assert overrides[-2:] == list(extra)
    assert sum(o.startswith("actor_rollout_ref.model.use_remove_padding=") for o in overrides) == 1
    with pytest.raises(ConfigError, match="bad verl override 'oops'"):
        VerlBackend().train(make_job(tmp_path, trainer(extra_overrides=("oops",))))


def test_core_grpo_dry_run_on_verl_takes_prompts_from_the_environment(tmp_path, aworld_home):
    import pyarrow.parquet as pq

    from aworld_rl_core import cli
    from aworld_rl_core.envs.toy import LowercaseEnv

    out = tmp_path / "run"
    args = ["core.grpo", "--preset", "tiny-cpu", "trainer.backend=verl"]
    args += ["trainer.verl.dry_run=true", "trainer.verl.resolve_config=false"]
    args += ["model.name_or_path=Qwen/Qwen2.5-0.5B-Instruct", "--output-dir", str(out), "--quiet"]
    assert cli.main(args) == 0
    rows = pq.read_table(out / "verl_data" / "train.parquet").to_pylist()
    topic = json.loads(rows[0]["extra_info"]["aworld"])["task"]["topic"]
    expected = LowercaseEnv({"topic": topic}, turns=2).reset()
    assert [m["content"] for m in rows[0]["prompt"]] == [m["content"] for m in expected]
    launch = json.loads((out / "verl_launch.json").read_text())
    assert "actor_rollout_ref.rollout.agent.default_agent_loop=aworld_env" in launch["overrides"]


def test_rollout_engine_preflight_before_ray_starts(tmp_path, monkeypatch):
    """A missing or unsupported rollout engine stops the launch before Ray starts (verl 0.9.1
    supports vLLM 0.18-0.24 and SGLang >= 0.5.5)."""
    import importlib.metadata

    import aworld_rl_core.backends.verl.backend as backend

    installed: dict[str, str] = {}

    def version(name):
        if name not in installed:
            raise importlib.metadata.PackageNotFoundError(name)
        return installed[name]

    monkeypatch.setattr(backend.importlib.metadata, "version", version)
    monkeypatch.setattr(backend, "verl_installed", lambda: True)
    started = []
    monkeypatch.setattr(backend.VerlBackend, "_execute", lambda *a: started.append(a))
    job = make_job(tmp_path, with_section(trainer(), VerlConfig(rollout_engine="sglang")))
    with pytest.raises(AworldError, match="rollout_engine=sglang but sglang is not installed"):
        VerlBackend().train(job)
    installed["vllm"] = "0.33.0"
    with pytest.raises(AworldError, match=r"vllm 0.33.0 is installed, but verl 0.9.1 supports"):
        backend.check_rollout_engine("vllm")
    installed.update(vllm="0.24.0+cu130", sglang="0.5.4")
    assert backend.check_rollout_engine("vllm") == "0.24.0+cu130"
    with pytest.raises(AworldError, match="install sglang==0.5.12"):
        backend.check_rollout_engine("sglang")
    assert not started


def test_max_num_batched_tokens_is_refused_with_sglang(tmp_path):
    """verl's SGLang server ignores rollout.max_num_batched_tokens: a clear error, not a key
    that silently does nothing."""
    job = make_job(
        tmp_path,
        with_section(
            trainer(),
            VerlConfig(dry_run=True, rollout_engine="sglang", max_num_batched_tokens=8192),
        ),
    )
    with pytest.raises(ConfigError, match="a vLLM setting that verl's sglang server ignores"):
        VerlBackend().train(job)


def test_checkpoint_keep_limit_and_scale_keys(tmp_path):
    from aworld_rl_core.backends.verl.launcher import LaunchPaths, build_overrides

    base = trainer()
    verl = VerlConfig(
        dry_run=True, rollout_is="token", rollout_is_threshold=3.0, trainer_mode="separate_async",
        parameter_sync_step=2,
    )  # fmt: skip
    overrides = build_overrides(
        ModelConfig(name_or_path="m"),
        with_section(base, verl),
        LaunchPaths("t", "v", "c"),
        n_rows=8,
        uses_env=True,
    )
    values = dict(o.split("=", 1) for o in overrides)
    assert values["trainer.max_actor_ckpt_to_keep"] == "3"  # the default keep-limit
    assert values["trainer.max_critic_ckpt_to_keep"] == "3"
    assert values["algorithm.rollout_correction.rollout_is"] == "token"
    assert values["algorithm.rollout_correction.rollout_is_threshold"] == "3.0"
    assert values["trainer.v1.trainer_mode"] == "separate_async"
    assert values["trainer.v1.separate_async.parameter_sync_step"] == "2"
    with pytest.raises(ConfigError, match="parameter_sync_step=3 must divide"):
        build_overrides(
            ModelConfig(name_or_path="m"),
            with_section(base, replace(verl, parameter_sync_step=3)),
            LaunchPaths("t", "v", "c"),
            n_rows=8,
            uses_env=True,
        )
