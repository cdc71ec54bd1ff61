"""Round logic of the curriculum with a scripted backend and validator (test doubles): each
round starts from the last checkpoint, the plateau rule ends stages, a killed run resumes."""

import itertools
import json

import pytest

from aworld_rl_core.config import load_config
from aworld_rl_core.runs import RunResult, execute
from aworld_rl_envtuning.recipes import training
from aworld_rl_envtuning.recipes.curriculum import CurriculumConfig, run_curriculum


class ScriptedBackend:
    """Test double of a training backend: records jobs, writes an empty checkpoint folder."""

    name = "scripted"

    def __init__(self, log, fail_at=None):
        self.log, self.fail_at = log, fail_at

    def train(self, job):
        if len(self.log) == self.fail_at:
            raise KeyboardInterrupt("killed")
        self.log.append(job)
        ckpt = job.run.checkpoint_dir / f"checkpoint-{job.trainer.max_steps}"
        ckpt.mkdir(parents=True, exist_ok=True)
        return RunResult(metrics={"grad_norm": 1.0, "reward_mean": 0.5}, checkpoints=[ckpt])


@pytest.fixture
def scripted(monkeypatch):
    jobs, accuracies = [], {}

    def install(fail_at=None, curve=(0.1, 0.3, 0.3, 0.3, 0.3, 0.3)):
        backend = ScriptedBackend(jobs, fail_at)
        monkeypatch.setattr("aworld_rl_core.registry.get_trainer", lambda name: lambda: backend)

        def validate(model_path, ids, cfg, env, *, style):
            stage = model_path.split("/stages/")[1].split("/")[0]
            accuracies[stage] = accuracies.get(stage, -1) + 1
            return {"accuracy/average": curve[min(accuracies[stage], len(curve) - 1)]}

        monkeypatch.setattr(training, "validate_model", validate)
        return jobs

    return install


def config(**over):
    cfg = load_config(
        CurriculumConfig,
        preset="tiny-cpu",
        presets="aworld_rl_envtuning:configs/curriculum",
        overrides=[
            "evaluation.entries_per_category=-1",
            "transition.rule=plateau",
            "data.max_train_entries=100",
            "model.name_or_path=base-model",
            *[f"{k}={v}" for k, v in over.items()],
        ],
    )
    return cfg


def test_plateau_ends_each_stage_and_rounds_chain_checkpoints(scripted, tmp_path, aworld_home):
    jobs = scripted()
    result, run = execute(
        "envtuning.curriculum", run_curriculum, config(), quiet=True, output_dir=tmp_path / "run"
    )
    state = json.loads((run.dir / "curriculum_state.json").read_text())
    # accuracy 0.1, 0.3, 0.3, 0.3, 0.3: no gain over 0.3 in the last 3 rounds after round 5
    assert {k: len(v) for k, v in state["rounds"].items()} == {
        "syntax": 5,
        "hints": 5,
        "hard": 5,
        "independent": 5,
    }
    assert len(jobs) == 20
    for previous, job in itertools.pairwise(jobs):
        assert job.model.name_or_path == str(previous.run.checkpoint_dir / "checkpoint-1")
    assert jobs[0].model.name_or_path == "base-model"
    assert [j.trainer.max_steps for j in jobs] == [1] * 20
    assert len({j.trainer.seed for j in jobs}) == 20  # a fresh data order every round
    options = jobs[-1].env.kwargs
    assert options["augmentation"] is False and options["reward"]["name"] == "progress"
    assert jobs[0].env.kwargs["reward"]["name"] == "format"
    assert result.metrics["stages_finished"] == 4.0


def test_killed_run_resumes_where_it_stopped(scripted, tmp_path, aworld_home):
    jobs = scripted(fail_at=7)  # killed in stage 2, round 2 (after 5 + 2 rounds)
    out = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        execute("envtuning.curriculum", run_curriculum, config(), output_dir=out, quiet=True)
    state = json.loads((out / "curriculum_state.json").read_text())
    assert state["finished"] == ["syntax"] and len(state["rounds"]["hints"]) == 2
    done = list(jobs)
    jobs.clear()
    scripted()  # a fresh backend that does not fail
    execute(
        "envtuning.curriculum", run_curriculum, config(), output_dir=out, resume=True, quiet=True
    )
    assert jobs[0].run.dir.name == "round-2" and "2-hints" in str(jobs[0].run.dir)
    assert jobs[0].model.name_or_path == str(done[-1].run.checkpoint_dir / "checkpoint-1")
    assert len(done) + len(jobs) == 20
