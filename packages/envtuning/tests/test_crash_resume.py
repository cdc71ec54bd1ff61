"""Crash-and-fault harness (issue 29): ``envtuning.curriculum`` (warm start, then the staged
curriculum with validation) killed with SIGKILL at a seeded random point, resumed, and compared
with an uninterrupted run: metrics rows and validation history (core's
``aworld_rl_core.testing.crash``). Training runs: slow."""

import json
import os

import pytest

from aworld_rl_core.runs import RunResult, execute
from aworld_rl_core.testing.crash import CrashCase, check_kill_resume

# the tiny-cpu preset cut to the fewest steps that still cross every boundary a resume must
# carry (about 26 CPU-seconds a run, three runs a case): a warm start of 4 SFT steps with a
# checkpoint every 2; stage 1 of up to 6 GRPO steps (2 training entries, batch 2) with a
# checkpoint every step and a validation every 2 steps, ended by the plateau rule after its
# second validation (patience 1; a min_delta of 1.0 no accuracy can reach, a grad-norm
# spread any finite norms meet) so the averaged gradient norm the rule reads spans a
# checkpoint; then stages 2-4 of one step each (three stage changes); one held-out entry
# per category at every point. An entropy bonus gives nonzero gradients (the tiny model earns
# no reward, so the policy gradient alone is 0 and every grad norm would be equal).
SMALL = (
    "warm_start.steps=4",
    "warm_start.save_steps=2",
    "warm_start.entries=2",
    "warm_start.batch_size=2",
    "data.max_train_entries=2",
    "stages.0.epochs=6",
    "stages.1.epochs=1",
    "stages.2.epochs=1",
    "stages.3.epochs=1",
    "transition.rule=plateau",
    "transition.patience=1",
    "transition.min_delta=1.0",
    "transition.grad_window=2",
    "transition.max_grad_cv=1000",
    "validation.every=2",
    "validation.limit=1",
    "trainer.save_steps=1",
    "trainer.rl.group_size=2",
    "trainer.rl.max_turns=2",
    "trainer.rl.max_new_tokens=32",
    "trainer.rl.entropy_coef=0.01",
    "evaluation.points_per_category=1",
)
# a checkpoint being written (core's AtomicCheckpoints stages it before the rename)
SAVING = (
    "warm-start/checkpoints/.staging/checkpoint-*",
    "stages/*/checkpoints/.staging/checkpoint-*",
)


def _case(tmp_path, kill_when=()):
    env = {"AWORLD_RL_HOME": str(tmp_path / "home")}
    env["BFCL_PROJECT_ROOT"] = os.environ.get("BFCL_PROJECT_ROOT", str(tmp_path / "bfcl"))
    return CrashCase(
        "envtuning.curriculum", overrides=SMALL, env=env, timeout_s=900, kill_when=kill_when
    )


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_curriculum_killed_at_a_random_point_resumes_to_the_same_history(tmp_path, seed):
    report = check_kill_resume(_case(tmp_path), tmp_path / "runs", seed)
    print(report.summary())  # where the kill landed (-s / -rP)
    assert report.killed and report.differences == [], report.summary()


@pytest.mark.parametrize("seed", [2, pytest.param(3, marks=pytest.mark.slow)])
def test_curriculum_killed_mid_save_resumes_to_the_same_history(tmp_path, seed):
    report = check_kill_resume(_case(tmp_path, SAVING), tmp_path / "runs", seed)
    print(report.summary())
    assert report.killed and report.mid_save, report.summary()
    assert report.differences == [], report.summary()


@pytest.mark.slow
def test_eval_killed_at_a_random_point_resumes_to_the_same_results(tmp_path):
    """``envtuning.eval`` (BFCL multi-turn with a tiny local model; BFCL result files compared
    as rows without their ``latency``)."""
    env = {"AWORLD_RL_HOME": str(tmp_path / "home")}
    env["BFCL_PROJECT_ROOT"] = os.environ.get("BFCL_PROJECT_ROOT", str(tmp_path / "bfcl"))
    report = check_kill_resume(CrashCase("envtuning.eval", env=env), tmp_path / "runs", 0)
    assert report.killed and report.differences == [], report.summary()


class _Backend:
    """Test double of a training backend that logs like one: each step's row in its own run
    (a resume without a checkpoint trains and logs again in place of the rows of before), none
    when resumed after its last step."""

    def train(self, job):
        from aworld_rl_core.backends.validation import HISTORY_FILE, write_history

        steps = job.trainer.max_steps
        model = job.run.checkpoint_dir / f"checkpoint-{steps}"
        if not model.is_dir():  # else resumed after its last step: nothing to train or log
            job.run.rewind(0)
            for step in range(1, steps + 1):
                job.run.log({"reward_mean": step / 10, "grad_norm": 1.0}, step=step)
        model.mkdir(parents=True, exist_ok=True)
        history = job.run.dir / HISTORY_FILE
        write_history(history, [{"step": float(steps), "val/reward": 0.25, "grad_norm": 1.0}])
        metrics = {"global_step": float(steps)}
        return RunResult(metrics=metrics, outputs={"model": model, "validation": history})


@pytest.mark.parametrize(
    ("kill_at", "where"),
    [(1, "after the warm start logged its rows"), (3, "after stage 1 forwarded its curve")],
)
def test_a_curriculum_killed_between_logging_and_saving_its_state_logs_each_row_once(
    tmp_path, monkeypatch, kill_at, where
):
    """Found by the harness (a kill mid-save of stage 2's first checkpoint): what the warm
    start logged (step 0) and what a stage forwarded into the run's metrics were logged again
    by the resume (main: step 0 twice; stage 1's steps twice)."""
    from aworld_rl_core.config import load_config
    from aworld_rl_envtuning import curriculum
    from aworld_rl_envtuning.recipes import warm_start
    from aworld_rl_envtuning.recipes.curriculum import CurriculumConfig, run_curriculum

    monkeypatch.setenv("AWORLD_RL_HOME", str(tmp_path / "home"))
    monkeypatch.setattr("aworld_rl_core.registry.get_trainer", lambda name: _Backend)

    def warm(cfg, start, split, run):
        run.log({"warm_start/val/after/reward": 0.5}, step=0)
        return start

    monkeypatch.setattr(warm_start, "warm_start", warm)
    cfg = load_config(
        CurriculumConfig,
        preset="tiny-cpu",
        presets="aworld_rl_envtuning:configs/curriculum",
        overrides=[
            "model.name_or_path=base-model",
            "evaluation.points_per_category=0",
            "data.max_train_entries=2",
        ],
    )

    def rows(out):
        lines = (out / "metrics.jsonl").read_text().splitlines()
        return [{k: v for k, v in json.loads(x).items() if k != "time"} for x in lines]

    execute("envtuning.curriculum", run_curriculum, cfg, output_dir=tmp_path / "a", quiet=True)
    save, saves = curriculum.CurriculumState.save, []

    def killed(self, directory):
        saves.append(directory)
        if len(saves) == kill_at:
            raise KeyboardInterrupt(f"kill -9 {where}")
        return save(self, directory)

    out = tmp_path / "b"
    monkeypatch.setattr(curriculum.CurriculumState, "save", killed)
    with pytest.raises(KeyboardInterrupt):
        execute("envtuning.curriculum", run_curriculum, cfg, output_dir=out, quiet=True)
    monkeypatch.setattr(curriculum.CurriculumState, "save", save)
    execute("envtuning.curriculum", run_curriculum, cfg, output_dir=out, resume=True, quiet=True)
    whole = rows(tmp_path / "a")
    assert [r.get("step") for r in whole if "step" in r] == [0, 1, 2, 3, 4]  # a step a stage
    assert rows(out) == whole


@pytest.mark.slow
def test_stage_killed_at_a_random_point_resumes_to_the_same_metrics(tmp_path):
    """``envtuning.stage`` (one stage of three GRPO steps, a checkpoint every step)."""
    env = {"AWORLD_RL_HOME": str(tmp_path / "home")}
    env["BFCL_PROJECT_ROOT"] = os.environ.get("BFCL_PROJECT_ROOT", str(tmp_path / "bfcl"))
    case = CrashCase(
        "envtuning.stage", overrides=("stage.epochs=3", "trainer.save_steps=1"), env=env
    )
    report = check_kill_resume(case, tmp_path / "runs", 0)
    assert report.killed and report.differences == [], report.summary()
