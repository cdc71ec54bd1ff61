"""The ``trl`` backend: TRL's GRPOTrainer with multi-turn rollouts over our environments.

Each completion is one episode played by the episode engine (``aworld_rl_core.engine``)
through TRL's ``rollout_func`` hook: model turns are trained on, environment and chat-template
tokens are masked out of the loss (``env_mask``). Rewards are the job's reward functions
(called with the episode messages as completions) plus, when the job has an environment, the
environment's own episode return. Importing this module imports no heavy library.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from aworld_rl_core.backends.base import TrainJob
from aworld_rl_core.backends.batching import plan_batches
from aworld_rl_core.backends.checkpoints import checkpoints, latest_checkpoint

if TYPE_CHECKING:
    from aworld_rl_core.runs import RunResult

log = logging.getLogger(__name__)

TRL_KL_ESTIMATORS = ("k3", "low_var_kl")
"""TRL computes the k3 estimator (``exp(r) - r - 1``); ``low_var_kl`` is k3 (verl also clips it
to [-10, 10], which only matters for far-off-policy tokens)."""
HEADLINE_METRICS = (
    "reward_mean",
    "reward_std",
    "kl",
    "entropy",
    "grad_norm",
    "loss",
    "tokens_per_s",
    "episode/return",
    "episode/turns",
)


def check_job(job: TrainJob) -> None:
    """Reject what this backend cannot do, with the fix in the message."""
    rl = job.trainer.rl
    if job.loss is not None or job.trainer.loss:
        raise ValueError(
            "the trl backend trains with the GRPO policy loss and takes no token loss "
            "(job.loss / trainer.loss): use trainer.backend=hf-sft for SFT losses"
        )
    if not job.train_rows:
        raise ValueError("the trl backend got no training rows")
    if not job.rewards and job.env is None:
        raise ValueError("the trl backend needs reward functions or an environment (or both)")
    if job.validation is not None and not job.eval_rows:
        raise ValueError("in-run validation (job.validation) plays job.eval_rows: give some")
    if rl.kl_estimator not in TRL_KL_ESTIMATORS:
        raise ValueError(
            f"trainer.rl.kl_estimator={rl.kl_estimator!r} is not available with trl (it computes "
            f"k3): use one of {', '.join(TRL_KL_ESTIMATORS)}, or trainer.backend=verl"
        )
    if rl.dual_clip is not None:
        log.warning(
            "trainer.rl.dual_clip=%s is ignored by the trl backend (verl only)", rl.dual_clip
        )
    expected = len(job.rewards) + (job.env is not None)
    if job.reward_weights is not None and len(job.reward_weights) not in (
        len(job.rewards),
        expected,
    ):
        raise ValueError(
            f"got {len(job.reward_weights)} reward weights for {len(job.rewards)} reward "
            f"functions{' + the environment return' if job.env is not None else ''}: give one "
            "per reward function (the environment return then weighs 1.0) or one more for it"
        )
    if rl.group_size < 2:
        raise ValueError(f"trainer.rl.group_size must be >= 2 for GRPO, got {rl.group_size}")
    plan_batches(job.trainer, n_rows=len(job.train_rows), rl=True)


def _reward_weights(job: TrainJob) -> list[float] | None:
    if job.reward_weights is None:
        return None
    weights = [float(w) for w in job.reward_weights]
    if job.env is not None and len(weights) == len(job.rewards):
        weights.append(1.0)
    return weights


def grpo_args(job: TrainJob, *, use_cpu: bool, eval_batch: int | None = None) -> Any:
    """Map our ``TrainerConfig`` onto TRL's ``GRPOConfig``."""
    from trl import GRPOConfig

    t, rl = job.trainer, job.trainer.rl
    plan = plan_batches(t, n_rows=len(job.train_rows), rl=True)
    return GRPOConfig(
        output_dir=str(job.run.checkpoint_dir),
        per_device_train_batch_size=plan.micro_batch,
        gradient_accumulation_steps=plan.accumulation,
        per_device_eval_batch_size=eval_batch or rl.group_size,
        num_generations=rl.group_size,
        max_completion_length=rl.max_response_tokens,
        temperature=rl.temperature,
        top_p=rl.top_p,
        beta=rl.kl_coef,
        epsilon=rl.clip_low,
        epsilon_high=rl.clip_high,
        entropy_coef=rl.entropy_coef,
        num_iterations=rl.iterations,
        reward_weights=_reward_weights(job),
        learning_rate=t.learning_rate,
        lr_scheduler_type="constant",
        weight_decay=t.weight_decay,
        max_grad_norm=t.max_grad_norm,
        max_steps=plan.steps,
        seed=t.seed,
        data_seed=t.seed,
        logging_steps=t.logging_steps,
        save_strategy="steps",
        save_steps=t.save_steps if t.save_steps > 0 else 10**9,  # always saved at the end
        save_total_limit=t.keep_checkpoints,
        use_cpu=use_cpu,
        bf16=not use_cpu,  # mixed precision on a GPU (TRL's default); fp32 on CPU
        fp16=False,
        report_to="none",
        disable_tqdm=True,
        remove_unused_columns=False,
    )


class TrlGrpoBackend:
    """GRPO with TRL on CPU or one GPU (see the module docstring)."""

    name = "trl"

    def build_trainer(self, job: TrainJob) -> tuple[Any, Any]:
        """The configured ``EnvGRPOTrainer`` and its ``RunLogCallback`` (not yet trained)."""
        check_job(job)
        import torch
        from datasets import Dataset
        from transformers import PrinterCallback, set_seed

        from aworld_rl_core.backends import trl_trainer as glue
        from aworld_rl_core.backends.run_log import RunLogCallback
        from aworld_rl_core.engine import ChatCodec, Limits
        from aworld_rl_core.models import is_tiny, load_model_and_tokenizer, model_dir

        t, rl, run = job.trainer, job.trainer.rl, job.run
        set_seed(t.seed)
        model, tokenizer = load_model_and_tokenizer(job.model, seed=t.seed)
        if rl.kl_coef > 0 and is_tiny(job.model.name_or_path):
            # TRL loads the KL reference from the config's path: the same tiny weights, on disk
            model.config._name_or_path = str(model_dir(job.model, seed=t.seed))
        rows = [*job.train_rows, *job.eval_rows]
        rollout = glue.EpisodeRollout(
            rows,
            job.env_factory(),
            ChatCodec(tokenizer),
            Limits.of(rl),
            temperature=rl.temperature,
            top_p=rl.top_p,
            call_constraint=rl.call_constraint,
        )
        rewards: list[Any] = [glue.EpisodeReward(fn, rows) for fn in job.reward_fns()]
        if job.env is not None:
            rewards.append(glue.env_return)
        callback = RunLogCallback(run, desc="GRPO steps", renames={"reward": "reward_mean"})
        callbacks: list[Any] = [callback]
        if job.validation is not None:
            callbacks.append(self._validation(job, rollout, tokenizer, rewards))
        trainer = glue.EnvGRPOTrainer(
            rollout=rollout,
            model=model,
            reward_funcs=rewards,
            args=grpo_args(job, use_cpu=not torch.cuda.is_available()),
            train_dataset=_index_dataset(Dataset, range(len(job.train_rows))),
            eval_dataset=(
                _index_dataset(Dataset, range(len(job.train_rows), len(rows)))
                if job.eval_rows
                else None
            ),
            processing_class=tokenizer,
            callbacks=callbacks,
        )
        trainer.remove_callback(PrinterCallback)  # metrics go to run.log, progress to run.progress
        return trainer, callback

    def plan(self, job: TrainJob) -> Any:
        """The launch plan: one process (this one), TRL's steps (``max_steps`` from
        ``plan_batches``), one GPU's memory, TRL's checkpoints."""
        from aworld_rl_core.backends import plan as p

        check_job(job)
        t, rl = job.trainer, job.trainer.rl
        batches = plan_batches(t, n_rows=len(job.train_rows), rl=True)
        memory, note = p.sft_memory(
            job.model.name_or_path,
            gpus=1,
            micro_batch=batches.micro_batch,
            seq_len=rl.max_response_tokens + rl.max_new_tokens,
            zero3=False,
            gradient_checkpointing=False,
        )
        final = job.run.checkpoint_dir / f"checkpoint-{batches.steps}"
        return p.LaunchPlan(
            backend=self.name,
            processes=[
                p.Process(
                    "trainer (in this process)",
                    ["trl.GRPOTrainer.train()"],
                    writes=[str(job.run.checkpoint_dir)],
                )
            ],
            steps=p.StepPlan(
                steps=batches.steps,
                steps_per_epoch=len(job.train_rows) // t.batch_size,
                epochs=t.epochs,
                samples_per_step=batches.samples_per_step,
                micro_batch=batches.micro_batch,
                world_size=1,
                accumulation=batches.accumulation,
                engine_settings={"max_steps": batches.steps, "num_generations": rl.group_size},
            ),
            checkpoints=p.CheckpointPlan(
                directory=str(job.run.checkpoint_dir),
                every=t.save_steps or batches.steps,
                keep=t.keep_checkpoints,
                final=str(final),
                model=str(final),
            ),
            packages=["aworld-rl-core[trl]", "torch (CUDA build on a GPU machine)"],
            memory_gib=memory,
            memory_note=note,
            notes=["the policy generates with transformers.generate (no rollout engine)"],
        )

    @staticmethod
    def _validation(job: TrainJob, rollout: Any, tokenizer: Any, rewards: list[Any]) -> Any:
        """The in-run validation callback: greedy episodes on the eval rows."""
        from aworld_rl_core.backends import trl_trainer as glue

        assert job.validation is not None
        indices = list(range(len(job.train_rows), len(job.train_rows) + len(job.eval_rows)))
        weights = _reward_weights(job)
        limits = job.validation.limits

        def validate(model: Any) -> dict[str, float]:
            episodes = rollout.play(model, tokenizer, job.eval_rows, temperature=0.0, limits=limits)
            return glue.validation_metrics(episodes, indices, rewards, weights)

        return glue.ValidationCallback(job.validation, validate, job.run)

    def train(self, job: TrainJob) -> RunResult:
        from aworld_rl_core.backends.plan import planned_result, planning_active
        from aworld_rl_core.runs import RunResult

        if planning_active():
            return planned_result(self.plan(job), job)
        trainer, callback = self.build_trainer(job)
        t, run = job.trainer, job.run
        resume_from = None
        if t.resume or getattr(run, "resume", False):
            found = latest_checkpoint(run.checkpoint_dir)
            if found is not None:
                resume_from = str(found)
                log.info("resuming from %s", resume_from)
            else:
                log.warning("resume requested but %s holds no checkpoint", run.checkpoint_dir)
        output = trainer.train(resume_from_checkpoint=resume_from)
        metrics = {k: callback.last[k] for k in HEADLINE_METRICS if k in callback.last}
        metrics.update(
            {
                "global_step": float(output.global_step),
                "train_loss": float(output.training_loss),
            }
        )
        validation = self._validation_result(trainer, job, metrics)
        if job.eval_rows and validation is None:
            evaluated = trainer.evaluate()
            metrics.update(
                {
                    k: float(v)
                    for k, v in evaluated.items()
                    if _is_number(v) and ("reward" in k or "episode/" in k)
                }
            )
        saved = checkpoints(run.checkpoint_dir)
        outputs = {"model": saved[-1]} if saved else {}
        if validation is not None:
            outputs["validation"] = validation
        return RunResult(metrics=metrics, outputs=outputs, checkpoints=saved)

    @staticmethod
    def _validation_result(trainer: Any, job: TrainJob, metrics: dict[str, float]) -> Any:
        """Adds the last validation and whether the stop rule ended the run to ``metrics``;
        the history file (None without in-run validation)."""
        from aworld_rl_core.backends import trl_trainer as glue

        found = [
            c for c in trainer.callback_handler.callbacks if isinstance(c, glue.ValidationCallback)
        ]
        if not found:
            return None
        callback = found[0]
        if callback.history:
            metrics.update({k: v for k, v in callback.history[-1].items() if k.startswith("val/")})
        metrics["validations"] = float(len(callback.history))
        metrics["stopped_early"] = float(callback.stopped_at is not None)
        return callback.path


def _index_dataset(dataset_cls: Any, indices: range) -> Any:
    """What TRL iterates: a placeholder prompt and the row index (rows stay Python objects)."""
    from aworld_rl_core.backends.trl_trainer import ROW_INDEX

    return dataset_cls.from_list([{"prompt": f"row {i}", ROW_INDEX: i} for i in indices])


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
