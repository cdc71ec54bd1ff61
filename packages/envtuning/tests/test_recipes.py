"""Plugin registrations, presets, and the recipes end to end on CPU."""

import json

import pytest
import yaml

from aworld_rl_core import registry
from aworld_rl_core.backends.verl.config import VerlConfig
from aworld_rl_core.config import load_config, to_yaml
from aworld_rl_core.llm.scripted_server import ScriptedLLMServer
from aworld_rl_core.runs import execute
from aworld_rl_core.testing.contracts import PluginContract, RecipeContract
from aworld_rl_core.trainer_config import section
from aworld_rl_envtuning.curriculum import paper_stages


class TestPlugin(PluginContract):
    plugin = "envtuning"
    expected = {
        "recipes": [
            "envtuning.curriculum",
            "envtuning.stage",
            "envtuning.eval",
            "envtuning.augment",
        ],
        "environments": ["envtuning.bfcl"],
        "datasets": ["envtuning.split"],
        "rewards": [
            "envtuning.progress",
            "envtuning.format",
            "envtuning.binary",
            "envtuning.mixed",
        ],
    }


class TestStageRecipe(RecipeContract):
    """The fast end-to-end check: one GRPO step of stage 2 with the tiny model."""

    recipe = "envtuning.stage"
    override_values = {"stage.reward": "binary"}  # checked against the reward names

    def check_result(self, result, run_dir):
        state = json.loads((run_dir / "curriculum_state.json").read_text())
        assert state["finished"] == ["hints"]
        assert (run_dir / "stages" / "1-hints" / "checkpoints").is_dir()
        stage = json.loads((run_dir / "stages" / "1-hints" / "stage.json").read_text())
        assert stage["feedback"] == "hints" and stage["kl_reference"] == stage["start"]
        assert result.outputs["model"].name == "checkpoint-1"
        split = json.loads((run_dir / "split.json").read_text())
        assert split["counts"] == {"train": 400, "validation": 100, "held_out": 300}


class TestEvalRecipe(RecipeContract):
    recipe = "envtuning.eval"

    def check_result(self, result, run_dir):
        assert result.metrics["entries"] == 4.0
        assert 0.0 <= result.metrics["accuracy/average"] <= 1.0
        lines = (run_dir / "outcomes.jsonl").read_text().splitlines()
        assert len(lines) == 4
        assert "## BFCL multi-turn" in (run_dir / "report.md").read_text()


class TestCurriculumRecipe(RecipeContract):
    """The README's main job on core's micro-world: warm start, four stages, held-out points.

    Checks the pipeline and the training signal (every point evaluated and reported first, the
    warm start writes calls, decoding constrained to copying makes the warm-started model pass
    held-out turns, the progress reward gives GRPO groups with reward variance in stages 2-4)
    and that RL learns: at seed 0 stage 4 passes at least 3 more of the 78 held-out entries
    than the warm start (measured once: 24 -> 28, 30.8% -> 35.9%, README). With
    ``trainer.learning_rate=1e-30`` every stage's figures equal the warm start's, so a change
    that stops RL from moving the policy fails here."""

    recipe = "envtuning.curriculum"

    def check_result(self, result, run_dir):
        state = json.loads((run_dir / "curriculum_state.json").read_text())
        assert state["finished"] == ["syntax", "hints", "hard", "independent"]
        assert result.metrics["stages_finished"] == 4.0
        assert "4-independent" in str(result.outputs["model"])
        points = ("random", "warm_start", "stage1", "stage2", "stage3", "stage4")
        for point in points:
            assert 0.0 <= result.metrics[f"heldout/accuracy/{point}"] <= 1.0
            assert 0.0 <= result.metrics[f"heldout/progress/{point}"] <= 1.0
        assert result.metrics["heldout/progress/random"] == 0.0  # no calling turn passes
        found = json.loads((run_dir / "heldout_points.json").read_text())
        assert len(found["entries"]) == 78 and list(found["points"]) == list(points)
        assert found["points"]["random"]["tool_calls"] == 0.0
        assert found["points"]["warm_start"]["tool_calls"] > 0.5  # the warm start writes calls
        assert result.metrics["heldout/progress/warm_start"] > 0.05  # copied values pass turns
        report = (run_dir / "report.md").read_text()
        assert report.index("heldout/accuracy/random") < report.index("stages_finished")
        assert report.index("## Held-out entries") < report.index("## Warm start")
        varied = []
        for stage in ("2-hints", "3-hard", "4-independent"):
            lines = (run_dir / "stages" / stage / "metrics.jsonl").read_text().splitlines()
            rows = [json.loads(line) for line in lines]
            varied += [r["frac_reward_zero_std"] < 1.0 for r in rows if "frac_reward_zero_std" in r]
        assert any(varied), "no GRPO group of stages 2-4 had reward variance"
        # RL learns: stage 4 passes at least 3 more held-out entries than the warm start
        passed = {p: round(found["points"][p]["accuracy"] * 78) for p in points}
        assert passed["stage4"] >= passed["warm_start"] + 3, passed


@pytest.mark.slow
def test_tiny_cpu_bfcl_preset_learns_the_format(tmp_path, aworld_home):
    """Today's real-BFCL tiny preset (about 4 minutes): warm start, four stages, held-out
    evaluation; the warm start lifts stage 1's reward from 0 (0.417 on stage 1's entries and
    0.25 on validation, README)."""
    entry = registry.get_recipe("envtuning.curriculum")
    cfg = load_config(entry.config_cls(), preset="tiny-cpu-bfcl", presets=entry.presets)
    result, run = execute(
        "envtuning.curriculum", entry.run_fn(), cfg, output_dir=tmp_path / "run", quiet=True
    )
    run_dir = run.dir
    state = json.loads((run_dir / "curriculum_state.json").read_text())
    assert state["finished"] == ["syntax", "hints", "hard", "independent"]
    assert result.metrics["stages_finished"] == 4.0
    assert result.metrics["eval/entries"] == 4.0
    assert "4-independent" in str(result.outputs["model"])
    warm = json.loads((run_dir / "warm-start" / "warm_start.json").read_text())
    assert warm["sft"]["final_loss"] < 1.0
    for entries in ("stage 1's training entries", "validation"):
        assert warm[entries]["before"]["stage1_reward"] == 0.0
        assert warm[entries]["after"]["stage1_reward"] > 0.1


class TestAugmentRecipe(RecipeContract):
    recipe = "envtuning.augment"

    def check_result(self, result, run_dir):
        # the random tiny model only breaks the format: nothing to mine, no endpoint called
        assert result.metrics == {"failures": 0.0, "groups": 0.0, "attempts": 0.0, "approved": 0.0}
        assert (run_dir / "hints.yaml").is_file()


def test_paper_presets_carry_the_paper_settings():
    entry = registry.get_recipe("envtuning.curriculum")
    cfg = load_config(entry.config_cls(), preset="paper", presets=entry.presets)
    rl = cfg.trainer.rl
    assert cfg.trainer.backend == "verl" and cfg.trainer.learning_rate == 1e-6
    assert (rl.group_size, rl.kl_coef, rl.kl_estimator) == (16, 0.1, "low_var_kl")
    assert (rl.clip_low, rl.clip_high, rl.dual_clip, rl.entropy_coef) == (0.2, 0.28, 10.0, 0.001)
    assert section(cfg.trainer, VerlConfig).gpus_per_node == 8
    assert cfg.stages == paper_stages()
    assert [s.batch_size for s in cfg.stages] == [16, 32, 32, 32]
    assert [s.max_response_tokens for s in cfg.stages] == [10_000, 10_000, 24_576, 24_576]


def test_curriculum_resumes_finished_stages_without_training(tmp_path, aworld_home):
    """A run whose state says every stage is done only re-evaluates (no backend call)."""
    entry = registry.get_recipe("envtuning.curriculum")
    cfg = load_config(
        entry.config_cls(),
        preset="tiny-cpu-bfcl",
        presets=entry.presets,
        overrides=["evaluation.enabled=false"],
    )
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "config.yaml").write_text(to_yaml(cfg))  # the run being resumed
    names = [s.name for s in cfg.stages]
    record = {"start": "s", "feedback": "hints", "end": "ckpt", "folder": str(run_dir / "x")}
    state = {
        "model": "ckpt",
        "finished": names,
        "stages": {
            n: {**record, "validations": [{"step": 4.0, "val/reward": 0.25}]} for n in names
        },
    }
    (run_dir / "curriculum_state.json").write_text(json.dumps(state))
    result, _ = execute(
        "envtuning.curriculum", entry.run_fn(), cfg, output_dir=run_dir, resume=True, quiet=True
    )
    assert result.metrics["stages_finished"] == 4.0
    assert result.metrics["hard/val_accuracy"] == 0.25
    assert not (run_dir / "stages").exists()


def _scripted_roles(body):
    """Test double for agent, generator and judge on one server."""
    system = body["messages"][0]["content"]
    if system.startswith("You are an Augmentation Generator"):
        return json.dumps(
            {
                "reasoning": "r",
                "need_augmentation": True,
                "error_category": "parameter_constraint",
                "augmentation_type": "clarify_constraint",
                "augmented_feedback": "cd accepts one folder name per call.",
            }
        )
    if system.startswith("You are a Constitutional Judge"):
        return json.dumps(
            {
                "reasoning": "ok",
                "solution_leakage": False,
                "exploration_constraint": False,
                "actionability": True,
                "hint_quality": "good",
                "overall_approved": True,
                "suggestions": "",
            }
        )
    payload = json.dumps([{"name": "cd", "arguments": {"folder": "a/b"}}])
    return f"<think>go</think><tool_call>{payload}</tool_call>"


def test_augment_writes_a_loadable_hint_pack(tmp_path, aworld_home):
    from aworld_rl_envtuning.augmentation import load_hint_pack

    entry = registry.get_recipe("envtuning.augment")
    with ScriptedLLMServer(_scripted_roles) as server:
        llm = {
            "provider": "openai",
            "base_url": server.base_url,
            "model": server.model,
            "api_key_env": "",
        }
        config = tmp_path / "augment.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "agent": llm,
                    "generator": llm,
                    "judge": llm,
                    "entry_ids": ["multi_turn_base_0"],
                    "max_steps_per_turn": 2,
                    "min_count": 2,
                }
            )
        )
        cfg = load_config(entry.config_cls(), config_file=config)
        result, _ = execute(
            "envtuning.augment", entry.run_fn(), cfg, output_dir=tmp_path / "run", quiet=True
        )
    pack = load_hint_pack(result.outputs["hints"])
    assert result.metrics["approved"] == 1.0 and result.metrics["attempts"] == 1.0
    (hint,) = pack.hints
    assert hint.api_class == "GorillaFileSystem" and hint.methods == ("cd",)
    assert hint.hint == "cd accepts one folder name per call."
    error = '{"error": "cd: x/y: Unsupported path. Only one folder level at a time is supported."}'
    assert hint.applies("GorillaFileSystem", "cd", error)


def test_paper_preset_dry_run_writes_verl_launches(tmp_path, aworld_home, capsys):
    """The paper preset on verl without GPUs: each stage's launch is written with dynamic
    batching and a per-GPU memory estimate, the final evaluation is described, nothing runs."""
    entry = registry.get_recipe("envtuning.curriculum")
    cfg = load_config(
        entry.config_cls(),
        preset="paper",
        presets=entry.presets,
        overrides=[
            "trainer.verl.dry_run=true",
            "trainer.verl.resolve_config=false",
            "data.max_train_entries=2",
        ],
    )
    result, run = execute(
        "envtuning.curriculum", entry.run_fn(), cfg, output_dir=tmp_path / "run", quiet=True
    )
    launches = {
        p.parent.name: json.loads(p.read_text())["overrides"]
        for p in run.dir.glob("stages/*/verl_launch.json")
    }
    assert sorted(launches) == ["1-syntax", "2-hints", "3-hard", "4-independent"]
    hard = launches["3-hard"]
    for expected in (
        "data.train_batch_size=32",
        "data.max_response_length=24576",
        "actor_rollout_ref.actor.optim.lr=1e-06",
        "actor_rollout_ref.actor.kl_loss_coef=0.1",
        "actor_rollout_ref.actor.kl_loss_type=low_var_kl",
        "actor_rollout_ref.actor.clip_ratio_low=0.2",
        "actor_rollout_ref.actor.clip_ratio_high=0.28",
        "actor_rollout_ref.actor.clip_ratio_c=10.0",
        "actor_rollout_ref.actor.entropy_coeff=0.001",
        "actor_rollout_ref.rollout.n=16",
        "trainer.n_gpus_per_node=8",
        "trainer.test_freq=1",
        "actor_rollout_ref.actor.use_dynamic_bsz=true",
        "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=65536",
        "actor_rollout_ref.rollout.n=16",
        "actor_rollout_ref.rollout.tensor_model_parallel_size=1",
        "actor_rollout_ref.rollout.gpu_memory_utilization=0.8",
        "actor_rollout_ref.rollout.max_model_len=32768",
        "actor_rollout_ref.model.enable_gradient_checkpointing=true",
        "actor_rollout_ref.model.use_remove_padding=true",
        "actor_rollout_ref.actor.ppo_mini_batch_size=32",
        "trainer.checkpoint_callback_class=aworld_rl_core.backends.verl.stopping.StopRuleCallback",
    ):
        assert expected in hard
    # a vLLM key verl's SGLang server would ignore is not passed
    assert not any("max_num_batched_tokens" in o for o in hard)
    # each stage starts from the previous stage's final model (2 entries make no full batch
    # of 32: a dry run plans one step; the full split's figures are the next test's)
    assert (
        "actor_rollout_ref.model.path="
        f"{run.dir}/stages/2-hints/checkpoints/global_step_1/actor/huggingface"
    ) in hard
    assert "data.train_batch_size=16" in launches["1-syntax"]
    assert "data.max_response_length=10000" in launches["1-syntax"]
    out = capsys.readouterr().out
    assert (
        out.count("fits in 80 GiB") == 4 and out.count("| rollout | **total** | **78.42** |") == 4
    )
    assert "final evaluation (not run in a dry run): 300 held-out entries" in out
    assert result.metrics["stages_finished"] == 4.0


def test_paper_curriculum_steps_are_verls_and_each_stage_starts_from_a_saved_step(
    tmp_path, aworld_home
):
    """The paper's split (75 / 100 / 400 / 400 entries at batch 16 / 32 / 32 / 32, 20 epochs):
    verl's drop_last loader runs 80 / 60 / 240 / 240 steps, and each stage starts from the
    checkpoint of the previous stage's last step (verl always saves its last step)."""
    from aworld_rl_core.backends.batching import engine_steps

    entry = registry.get_recipe("envtuning.curriculum")
    cfg = load_config(
        entry.config_cls(),
        preset="paper",
        presets=entry.presets,
        overrides=["trainer.verl.dry_run=true", "trainer.verl.resolve_config=false"],
    )
    _result, run = execute(
        "envtuning.curriculum", entry.run_fn(), cfg, output_dir=tmp_path / "run", quiet=True
    )
    stages = sorted(run.dir.glob("stages/*/verl_launch.json"))
    values = [dict(o.split("=", 1) for o in json.loads(p.read_text())["overrides"]) for p in stages]
    steps = []
    for v, p in zip(values, stages, strict=True):
        record = json.loads((p.parent / "stage.json").read_text())
        n, batch = record["training_entries"], int(v["data.train_batch_size"])
        total = engine_steps(
            n,
            batch,
            total_epochs=int(v["trainer.total_epochs"]),
            total_training_steps=int(v["trainer.total_training_steps"]),
        )
        assert total == int(v["trainer.total_training_steps"]) == record["max_steps"]
        steps.append(total)
    assert steps == [80, 60, 240, 240]
    names = [p.parent.name for p in stages]
    for previous, name, v, n in zip(names, names[1:], values[1:], steps, strict=False):
        assert v["actor_rollout_ref.model.path"] == (
            f"{run.dir}/stages/{previous}/checkpoints/global_step_{n}/actor/huggingface"
        ), name


def test_ground_truth_agent_scores_100_on_all_800_and_bfcl_scores_the_files(tmp_path, aworld_home):
    from aworld_rl_core.tooluse.bfcl.reference import BfclReference

    entry = registry.get_recipe("envtuning.eval")
    cfg = load_config(entry.config_cls(), preset="ground-truth", presets=entry.presets)
    assert cfg.protocol == "bfcl"
    result, run = execute(
        "envtuning.eval", entry.run_fn(), cfg, output_dir=tmp_path / "run", quiet=True
    )
    assert result.metrics["entries"] == 800.0
    for category in ("base", "miss_func", "miss_param", "long_context"):
        assert result.metrics[f"accuracy/multi_turn_{category}"] == 1.0
    assert result.metrics["accuracy/average"] == 1.0
    assert (run.dir / "accuracy.png").is_file()
    summary = json.loads((run.dir / "bfcl" / "scores.json").read_text())
    assert summary["protocol"] == "bfcl" and summary["model"] == "Qwen/Qwen3-8B"
    assert summary["command"].startswith(f"BFCL_PROJECT_ROOT={run.dir / 'bfcl'} bfcl evaluate")
    ref = BfclReference(tmp_path / "bfcl-root")
    for category, counts in summary["categories"].items():
        path = result.outputs[f"bfcl_{category}_result"]
        assert (
            ref.score_file(path, category)[:2] == (counts["correct"], counts["total"]) == (200, 200)
        )
    report = (run.dir / "report.md").read_text()
    assert "## BFCL multi-turn (bfcl protocol)" in report and "Protocol: **bfcl**" in report


def _ids(tmp_path, *overrides):
    from aworld_rl_envtuning.recipes.evaluate import _entry_ids

    entry = registry.get_recipe("envtuning.eval")
    return _entry_ids(load_config(entry.config_cls(), overrides=list(overrides)))


def test_the_entries_are_the_papers_400_by_default_or_all_or_a_recorded_split(tmp_path):
    from aworld_rl_envtuning.data import SplitConfig, bfcl_split, write_split

    ids, text = _ids(tmp_path)
    assert len(ids) == 400 and text.startswith("test: the paper's test set")
    assert "100 multi_turn_base" in text and "seed 0" in text
    split = bfcl_split(SplitConfig())
    assert not set(ids) & set(split.of("train"))
    assert len(_ids(tmp_path, "entries=held_out")[0]) == 300
    assert len(_ids(tmp_path, "entries=all")[0]) == 800
    recorded = bfcl_split(SplitConfig(seed=7, train_per_category=150, validation_per_category=10))
    path = write_split(recorded, tmp_path)
    ids, text = _ids(tmp_path, f"split_file={path}")
    assert sorted(ids) == sorted(recorded.of("validation") + recorded.of("held_out"))
    assert len(ids) == 200 and f"split from {path}" in text
    with pytest.raises(FileNotFoundError, match="split.json"):
        _ids(tmp_path, f"split_file={tmp_path / 'missing.json'}")


def test_bfcl_protocol_is_greedy_and_the_result_model_is_checked(tmp_path, aworld_home):
    entry = registry.get_recipe("envtuning.eval")
    for i, (overrides, message) in enumerate(
        (
            (["llm.temperature=0.7"], "protocol=bfcl decodes greedily"),
            (["agent=ground_truth", "result_model=my-model"], "not in bfcl-eval's model registry"),
        )
    ):
        cfg = load_config(entry.config_cls(), overrides=overrides)
        with pytest.raises(ValueError, match=message):
            execute("envtuning.eval", entry.run_fn(), cfg, output_dir=tmp_path / str(i), quiet=True)


@pytest.mark.parametrize("recipe", ["envtuning.eval", "envtuning.augment"])
def test_old_first_n_key_names_limit(recipe):
    """``entries_per_category`` became ``limit`` (null = all): the old key is an error naming
    the new one, never silently ignored, and ``limit=0`` (once "all") says to write null."""
    from aworld_rl_core.errors import ConfigError

    entry = registry.get_recipe(recipe)

    def load(*overrides):
        return load_config(entry.config_cls(), presets=entry.presets, overrides=list(overrides))

    with pytest.raises(ConfigError, match="entries_per_category is not set here: it is now 'lim"):
        load("entries_per_category=1")
    with pytest.raises(ConfigError, match="0 no longer means all: write null"):
        load("limit=0")
    assert load().limit is None and load("limit=2").limit == 2


@pytest.mark.parametrize(
    ("recipe", "section", "old", "new"),
    [
        ("envtuning.stage", "validation", "0", "validation.enabled=false"),
        ("envtuning.curriculum", "validation", "0", "validation.enabled=false"),
        ("envtuning.curriculum", "evaluation", "-1", "evaluation.enabled=false"),
        ("envtuning.curriculum", "evaluation", "0", "evaluation.limit=null"),
    ],
)
def test_old_section_sizes_name_limit_and_enabled(recipe, section, old, new):
    """``validation.entries_per_category`` (0 = none) and ``evaluation.entries_per_category``
    (0 = all, -1 = skip) became ``<section>.limit`` (null = all) and ``<section>.enabled``: the
    old key is an error that names both and says what its special values are now."""
    import re

    from aworld_rl_core.errors import ConfigError

    entry = registry.get_recipe(recipe)

    def load(*overrides):
        return load_config(entry.config_cls(), presets=entry.presets, overrides=list(overrides))

    pattern = (
        f"{section}.entries_per_category is not set here: it is now '{section}.limit'.*"
        f"'{section}.enabled'.*entries_per_category={old} -> {re.escape(new)}"
    )
    with pytest.raises(ConfigError, match=pattern):
        load(f"{section}.entries_per_category={old}")
    with pytest.raises(ConfigError, match="0 no longer means all: write null"):
        load(f"{section}.limit=0")
    cfg = getattr(load(), section)
    assert cfg.enabled is True and cfg.limit is None
    assert getattr(load(f"{section}.limit=2", f"{section}.enabled=false"), section).limit == 2


def test_validation_and_evaluation_entries_follow_limit_and_enabled():
    """The first ``limit`` entries of each category (null: all of them), none when disabled:
    4 categories x the split's 2 validation and 3 held-out entries each."""
    from types import SimpleNamespace

    from aworld_rl_envtuning.data import CATEGORIES, SplitConfig, split_ids
    from aworld_rl_envtuning.recipes.common import ValidationConfig
    from aworld_rl_envtuning.recipes.curriculum import EvaluationConfig
    from aworld_rl_envtuning.recipes.training import describe_evaluation, validation_ids

    ids = {c: [f"{c}_{i}" for i in range(10)] for c in CATEGORIES}
    split = split_ids(ids, SplitConfig(train_per_category=5, validation_per_category=2))
    firsts = [split.of("validation", [c])[0] for c in CATEGORIES]
    assert len(CATEGORIES) == 4
    assert validation_ids(split, ValidationConfig(limit=1)) == firsts
    assert len(validation_ids(split, ValidationConfig())) == 8
    assert validation_ids(split, ValidationConfig(enabled=False, limit=1)) == []

    def held_out(limit):
        cfg = SimpleNamespace(
            evaluation=EvaluationConfig(limit=limit),
            validation=ValidationConfig(),
            stages=[SimpleNamespace(prompt_style="basic")],
        )
        return describe_evaluation("m", split, cfg)

    assert ": 12 held-out entries" in held_out(None)  # 10 - 5 - 2 = 3 per category
    assert ": 8 held-out entries" in held_out(2)
