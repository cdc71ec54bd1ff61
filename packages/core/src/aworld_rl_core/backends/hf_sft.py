"""The ``hf-sft`` backend: transformers ``Trainer`` SFT on core records with a pluggable loss.

Labels cover only the assistant's tokens (``sft_data``); with ``trainer.sft.per_turn`` each
assistant turn of a multi-turn sample is its own sample with the earlier turns as context.
Records with image content parts train a vision-language model through the processor-based
``vision.VisionCollator`` (the whole conversation is one sample). The loss is the model's own
cross-entropy, a token loss ``fn(logits, labels, segments)`` on shifted tensors
(``logits[:, t]`` predicts ``labels[:, t]``; ``segments`` from ``aworld_rl_core.segments``) or a
model-level ``compute_loss(model, batch) -> (loss, metrics)`` (its metrics are logged). A loss
that is a ``torch.nn.Module`` with parameters (a learnable weight) is trained with the model
and saved in every checkpoint.

``TrainJob.model_factory`` builds ``(model, processor or tokenizer)`` from the ``ModelConfig``
(default: ``models.load_model_and_tokenizer``, or ``load_vision_model`` for image rows);
``TrainJob.model_setup(model)`` may freeze parameters and return gradient masks by parameter
name (multiplied into each gradient: V2P's warm-up trains new embedding rows only);
``trainer.sft.lr_groups`` gives parameter-name prefixes their own learning rates. Checkpoints
go to ``run.checkpoint_dir``; ``resume`` continues from the latest one.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aworld_rl_core.backends.base import TrainJob
from aworld_rl_core.backends.batching import (
    DropLastInTrainingOnly,
    check_batch_shape,
    plan_batches,
)
from aworld_rl_core.backends.checkpoints import AtomicCheckpoints, checkpoints, latest_checkpoint
from aworld_rl_core.backends.loss_hooks import LOSS_MODULE, TokenLossMixin, loss_alpha
from aworld_rl_core.backends.sft_data import SEGMENT_PREFIX, SftCollator, build_samples
from aworld_rl_core.errors import AworldError, ConfigError
from aworld_rl_core.losses import job_loss
from aworld_rl_core.segments import IGNORE_INDEX, shift_segments

logger = logging.getLogger(__name__)
LOSS_STATE_FILE = "loss_state.pt"
MODEL_INPUTS = (
    "input_ids",
    "attention_mask",
    "labels",
    "pixel_values",
    "image_grid_thw",
    "mm_token_type_ids",
)


class HfSftBackend:
    """SFT with transformers' ``Trainer`` (CPU or one GPU)."""

    name = "hf-sft"

    def plan(self, job: TrainJob) -> Any:
        """The launch plan: this process, or torchrun with ``trainer.hf-sft.nproc_per_node`` x
        ``nnodes`` workers in the one run directory; steps from ``plan_batches`` over the
        samples (one per assistant turn with ``trainer.sft.per_turn``) split over that world
        size; core's SFT memory estimate (ZeRO-3 when the DeepSpeed config says stage 3); and
        transformers' checkpoints."""
        from aworld_rl_core.backends import plan as p
        from aworld_rl_core.backends.hf_sft_launch import (
            JOB_FILE,
            WORK_DIR,
            deepspeed_file,
            hf_sft_section,
            torchrun_command,
        )
        from aworld_rl_core.records import as_record

        cfg, hs = job.trainer, hf_sft_section(job.trainer)
        devices = hs.world_size
        n = len(job.train_rows)
        if cfg.sft.per_turn:
            try:
                n = sum(len(as_record(r).assistant_indices()) for r in job.train_rows)
            except Exception:  # rows that are no chat records (vision rows): one sample each
                n = len(job.train_rows)
        batches = plan_batches(cfg, n_rows=n, rl=False, devices=devices, strict=False)
        deepspeed = deepspeed_file(job, write=True)
        stage = p.deepspeed_stage(deepspeed)
        memory, note = p.sft_memory(
            job.model.name_or_path,
            gpus=devices,
            micro_batch=batches.micro_batch,
            seq_len=cfg.sft.max_length,
            zero3=stage == 3,
            gradient_checkpointing=cfg.sft.gradient_checkpointing,
            logits=_full_logits(job),
        )
        packages = ["aworld-rl-core[trl]", "torch (CUDA build on a GPU machine)"]
        if deepspeed:
            packages.append("deepspeed")
        final = job.run.checkpoint_dir / f"checkpoint-{batches.steps}"
        writes = [str(job.run.checkpoint_dir), str(job.run.dir / "model")]
        if hs.uses_torchrun():
            work = job.run.dir.resolve() / WORK_DIR
            process = p.Process(
                f"torchrun: {hs.nproc_per_node} worker(s) per node x {hs.nnodes} node(s), "
                "all in the one run directory",
                torchrun_command(hs, work / JOB_FILE),
                writes=[str(work / JOB_FILE), *writes, *([deepspeed] if deepspeed else [])],
            )
        else:
            process = p.Process(
                "transformers Trainer (this process)", ["Trainer.train()"], writes=writes
            )
        return p.LaunchPlan(
            backend=self.name,
            processes=[process],
            steps=p.StepPlan(
                steps=batches.steps,
                steps_per_epoch=n // cfg.batch_size,
                epochs=cfg.epochs,
                samples_per_step=batches.samples_per_step,
                micro_batch=batches.micro_batch,
                world_size=devices,
                accumulation=batches.accumulation,
                engine_settings={
                    "max_steps": batches.steps,
                    "dataloader_drop_last": True,
                    "deepspeed": deepspeed,
                    "zero_stage": stage,
                    "gradient_checkpointing": cfg.sft.gradient_checkpointing,
                },
            ),
            checkpoints=p.CheckpointPlan(
                directory=str(job.run.checkpoint_dir),
                every=cfg.save_steps or batches.steps,
                keep=cfg.keep_checkpoints,
                final=str(final),
                model=str(job.run.dir / "model"),
            ),
            packages=packages,
            memory_gib=memory,
            memory_note=note,
        )

    def train(self, job: TrainJob) -> Any:
        from aworld_rl_core.backends.plan import planned_result, planning_active

        if planning_active():
            return planned_result(self.plan(job), job)
        from aworld_rl_core.backends.hf_sft_launch import hf_sft_section, launch

        if hf_sft_section(job.trainer).uses_torchrun():
            return launch(job)
        return self.train_here(job)

    def train_here(self, job: TrainJob) -> Any:
        """Train in this process (a torchrun worker: one rank of the process group)."""
        from transformers import set_seed

        from aworld_rl_core.backends.vision import has_images
        from aworld_rl_core.runs import RunResult

        trainer_cfg = job.trainer
        check_batch_shape(trainer_cfg, rl=False)  # fail early; rows count once split
        set_seed(trainer_cfg.seed)
        vision = has_images([*job.train_rows, *job.eval_rows])
        model, processor = build_model(job, vision=vision)
        tokenizer = getattr(processor, "tokenizer", processor)
        masks = setup_model(job, model)
        if vision:
            train, evals, stats, collator = _vision_data(job, processor)
        else:
            train, evals, stats, collator = _text_data(job, tokenizer)
        _report_data(job.run, stats)
        trainer = _make_trainer(job, model, processor, train, evals, collator)
        for name, param in model.named_parameters():
            if name in masks:  # gradient masks: only the rows / entries they keep train
                param.register_hook(functools.partial(_masked, masks[name]))
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
        trainer.save_model(str(model_dir))  # the main process writes (Trainer's rule)
        if trainer.is_world_process_zero():
            processor.save_pretrained(str(model_dir))
        job.run.log({k: v for k, v in metrics.items() if k not in ("global_step", "loss_alpha")})
        return RunResult(
            metrics=metrics,
            outputs={"model": model_dir},
            checkpoints=checkpoints(job.run.checkpoint_dir),
        )


def _full_logits(job: TrainJob) -> bool:
    """Whether training materialises the vocabulary logits at every position: a token loss
    does (it gets them all), a model-level loss unless registered ``full_logits=False``;
    without a loss, ``supervised_loss`` computes them only where a label follows."""
    loss = job_loss(job)
    if loss is None:
        return False
    return loss.kind == "token" or loss.full_logits


def supervised_loss(
    model: Any, inputs: dict[str, Any], num_items_in_batch: Any = None, return_outputs: bool = False
) -> Any:
    """The causal-LM cross-entropy, with logits computed only where a label follows.

    The same value (and gradients) as the model's own loss on the full logits, which cost a
    ``positions x vocabulary`` matrix: with assistant-only labels most positions are prompt,
    and on a small model the output head is nearly all the compute. The kept positions are the
    union over the batch (``logits_to_keep`` takes one index set)."""
    import torch

    labels = inputs.pop("labels")
    targets = labels[:, 1:]
    keep = (targets != IGNORE_INDEX).any(dim=0).nonzero().flatten()
    outputs = model(**inputs, logits_to_keep=keep)
    logits = outputs.logits.float()
    picked = targets[:, keep]
    total = torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]),
        picked.reshape(-1),
        ignore_index=IGNORE_INDEX,
        reduction="sum",
    )
    count = num_items_in_batch if num_items_in_batch is not None else (picked != IGNORE_INDEX).sum()
    loss = total / torch.as_tensor(count, device=total.device)
    return (loss, outputs) if return_outputs else loss


def _keeps_logits(model: Any) -> bool:
    """Whether the model's forward takes ``logits_to_keep`` (transformers' causal LMs do)."""
    import inspect

    forward = getattr(model, "forward", None)
    return forward is not None and "logits_to_keep" in inspect.signature(forward).parameters


def _masked(mask: Any, grad: Any) -> Any:
    # model_setup ran before the Trainer moved the model: the mask follows the gradient
    return grad * mask.to(grad.device, grad.dtype)


def _callable(value: Any, what: str) -> Any:
    """A callable from an import path, a ``Ref`` (its options bound) or a callable."""
    from aworld_rl_core.refs import Ref
    from aworld_rl_core.registry import resolve

    if isinstance(value, str):
        return resolve(value)
    if isinstance(value, Ref):
        return functools.partial(resolve(value.target), *value.args, **value.kwargs)
    if not callable(value):
        raise ConfigError(f"{what} must be module:attr, a Ref or a callable; got {value!r}")
    return value


def build_model(job: TrainJob, *, vision: bool) -> tuple[Any, Any]:
    """``(model, processor or tokenizer)``: the job's model factory, or core's loaders
    (``tiny:<arch>`` = fixed weights)."""
    from aworld_rl_core.models import load_model_and_tokenizer, load_vision_model

    if job.model_factory is not None:
        model, processor = _callable(job.model_factory, "TrainJob.model_factory")(job.model)
    elif vision:
        model, processor = load_vision_model(job.model)
    else:
        model, processor = load_model_and_tokenizer(job.model)
    if vision and getattr(processor, "image_processor", None) is None:
        raise ConfigError(
            "the rows hold images but the model came with a tokenizer only: give a vision-"
            "language model (e.g. tiny:qwen2_5_vl) or a model_factory that returns its processor"
        )
    return model, processor


def setup_model(job: TrainJob, model: Any) -> Mapping[str, Any]:
    """Run ``TrainJob.model_setup(model)``; the gradient masks it returns, by parameter name."""
    if job.model_setup is None:
        return {}
    masks = _callable(job.model_setup, "TrainJob.model_setup")(model) or {}
    names = {name for name, _ in model.named_parameters()}
    unknown = sorted(set(masks) - names)
    if unknown:
        raise ConfigError(f"model_setup returned gradient masks for unknown parameters {unknown}")
    return masks


def _text_data(job: TrainJob, tokenizer: Any) -> tuple[list, list, Any, Any]:
    sft = job.trainer.sft
    samples = functools.partial(
        build_samples,
        tokenizer=tokenizer,
        max_length=sft.max_length,
        per_turn=sft.per_turn,
        segments=dict(sft.segments),
    )
    train, stats = samples(job.train_rows)
    if not train:
        raise AworldError("hf-sft: no training samples with assistant tokens; check the rows")
    evals, _ = samples(job.eval_rows)
    features = [s.as_features() for s in train], [s.as_features() for s in evals]
    return *features, stats, SftCollator(tokenizer.pad_token_id)


def _vision_data(job: TrainJob, processor: Any) -> tuple[list, list, Any, Any]:
    from aworld_rl_core.backends.sft_data import SftStats
    from aworld_rl_core.backends.vision import VisionCollator

    sft = job.trainer.sft
    collator = VisionCollator(processor, max_length=sft.max_length, segments=dict(sft.segments))
    train, evals = [dict(r) for r in job.train_rows], [dict(r) for r in job.eval_rows]
    if not train:
        raise AworldError("hf-sft: no training rows")
    first = collator.encode(train[0])  # fail now on a bad row, not inside the first step
    supervised = sum(label != IGNORE_INDEX for label in first["labels"])
    stats = SftStats(rows=len(train), samples=len(train), supervised_tokens=supervised)
    stats.notes.append("vision rows: each conversation is one sample; counts are from row 0")
    return train, evals, stats, collator


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


def sft_plan(job: TrainJob, n_samples: int) -> Any:
    """The batch plan over this process group: a step's samples split over the WORLD_SIZE
    processes torchrun / accelerate start, the rest is accumulation."""
    devices = int(os.environ.get("WORLD_SIZE", "1"))
    return plan_batches(job.trainer, n_rows=n_samples, rl=False, devices=devices)


def training_args(job: TrainJob, n_samples: int) -> Any:
    """transformers' ``TrainingArguments`` for the job (batches from ``plan_batches``; the
    DeepSpeed config of ``trainer.sft.deepspeed`` or ``trainer.hf-sft.zero_stage``)."""
    import dataclasses

    import torch
    from transformers import TrainingArguments

    from aworld_rl_core.backends.hf_sft_launch import deepspeed_file

    cfg = job.trainer
    plan = sft_plan(job, n_samples)
    cuda = torch.cuda.is_available()
    names = {f.name for f in dataclasses.fields(TrainingArguments)}
    checkpointing = (  # transformers >= 5.7 renamed it; LLaMA-Factory's 5.6 has the old name
        "activation_checkpointing"
        if "activation_checkpointing" in names
        else "gradient_checkpointing"
    )
    return TrainingArguments(
        **{checkpointing: cfg.sft.gradient_checkpointing},
        output_dir=str(job.run.checkpoint_dir),
        per_device_train_batch_size=plan.micro_batch,
        per_device_eval_batch_size=plan.micro_batch,
        gradient_accumulation_steps=plan.accumulation,
        learning_rate=cfg.learning_rate,
        max_steps=plan.steps,
        dataloader_drop_last=True,  # a partial last batch is dropped (batching's rule)
        weight_decay=cfg.weight_decay,
        max_grad_norm=cfg.max_grad_norm,
        deepspeed=deepspeed_file(job, write=True),
        lr_scheduler_type=cfg.sft.lr_scheduler,
        warmup_steps=cfg.sft.warmup_ratio,
        seed=cfg.seed,
        data_seed=cfg.seed,
        logging_steps=cfg.logging_steps,
        save_strategy="steps",
        save_steps=cfg.save_steps,
        save_total_limit=cfg.keep_checkpoints,
        report_to="none",
        use_cpu=not cuda,
        bf16=cuda and job.model.dtype == "bfloat16",
        fp16=cuda and job.model.dtype == "float16",
        remove_unused_columns=False,
        prediction_loss_only=True,
        dataloader_num_workers=0,
        disable_tqdm=True,  # progress goes to the run's bar
    )


def _make_trainer(
    job: TrainJob, model: Any, processor: Any, train: list, evals: list, collator: Any
) -> Any:
    from transformers import PrinterCallback, Trainer

    from aworld_rl_core.backends.run_log import RunLogCallback

    loss = job_loss(job)
    lr_groups = dict(job.trainer.sft.lr_groups)

    class SegmentLossTrainer(AtomicCheckpoints, DropLastInTrainingOnly, TokenLossMixin, Trainer):
        """``Trainer`` with a token loss, a model-level loss or the model's own."""

        loss_state_file = LOSS_STATE_FILE
        model_loss: Any = None
        loss_metrics: dict[str, list[float]]

        def pop_segment_inputs(self, inputs: dict[str, Any]) -> Any:
            keys = [k for k in inputs if k.startswith(SEGMENT_PREFIX)]
            masks = {k[len(SEGMENT_PREFIX) :]: inputs.pop(k) for k in keys}
            if self.token_loss is None:  # the model takes only its own inputs
                for key in [k for k in inputs if k not in MODEL_INPUTS]:
                    inputs.pop(key)
            return masks

        def shift_and_segment(self, logits: Any, labels: Any, masks: Any) -> tuple:
            return shift_segments(logits, labels, masks)

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            if self.model_loss is None:
                if (
                    self.token_loss is None
                    and "pixel_values" not in inputs
                    and _keeps_logits(model)
                ):
                    inputs = dict(inputs)
                    self.pop_segment_inputs(inputs)
                    return supervised_loss(model, inputs, num_items_in_batch, return_outputs)
                return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
            value, metrics = self.model_loss(model, dict(inputs))
            for key, number in (metrics or {}).items():
                self.loss_metrics.setdefault(key, []).append(float(number))
            return (value, None) if return_outputs else value

        def log(self, logs: dict[str, float], *args: Any, **kwargs: Any) -> None:
            if "loss" in logs and self.loss_metrics:  # the model-level loss's own metrics
                logs = {**logs, **{k: sum(v) / len(v) for k, v in self.loss_metrics.items()}}
                self.loss_metrics = {}
            super().log(logs, *args, **kwargs)

        def _load_from_checkpoint(self, resume_from_checkpoint: str, model: Any = None) -> None:
            # through from_pretrained, which maps saved key names (Qwen2.5-VL saves ``visual.*``
            # and loads ``model.visual.*``; Trainer's own load does not map them)
            model = model or self.model
            if (
                self.is_deepspeed_enabled
                or self.is_fsdp_enabled
                or not hasattr(model, "from_pretrained")
            ):
                return super()._load_from_checkpoint(resume_from_checkpoint, model)
            saved = type(model).from_pretrained(resume_from_checkpoint, dtype=model.dtype)
            # a trainable loss rides on the model but is left out of its saved weights (it is
            # restored from its own file): only its keys may be missing
            missing, unexpected = model.load_state_dict(saved.state_dict(), strict=False)
            missing = [k for k in missing if not k.startswith(f"{LOSS_MODULE}.")]
            if missing or unexpected:
                raise RuntimeError(
                    f"checkpoint {resume_from_checkpoint} does not fit the model: missing "
                    f"{missing[:5]}, unexpected {list(unexpected)[:5]}"
                )

        def create_optimizer(self, *args: Any, **kwargs: Any) -> Any:
            optimizer = super().create_optimizer(*args, **kwargs)
            if lr_groups:
                split_lr_groups(optimizer, self.model, lr_groups)
            return optimizer

    callback = RunLogCallback(job.run, desc="SFT steps", renames={"learning_rate": "lr"})
    trainer = SegmentLossTrainer(
        model=model,
        args=training_args(job, len(train)),
        train_dataset=train,
        eval_dataset=evals or None,
        data_collator=collator,
        processing_class=processor,
        callbacks=[callback],
    )
    trainer.remove_callback(PrinterCallback)  # metrics go to run.log, not stdout
    trainer.loss_metrics = {}
    if loss is not None and loss.kind == "model":
        trainer.model_loss = loss.fn
        trainer.use_own_loss()
    else:
        trainer.use_token_loss(None if loss is None else loss.fn)
    return trainer


def split_lr_groups(optimizer: Any, model: Any, lr_groups: Mapping[str, float]) -> None:
    """Move parameters whose name starts with a prefix of ``lr_groups`` into their own groups
    with that learning rate (before the scheduler reads the groups' rates)."""
    names = {id(p): n for n, p in model.named_parameters()}
    groups = []
    for group in optimizer.param_groups:
        by_lr: dict[float | None, list[Any]] = {}
        for param in group["params"]:
            name = names.get(id(param), "")
            lr = next((v for k, v in lr_groups.items() if name.startswith(k)), None)
            by_lr.setdefault(lr, []).append(param)
        for lr, params in by_lr.items():
            groups.append({**group, "params": params, **({} if lr is None else {"lr": lr})})
    optimizer.param_groups = groups
