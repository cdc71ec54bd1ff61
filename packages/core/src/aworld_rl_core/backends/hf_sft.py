"""The ``hf-sft`` backend: transformers ``Trainer`` SFT on core records with a loss hook.

Labels cover only the assistant's tokens (``sft_data``); with ``trainer.sft.per_turn`` each
assistant turn of a multi-turn sample is its own sample with the earlier turns as context.
When ``job.loss`` is set, the loss is ``job.loss(logits, labels, segments)`` on shifted tensors
(``logits[:, t]`` predicts ``labels[:, t]``) with ``segments = {"think", "call"}`` bool masks;
a loss that is a ``torch.nn.Module`` with parameters (a learnable weight) is trained with the
model and saved in every checkpoint. Checkpoints go to ``run.checkpoint_dir``; ``resume``
continues from the latest one.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from aworld_rl_core.backends.base import TrainJob
from aworld_rl_core.backends.checkpoints import AtomicCheckpoints, checkpoints, latest_checkpoint
from aworld_rl_core.backends.loss_hooks import TokenLossMixin, loss_alpha
from aworld_rl_core.backends.sft_data import SEGMENT_PREFIX, SftCollator, build_samples
from aworld_rl_core.errors import AworldError
from aworld_rl_core.losses import token_loss
from aworld_rl_core.segments import shift_segments

logger = logging.getLogger(__name__)
LOSS_STATE_FILE = "loss_state.pt"
_LOG_KEYS = {
    "loss": "loss",
    "grad_norm": "grad_norm",
    "learning_rate": "lr",
    "epoch": "epoch",
    "loss_alpha": "loss_alpha",
}


class HfSftBackend:
    """SFT with transformers' ``Trainer`` (CPU or one GPU)."""

    name = "hf-sft"

    def train(self, job: TrainJob) -> Any:
        from transformers import set_seed

        from aworld_rl_core.models import load_model_and_tokenizer
        from aworld_rl_core.runs import RunResult

        trainer_cfg = job.trainer
        _check_batch_sizes(trainer_cfg)
        set_seed(trainer_cfg.seed)
        model, tokenizer = load_model_and_tokenizer(job.model)  # tiny:<arch> = fixed weights
        sft = trainer_cfg.sft
        segments = dict(sft.segments)
        train, stats = build_samples(
            job.train_rows,
            tokenizer,
            max_length=sft.max_length,
            per_turn=sft.per_turn,
            segments=segments,
        )
        if not train:
            raise AworldError("hf-sft: no training samples with assistant tokens; check the rows")
        _report_data(job.run, stats)
        evals, _ = build_samples(
            job.eval_rows,
            tokenizer,
            max_length=sft.max_length,
            per_turn=sft.per_turn,
            segments=segments,
        )
        trainer = _make_trainer(job, model, tokenizer, train, evals)
        checkpoint = _resume_checkpoint(job)  # the loss's saved state is restored with it
        output = trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
        metrics: dict[str, float] = {
            "train_loss": float(output.training_loss),
            "global_step": float(trainer.state.global_step),
            "samples": float(stats.samples),
            "dropped_samples": float(stats.dropped),
            "supervised_tokens": float(stats.supervised_tokens),
        }
        losses = [e["loss"] for e in trainer.state.log_history if "loss" in e]
        if losses:
            metrics["final_loss"] = float(losses[-1])
        alpha = loss_alpha(trainer.token_loss)
        if alpha is not None:
            metrics["loss_alpha"] = alpha
        if evals:
            metrics["eval_loss"] = float(trainer.evaluate()["eval_loss"])
        model_dir = job.run.dir / "model"
        trainer.save_model(str(model_dir))
        tokenizer.save_pretrained(str(model_dir))
        job.run.log({k: v for k, v in metrics.items() if k not in ("global_step", "loss_alpha")})
        return RunResult(
            metrics=metrics,
            outputs={"model": model_dir},
            checkpoints=checkpoints(job.run.checkpoint_dir),
        )


def _report_data(run: Any, stats: Any) -> None:
    for note in stats.notes:
        logger.warning("hf-sft: %s", note)
    add_section = getattr(run, "add_section", None)
    if callable(add_section):
        add_section(
            "hf-sft data",
            "| rows | samples | truncated | dropped | supervised tokens |\n|---|---|---|---|---|\n"
            f"| {stats.rows} | {stats.samples} | {stats.truncated} | {stats.dropped} "
            f"| {stats.supervised_tokens} |",
        )


def _resume_checkpoint(job: TrainJob) -> Path | None:
    if not (job.trainer.resume or getattr(job.run, "resume", False)):
        return None
    found = latest_checkpoint(job.run.checkpoint_dir)
    if found is None:
        job.run.log({"resume_found_checkpoint": 0.0})
    return found


def _check_batch_sizes(cfg: Any) -> None:
    if cfg.micro_batch_size < 1 or cfg.batch_size % cfg.micro_batch_size:
        raise AworldError(
            f"trainer.batch_size={cfg.batch_size} must be a multiple of "
            f"trainer.micro_batch_size={cfg.micro_batch_size}"
        )


def _training_args(job: TrainJob) -> Any:
    import torch
    from transformers import TrainingArguments

    cfg = job.trainer
    cuda = torch.cuda.is_available()
    return TrainingArguments(
        output_dir=str(job.run.checkpoint_dir),
        per_device_train_batch_size=cfg.micro_batch_size,
        per_device_eval_batch_size=cfg.micro_batch_size,
        gradient_accumulation_steps=cfg.batch_size // cfg.micro_batch_size,
        learning_rate=cfg.learning_rate,
        max_steps=cfg.max_steps,
        num_train_epochs=cfg.epochs,
        weight_decay=cfg.weight_decay,
        max_grad_norm=cfg.max_grad_norm,
        lr_scheduler_type=cfg.sft.lr_scheduler,
        warmup_steps=cfg.sft.warmup_ratio,
        seed=cfg.seed,
        data_seed=cfg.seed,
        logging_steps=cfg.logging_steps,
        save_strategy="steps",
        save_steps=cfg.save_steps,
        report_to="none",
        use_cpu=not cuda,
        bf16=cuda and job.model.dtype == "bfloat16",
        fp16=cuda and job.model.dtype == "float16",
        remove_unused_columns=False,
        dataloader_num_workers=0,
        disable_tqdm=bool(getattr(job.run, "quiet", False)),
    )


def _make_trainer(job: TrainJob, model: Any, tokenizer: Any, train: list, evals: list) -> Any:
    from transformers import PrinterCallback, Trainer, TrainerCallback

    class SegmentLossTrainer(AtomicCheckpoints, TokenLossMixin, Trainer):
        """``Trainer`` whose loss is ``job.loss(logits, labels, segments)`` when one is set."""

        loss_state_file = LOSS_STATE_FILE

        def pop_segment_inputs(self, inputs: dict[str, Any]) -> Any:
            keys = [k for k in inputs if k.startswith(SEGMENT_PREFIX)]
            return {k[len(SEGMENT_PREFIX) :]: inputs.pop(k) for k in keys}

        def shift_and_segment(self, logits: Any, labels: Any, masks: Any) -> tuple:
            return shift_segments(logits, labels, masks)

    run = job.run

    class RunLogCallback(TrainerCallback):
        """Sends the trainer's logs to ``run.log``."""

        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
            logs = logs or {}
            if "loss" not in logs:  # the end-of-training summary; reported by train()
                return
            metrics = {_LOG_KEYS[k]: float(v) for k, v in logs.items() if k in _LOG_KEYS}
            if metrics:
                run.log(metrics, step=state.global_step)

    trainer = SegmentLossTrainer(
        model=model,
        args=_training_args(job),
        train_dataset=[s.as_features() for s in train],
        eval_dataset=[s.as_features() for s in evals] or None,
        data_collator=SftCollator(tokenizer.pad_token_id),
        processing_class=tokenizer,
        callbacks=[RunLogCallback()],
    )
    trainer.remove_callback(PrinterCallback)  # metrics go to run.log, not stdout
    trainer.use_token_loss(token_loss(job, "hf-sft"))
    return trainer
