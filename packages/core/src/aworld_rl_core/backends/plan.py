"""Launch plans: what a backend will start, before it starts anything (``Backend.plan(job)``).

A :class:`LaunchPlan` holds the processes a backend starts (commands, environment, the files
they write), the optimizer steps *as the engine counts them* (drop_last, epochs vs max steps,
gradient accumulation, world size), the per-GPU memory estimate (``backends.memory``), the
packages the target machine needs and the checkpoints the run keeps.

``aworld-run <recipe> --dry-run`` runs the recipe inside :func:`planning`: every backend's
``train(job)`` then returns :func:`planned_result` instead of training, whose outputs name the
final model the plan would produce, so a multi-stage recipe plans each stage from the real
hand-over checkpoint. The CLI writes every plan to ``plan.json``.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from aworld_rl_core.dry_run import PLAN_FILE, planning_active, record_plan, write_plans

if TYPE_CHECKING:
    from aworld_rl_core.runs import Run, RunResult


class _Job(Protocol):
    """What :func:`planned_result` reads of a ``backends.base.TrainJob`` (base imports this
    module for ``LaunchPlan``; a protocol keeps the two out of a circle)."""

    @property
    def run(self) -> Run: ...

    @property
    def model(self) -> Any: ...


COMMAND_WORDS = 6
"""Words of a command a printed plan shows (plan.json holds the whole command)."""
DEFAULT_GPU_GIB = 80.0
"""The GPU size memory estimates are judged against (an 80 GB A100 / H100)."""


@dataclass(frozen=True)
class Process:
    """One process (or process group) the backend starts."""

    name: str
    command: list[str]
    env: dict[str, str] = field(default_factory=dict)
    writes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class StepPlan:
    """Optimizer steps as the engine counts them, and the settings that give them."""

    steps: int
    steps_per_epoch: int
    epochs: float
    samples_per_step: int
    micro_batch: int
    world_size: int
    accumulation: int
    engine_settings: dict[str, Any] = field(default_factory=dict)
    """The engine's own keys that fix the count (verl: total_epochs, total_training_steps)."""


@dataclass(frozen=True)
class CheckpointPlan:
    """Where checkpoints go, how often, how many are kept, and the final model."""

    directory: str
    every: int
    keep: int | None
    final: str
    """The folder of the last checkpoint (the hand-over to the next stage)."""
    model: str
    """The final model a later stage or an evaluation loads."""


@dataclass(frozen=True)
class LaunchPlan:
    """Everything a backend will do for a job, as data."""

    backend: str
    processes: list[Process]
    steps: StepPlan
    checkpoints: CheckpointPlan
    packages: list[str]
    memory_gib: dict[str, float] | None = None
    memory_note: str = ""
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        """The plan as printed by a dry run."""
        s = self.steps
        lines = [f"== {self.backend} launch plan (dry run: nothing was started)"]
        for p in self.processes:
            env = " ".join(f"{k}={v}" for k, v in p.env.items())
            shown = p.command[:COMMAND_WORDS]
            if len(p.command) > COMMAND_WORDS:
                shown.append(f"... ({len(p.command) - COMMAND_WORDS} more; plan.json has all)")
            lines.append(f"process {p.name}: {(env + ' ') if env else ''}{' '.join(shown)}")
            for path in p.writes:
                lines.append(f"  writes {path}")
        lines.append(
            f"steps: {s.steps} ({s.steps_per_epoch} per epoch, {s.epochs:g} epoch(s)); "
            f"{s.samples_per_step} samples per step = micro-batch {s.micro_batch} x "
            f"{s.world_size} GPU(s) x {s.accumulation} accumulation"
        )
        if s.engine_settings:
            lines.append("engine: " + ", ".join(f"{k}={v}" for k, v in s.engine_settings.items()))
        c = self.checkpoints
        keep = "all" if c.keep is None else str(c.keep)
        lines.append(f"checkpoints: every {c.every} step(s), keep {keep}, in {c.directory}")
        lines.append(f"final model: {c.model}")
        if self.memory_gib:
            parts = ", ".join(f"{k} {v:.2f}" for k, v in self.memory_gib.items() if k != "total")
            lines.append(
                f"memory per GPU (estimate, GiB): {self.memory_gib['total']:.2f} ({parts})"
            )
        if self.memory_note:
            lines.append(self.memory_note)
        lines.append("packages on the target machine: " + (", ".join(self.packages) or "none"))
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


_PLANNED_FROM: dict[str, str] = {}
"""A planned final model (not written: nothing trained) -> the model it is trained from, so a
later stage's memory estimate knows its shape."""


def remember_planned_model(planned: str | Path, source: str) -> None:
    """Record that the planned model ``planned`` will be ``source`` fine-tuned (same shape)."""
    _PLANNED_FROM[str(planned)] = shape_source(source)


def shape_source(model: str) -> str:
    """The model whose shape ``model`` has: itself, or for a planned (not yet written) final
    model the model it is trained from."""
    seen = set()
    while model in _PLANNED_FROM and model not in seen:
        seen.add(model)
        model = _PLANNED_FROM[model]
    return model


def is_dry_run(trainer: Any) -> bool:
    """Whether a job on ``trainer`` only plans: ``--dry-run``, or the chosen backend's own
    ``dry_run`` setting (``trainer.verl.dry_run``)."""
    chosen = getattr(trainer, "sections", {}).get(getattr(trainer, "backend", None))
    return planning_active() or bool(getattr(chosen, "dry_run", False))


def planned_result(plan: LaunchPlan, job: _Job) -> RunResult:
    """Record ``plan`` (the run's ``plan.json`` and the active plan list), print it, and return
    the result a recipe chains on: ``outputs["model"]`` is the final model the plan names."""
    from aworld_rl_core.runs import RunResult

    record_plan(plan)
    remember_planned_model(plan.checkpoints.model, job.model.name_or_path)
    path = write_plans([plan], job.run.dir / PLAN_FILE)
    print(plan.describe())
    return RunResult(
        metrics={"planned_steps": float(plan.steps.steps)},
        outputs={"plan": path, "model": Path(plan.checkpoints.model)},
        checkpoints=[Path(plan.checkpoints.final)],
    )


def sft_memory(
    model: str,
    *,
    gpus: int,
    micro_batch: int,
    seq_len: int,
    zero3: bool,
    gradient_checkpointing: bool,
    logits: bool = True,
) -> tuple[dict[str, float] | None, str]:
    """Core's SFT estimate for ``model`` (None and the reason when its shape is unknown)."""
    from aworld_rl_core.backends.memory import model_shape, sft_memory_per_gpu
    from aworld_rl_core.errors import ConfigError

    model = shape_source(model)
    if model.startswith("tiny:"):
        return None, "memory: a tiny CPU test model (no estimate)"
    try:
        shape = model_shape(model)
    except ConfigError as exc:
        return None, f"memory: {exc}"
    est = sft_memory_per_gpu(
        shape,
        gpus=gpus,
        micro_batch=micro_batch,
        seq_len=seq_len,
        zero3=zero3,
        gradient_checkpointing=gradient_checkpointing,
        logits=logits,
    )
    parts = {k.removesuffix("_gib"): v for k, v in est.items()}
    verdict = "fits" if parts["total"] <= DEFAULT_GPU_GIB else "does NOT fit"
    sharding = f"ZeRO-3 over {gpus} GPU(s)" if zero3 else "no sharding (each GPU holds it all)"
    return parts, (
        f"memory: {verdict} in {DEFAULT_GPU_GIB:.0f} GiB ({sharding}, gradient checkpointing "
        f"{'on' if gradient_checkpointing else 'off'}, {micro_batch} x {seq_len} tokens)"
    )


def deepspeed_stage(path: str | None) -> int | None:
    """The ZeRO stage of a DeepSpeed config file (None without one or when unreadable)."""
    if not path:
        return None
    try:
        config = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    stage = (config.get("zero_optimization") or {}).get("stage")
    return int(stage) if stage is not None else None
