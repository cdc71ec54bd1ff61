"""The curriculum's stages with a scripted backend (a test double): each stage is one backend
run from the previous stage's final model, which is its KL reference to the end; validation and
the plateau rule go into that run; a killed stage resumes the same run with the same start."""

import itertools
import json

import pytest

from aworld_rl_core.backends.validation import HISTORY_FILE, write_history
from aworld_rl_core.config import load_config
from aworld_rl_core.engine import Limits
from aworld_rl_core.errors import ConfigError
from aworld_rl_core.runs import RunResult, execute
from aworld_rl_envtuning.recipes.curriculum import CurriculumConfig, run_curriculum


class ScriptedBackend:
    """Test double of a training backend: records jobs, writes a final model folder and a
    validation history, and can be killed on its ``fail_at``-th job."""

    name = "scripted"

    def __init__(self, log, fail_at=None):
        self.log, self.fail_at = log, fail_at

    def train(self, job):
        if len(self.log) == self.fail_at:
            self.log.append(job)
            raise KeyboardInterrupt("killed")
        self.log.append(job)
        model = job.run.checkpoint_dir / f"checkpoint-{job.trainer.max_steps}"
        model.mkdir(parents=True, exist_ok=True)
        history = job.run.dir / HISTORY_FILE
        write_history(history, [{"step": 1.0, "val/reward": 0.25, "grad_norm": 1.0}])
        metrics = {"global_step": float(job.trainer.max_steps), "stopped_early": 1.0}
        return RunResult(metrics=metrics, outputs={"model": model, "validation": history})


@pytest.fixture
def scripted(monkeypatch):
    jobs = []

    def install(fail_at=None):
        backend = ScriptedBackend(jobs, fail_at)
        monkeypatch.setattr("aworld_rl_core.registry.get_trainer", lambda name: lambda: backend)
        return jobs

    return install


def config(*overrides):
    return load_config(
        CurriculumConfig,
        preset="tiny-cpu-bfcl",
        presets="aworld_rl_envtuning:configs/curriculum",
        overrides=[
            "evaluation.enabled=false",
            "transition.rule=plateau",
            "warm_start.steps=0",
            "model.name_or_path=base-model",
            *overrides,
        ],
    )


def test_each_stage_is_one_run_from_the_previous_stage(scripted, tmp_path, aworld_home):
    jobs = scripted()
    result, run = execute(
        "envtuning.curriculum", run_curriculum, config(), quiet=True, output_dir=tmp_path / "run"
    )
    assert len(jobs) == 4  # one backend run per stage, no rounds
    assert jobs[0].model.name_or_path == "base-model"
    for previous, job in itertools.pairwise(jobs):
        ckpt = previous.run.checkpoint_dir / f"checkpoint-{previous.trainer.max_steps}"
        assert job.model.name_or_path == str(ckpt)
    # tiny-cpu: 4 entries per stage at batch 1, one epoch in stage 1, a quarter in the others
    assert [j.trainer.max_steps for j in jobs] == [4, 1, 1, 1]
    assert [j.trainer.batch_size for j in jobs] == [1, 1, 1, 1]
    for job in jobs:  # validation and the plateau rule run inside the stage's run
        assert job.validation.every == 4 and not job.validation.before_train
        # whole validation episodes: replies capped as in training, turns not
        assert job.validation.limits == Limits(max_new_tokens=128)
        assert job.validation.stop_ref().target == "aworld_rl_envtuning.curriculum:plateau"
        assert job.eval_rows and all(
            r["env_options"]
            == {"augmentation": False, "max_steps_per_turn": 2, "reward": {"name": "accuracy"}}
            for r in job.eval_rows
        )
    feedback = [j.env.kwargs["augmentation"] for j in jobs]
    assert feedback == [False, True, True, False]  # stage 1 without hints
    assert jobs[0].env.kwargs["reward"]["name"] == "format"
    state = json.loads((run.dir / "curriculum_state.json").read_text())
    assert [state["stages"][n]["feedback"] for n in state["finished"]] == [
        "BFCL's errors",
        "hints",
        "hints",
        "BFCL's errors",
    ]
    stage_file = json.loads((run.dir / "stages" / "2-hints" / "stage.json").read_text())
    assert stage_file["kl_reference"] == stage_file["start"] == jobs[1].model.name_or_path
    assert stage_file["feedback"] == "hints"
    assert result.metrics["stages_finished"] == 4.0
    assert result.metrics["hints/val_accuracy"] == 0.25
    report = (run.dir / "report.md").read_text()
    assert "| 2 hints | base | progress | hints | basic | 1 | 1 | 1 | 25.00 | plateau |" in report


def test_killed_stage_resumes_the_same_run_with_the_same_reference(scripted, tmp_path, aworld_home):
    jobs = scripted(fail_at=1)  # killed inside stage 2
    out = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        execute("envtuning.curriculum", run_curriculum, config(), output_dir=out, quiet=True)
    state = json.loads((out / "curriculum_state.json").read_text())
    assert state["finished"] == ["syntax"]
    start = state["stages"]["hints"]["start"]
    assert start == str(jobs[0].run.checkpoint_dir / "checkpoint-4")
    killed = jobs[1]
    jobs.clear()
    scripted()
    execute(
        "envtuning.curriculum", run_curriculum, config(), output_dir=out, resume=True, quiet=True
    )
    resumed = jobs[0]
    assert len(jobs) == 3  # stage 1 is not trained again
    assert resumed.run.dir == killed.run.dir and resumed.run.resume  # the backend's own resume
    assert resumed.model.name_or_path == start  # the reference is still the stage's start


@pytest.mark.parametrize(
    ("key", "stage_field"),
    [
        ("trainer.batch_size=8", "stages.N.batch_size"),
        ("trainer.max_steps=5", "stages.N.epochs"),
        ("trainer.epochs=2", "stages.N.epochs"),
        ("trainer.rl.max_response_tokens=99", "stages.N.max_response_tokens"),
    ],
)
def test_a_trainer_field_a_stage_sets_is_an_error_naming_the_stage_field(key, stage_field):
    with pytest.raises(ConfigError, match=stage_field.replace(".", r"\.")):
        config(key)


def test_help_lists_the_stage_fields_not_the_replaced_trainer_fields(capsys):
    from aworld_rl_core.cli import main

    assert main(["envtuning.curriculum", "--preset", "paper", "--help"]) in (0, None)
    text = capsys.readouterr().out
    assert "stages.0.batch_size (int, >= 1, default 16)" in text
    assert "stages.3.max_response_tokens (int, >= 1, default 24576)" in text
    for hidden in ("batch_size", "max_steps", "epochs", "rl.max_response_tokens"):
        assert f"  trainer.{hidden} (" not in text


def test_warm_start_rows_replay_the_ground_truth_in_the_protocol():
    from aworld_rl_envtuning.env import get_entry
    from aworld_rl_envtuning.recipes.warm_start import trajectories
    from aworld_rl_envtuning.replay import ground_truth_responses

    ids = ["multi_turn_base_0", "multi_turn_miss_func_0"]
    rows = trajectories(ids, augmentation=False, tool_docs="compact", max_steps_per_turn=20)
    for entry_id, row in zip(ids, rows, strict=True):
        replies = [m["content"] for m in row["messages"] if m["role"] == "assistant"]
        expected = [t for turn in ground_truth_responses(get_entry(entry_id)) for t in turn]
        assert row["entry_id"] == entry_id and replies == expected
        assert all(r.startswith("<think>") for r in replies)
    with pytest.raises(RuntimeError, match="multi_turn_base_0 scores progress"):
        trajectories(ids[:1], augmentation=False, tool_docs="compact", max_steps_per_turn=1)


def test_a_warm_start_replays_the_stages_entries_first_then_the_rest_of_the_split():
    from aworld_rl_envtuning.curriculum import StageConfig
    from aworld_rl_envtuning.data import CATEGORIES, Split
    from aworld_rl_envtuning.recipes.common import DataConfig
    from aworld_rl_envtuning.recipes.warm_start import warm_start_ids

    train = {c: [f"{c}_{i}" for i in range(4)] for c in CATEGORIES}
    split = Split(0, {"train": train, "validation": {}, "held_out": {}})
    base = StageConfig(name="b", data="base", reward="progress")
    every = StageConfig(name="a", data="all", reward="progress")
    data = DataConfig(max_train_entries=2)  # base: base_0, base_2; all: base_0, miss_param_0
    own = ["multi_turn_base_0", "multi_turn_base_2", "multi_turn_miss_param_0"]
    assert warm_start_ids((base, every), split, data, 0)[:3] == own
    assert len(warm_start_ids((base, every), split, data, 0)) == 16  # the whole split, once
    assert warm_start_ids((base, every), split, data, 2) == own[:2]
    rest = [i for c in CATEGORIES for i in train[c] if i not in own]
    assert warm_start_ids((base, every), split, data, 6) == [*own, rest[0], rest[4], rest[8]]


def test_balanced_stages_give_every_category_the_largest_ones_count():
    from aworld_rl_envtuning.curriculum import StageConfig
    from aworld_rl_envtuning.data import CATEGORIES, Split
    from aworld_rl_envtuning.recipes.common import DataConfig
    from aworld_rl_envtuning.recipes.training import stage_entry_ids

    train: dict[str, list[str]] = {c: [] for c in CATEGORIES}  # miss_func, long_context: none
    train |= {
        "multi_turn_base": ["b0", "b1", "b2", "b3", "b4"],
        "multi_turn_miss_param": ["m0", "m1"],
    }
    split = Split(0, {"train": train, "validation": {}, "held_out": {}})
    every = StageConfig(name="a", data="all", reward="progress")
    base = StageConfig(name="b", data="base", reward="progress")
    balanced = DataConfig(balance_categories=True)
    assert stage_entry_ids(every, split, balanced) == [
        *("b0", "m0", "b1", "m1", "b2", "m0", "b3", "m1", "b4", "m0")
    ]
    assert stage_entry_ids(every, split, DataConfig()) == [*train["multi_turn_base"], "m0", "m1"]
    assert stage_entry_ids(base, split, balanced) == train["multi_turn_base"]  # one category


def test_a_warm_start_can_skip_micro_world_templates_that_rl_still_trains_on():
    from aworld_rl_core.tooluse import microworld as mw
    from aworld_rl_envtuning.curriculum import StageConfig
    from aworld_rl_envtuning.data import CATEGORIES, Split, SplitConfig, bfcl_split
    from aworld_rl_envtuning.recipes.common import DataConfig
    from aworld_rl_envtuning.recipes.training import stage_entry_ids
    from aworld_rl_envtuning.recipes.warm_start import warm_start_ids

    split = bfcl_split(SplitConfig(source="microworld"))
    every = StageConfig(name="a", data="all", reward="progress")
    data = DataConfig()
    ids = warm_start_ids((every,), split, data, 0, ("give", "no_target"))
    templates = [mw.micro_entry(i).template for i in split.of("train")]
    skipped = templates.count("give") + templates.count("no_target")
    assert skipped == 28  # 14 training combinations each (24 x 0.6)
    assert len(ids) == 184 - skipped
    assert not {mw.micro_entry(i).template for i in ids} & {"give", "no_target"}
    assert len(stage_entry_ids(every, split, data)) == 184  # RL plays them all
    with pytest.raises(ValueError, match="not training templates.*training templates: ask_then"):
        warm_start_ids((every,), split, data, 0, ("pay",))  # a held-out template
    bfcl = Split(0, {"train": {c: [f"{c}_0"] for c in CATEGORIES}})
    with pytest.raises(ValueError, match="set data.source=microworld"):
        warm_start_ids((every,), bfcl, data, 0, ("give",))


def test_warm_start_steps_teach_the_tiny_model_a_reply_that_parses(aworld_home, tmp_path):
    """A real learning signal, cheap: the random tiny model's greedy first reply on a training
    entry does not parse; after 100 warm-start steps on that entry's ground-truth episode it
    writes the ground-truth calls (CPU, fixed seed: deterministic)."""
    from aworld_rl_core.backends.base import TrainJob
    from aworld_rl_core.models import load_model_and_tokenizer
    from aworld_rl_core.models.config import ModelConfig
    from aworld_rl_core.registry import get_trainer
    from aworld_rl_core.runs import Run
    from aworld_rl_core.tooluse import get_parser
    from aworld_rl_envtuning.recipes.warm_start import WarmStartConfig, sft_trainer, trajectories

    rows = trajectories(
        ["multi_turn_base_50"], augmentation=False, tool_docs="compact", max_steps_per_turn=20
    )
    messages = rows[0]["messages"]
    prompt = messages[: [m["role"] for m in messages].index("assistant")]
    parse = get_parser("think_json", think_tag="think")

    def first_reply(name_or_path: str):
        model, tok = load_model_and_tokenizer(ModelConfig(name_or_path=name_or_path))
        inputs = tok.apply_chat_template(
            prompt, add_generation_prompt=True, return_tensors="pt", return_dict=True
        )
        out = model.generate(**inputs, max_new_tokens=128, do_sample=False)
        ids = out[0, inputs["input_ids"].shape[1] :].tolist()
        return parse(
            tok.decode(ids[: ids.index(tok.eos_token_id)] if tok.eos_token_id in ids else ids)
        )

    name = "tiny:qwen2:hidden=64,window=32"  # the tiny-cpu preset's model
    assert not first_reply(name).ok
    ws = WarmStartConfig(steps=100, batch_size=1, learning_rate=1e-2)
    run = Run(tmp_path / "warm-start", name="warm start", quiet=True)
    try:
        result = get_trainer("hf-sft")().train(
            TrainJob(
                model=ModelConfig(name_or_path=name),
                trainer=sft_trainer(ws, seed=0),
                run=run,
                train_rows=rows,
            )
        )
    finally:
        run.close()
    after = first_reply(str(result.outputs["model"]))
    assert after.ok, after.errors
    assert [c.name for c in after.calls] == ["lockDoors", "setHeadlights"]
