"""``VerlBackend``: GRPO-family RL with verl on Ray (multi-GPU, multi-node).

``train(job)`` writes the parquet files, builds the launch (``launcher.plan_launch``) and then:
with ``trainer.verl.dry_run`` prints and saves the command and overrides and runs nothing; with
``trainer.verl.ray_address`` submits a Ray job; otherwise runs ``verl.trainer.main_ppo`` here
(needs CUDA and ``aworld-rl-core[verl]``), streams its log to ``verl.log``, forwards verl's
metrics to the run and returns the checkpoints.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aworld_rl_core.backends.checkpoints import checkpoints
from aworld_rl_core.backends.verl.config import VerlConfig
from aworld_rl_core.backends.verl.launcher import Launch, plan_launch
from aworld_rl_core.children import tethered_process
from aworld_rl_core.errors import AworldError, ConfigError
from aworld_rl_core.trainer_config import section

if TYPE_CHECKING:
    from aworld_rl_core.backends.base import TrainJob
    from aworld_rl_core.runs import RunResult

LOG_FILE = "verl.log"
LAUNCH_FILE = "verl_launch.json"
CONFIG_FILE = "verl_config.yaml"
HF_MODEL = "actor/huggingface"
"""Where a checkpoint holds the model in HF format (``trainer.verl.save_hf_model``)."""


def verl_installed() -> bool:
    """Whether the verl distribution is installed (checked without importing it)."""
    try:
        importlib.metadata.distribution("verl")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def cuda_available() -> bool:
    """Whether torch sees a CUDA device (False when torch is not installed)."""
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return bool(torch.cuda.is_available())


def read_metrics(path: Path) -> list[tuple[int, dict[str, float]]]:
    """verl's file-logger records as (step, numeric metrics)."""
    if not path.is_file():
        return []
    records: list[tuple[int, dict[str, float]]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        data = {
            k: float(v)
            for k, v in (record.get("data") or {}).items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)
        }
        records.append((int(record.get("step", len(records))), data))
    return records


def find_checkpoints(checkpoint_dir: Path) -> list[Path]:
    """verl's ``global_step_N`` folders, oldest first."""
    return checkpoints(checkpoint_dir, prefix="global_step_")


ROLLOUT_ENGINES = {
    # what verl 0.9.1 accepts (verl/third_party/vllm, sglang_rollout) and the pin of its extra
    "vllm": ((0, 18, 0), (0, 25, 0), "vllm==0.24.0 (verl[vllm]==0.9.1)"),
    "sglang": ((0, 5, 5), None, "sglang==0.5.12 (verl[sglang]==0.9.1)"),
}


def _version_tuple(text: str) -> tuple[int, ...]:
    parts = []
    for piece in text.split("+")[0].split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def check_rollout_engine(engine: str) -> str:
    """The installed version of ``engine``; a clear error when it is missing or a version
    verl 0.9.1 does not support (checked before Ray starts, without importing the engine)."""
    low, high, pin = ROLLOUT_ENGINES[engine]
    try:
        found = importlib.metadata.version(engine)
    except importlib.metadata.PackageNotFoundError:
        found = None
    if found is None:
        raise AworldError(
            f"trainer.verl.rollout_engine={engine} but {engine} is not installed: pip install "
            f"'{pin.split(' ')[0]}' (or 'verl[{engine}]==0.9.1'); set "
            "trainer.verl.check_rollout_engine=false to skip this check"
        )
    version = _version_tuple(found)
    if version < low or (high is not None and version >= high):
        bounds = ".".join(map(str, low)) + (
            f" to below {'.'.join(map(str, high))}" if high else " or later"
        )
        raise AworldError(
            f"{engine} {found} is installed, but verl 0.9.1 supports {engine} {bounds}: "
            f"install {pin}"
        )
    return found


def memory_estimate(model: str, trainer: Any, gpu_gib: float = 80.0) -> Any:
    """core's per-GPU estimate of a verl launch (``memory.rl_memory_per_gpu``); raises
    ConfigError for a model of unknown shape."""
    from aworld_rl_core.backends.memory import model_shape, rl_memory_per_gpu

    verl = section(trainer, VerlConfig)
    shape = model_shape(model)
    return rl_memory_per_gpu(
        shape,
        gpus=verl.nnodes * verl.gpus_per_node,
        gpu_gib=gpu_gib,
        tokens_per_gpu=tokens_per_gpu(trainer),
        rollout_fraction=verl.gpu_memory_utilization,
        tensor_parallel=verl.tensor_parallel,
        fused_kernels=verl.fused_kernels,
        param_offload=verl.param_offload,
        optimizer_offload=verl.optimizer_offload,
    )


def engine_steps_of(launch: Launch, n_rows: int, batch_size: int) -> int:
    """The steps verl runs for ``launch`` over ``n_rows`` prompts (``batching.engine_steps``
    on the launch's own total_epochs and total_training_steps)."""
    from aworld_rl_core.backends.batching import engine_steps

    values = dict(o.lstrip("+").split("=", 1) for o in launch.overrides)
    return engine_steps(
        n_rows,
        batch_size,
        total_epochs=int(values["trainer.total_epochs"]),
        total_training_steps=int(values["trainer.total_training_steps"]),
    )


def plan_memory(model: str, trainer: Any) -> tuple[dict[str, float] | None, str]:
    """The plan's per-GPU GiB (training, rollout, total) and the note with the table (a tiny
    CPU model or a model of unknown shape: None and why; a planned stage's model has the
    shape of the model it is trained from)."""
    from aworld_rl_core.backends.plan import shape_source

    model = shape_source(model)
    if model.startswith("tiny:"):
        return None, "memory: a tiny CPU test model (no estimate)"
    try:
        est = memory_estimate(model, trainer)
    except ConfigError as exc:
        return None, f"memory: {exc}"
    memory = {
        "training": est.peak("training"),
        "rollout": est.peak("rollout"),
        "total": max(est.peak("training"), est.peak("rollout")),
    }
    verl = section(trainer, VerlConfig)
    return memory, (
        f"memory per GPU ({model}, {verl.nnodes * verl.gpus_per_node} x {est.gpu_gib:g} GiB, "
        f"{tokens_per_gpu(trainer)} tokens per GPU per pass):\n{est.table()}"
    )


def tokens_per_gpu(trainer: Any) -> int:
    """Tokens in one actor forward pass per GPU: the dynamic batch's budget, else a
    micro-batch of full-length sequences."""
    verl = section(trainer, VerlConfig)
    if verl.dynamic_batch_size:
        return int(verl.max_tokens_per_gpu)
    return trainer.micro_batch_size * (verl.max_prompt_length + trainer.rl.max_response_tokens)


class VerlBackend:
    """Train through verl (``trainer.backend=verl``)."""

    name = "verl"

    def plan(self, job: TrainJob) -> Any:
        """The launch plan: ``main_ppo`` (or ``ray job submit``) with its overrides, the
        parquet files, verl's own step count, core's RL memory estimate, the packages the GPU
        machines need (verl, the rollout engine, flash-attn) and verl's checkpoints."""
        from aworld_rl_core.backends import plan as p
        from aworld_rl_core.backends.batching import engine_steps, plan_batches

        self._check_job(job)
        run, verl, t = job.run, section(job.trainer, VerlConfig), job.trainer
        launch = plan_launch(job, run.dir, run.checkpoint_dir, resume=run.resume)
        self._save_launch(launch, run.dir)
        values = dict(o.lstrip("+").split("=", 1) for o in launch.overrides)
        n_rows = len(job.train_rows)
        epochs = int(values["trainer.total_epochs"])
        total = int(values["trainer.total_training_steps"])
        steps = engine_steps(n_rows, t.batch_size, total_epochs=epochs, total_training_steps=total)
        batches = plan_batches(t, n_rows=n_rows, rl=True, strict=False)
        world = verl.nnodes * verl.gpus_per_node
        notes = []
        if steps == 0:
            notes.append(
                f"{n_rows} prompts make no full batch of {t.batch_size}: verl would run no step"
            )
        notes.append(
            "verl drops prompts longer than trainer.verl.max_prompt_length before it counts "
            "batches (data.filter_overlong_prompts): the count assumes none is dropped"
        )
        memory, note = plan_memory(job.model.name_or_path, t)
        engine_pin = ROLLOUT_ENGINES[verl.rollout_engine][2].split(" ")[0]
        final = run.checkpoint_dir / f"global_step_{steps}"
        model = final / (HF_MODEL if verl.save_hf_model else "actor")
        settings: dict[str, Any] = {
            k: values[k]
            for k in (
                "data.train_batch_size",
                "trainer.total_epochs",
                "trainer.total_training_steps",
                "actor_rollout_ref.actor.ppo_mini_batch_size",
                "actor_rollout_ref.actor.use_dynamic_bsz",
                "actor_rollout_ref.actor.ppo_max_token_len_per_gpu",
                "trainer.v1.trainer_mode",
            )
            if k in values
        }
        return p.LaunchPlan(
            backend=self.name,
            processes=[
                p.Process(
                    "verl main_ppo (Ray driver; Ray starts the workers)",
                    launch.command,
                    env=launch.env,
                    writes=[str(launch.data_dir), str(run.checkpoint_dir)],
                )
            ],
            steps=p.StepPlan(
                steps=steps,
                steps_per_epoch=n_rows // t.batch_size,
                epochs=epochs,
                samples_per_step=batches.samples_per_step,
                micro_batch=t.micro_batch_size,
                world_size=world,
                accumulation=max(1, batches.samples_per_step // (t.micro_batch_size * world)),
                engine_settings=settings,
            ),
            checkpoints=p.CheckpointPlan(
                directory=str(run.checkpoint_dir),
                every=int(values["trainer.save_freq"]),
                keep=t.keep_checkpoints,
                final=str(final),
                model=str(model),
            ),
            packages=["verl[verl-core]==0.9.1", engine_pin, "flash-attn (verl[fsdp]: 2.8.3)"],
            memory_gib=memory,
            memory_note=note,
            notes=notes,
        )

    @staticmethod
    def _check_job(job: TrainJob) -> None:
        if job.loss is not None or job.trainer.loss:
            raise ConfigError(
                "the verl backend does not take a token loss (TrainJob.loss / trainer.loss): "
                "register a verl policy loss with "
                "aworld_rl_core.backends.verl.extensions.register_policy_loss "
                "and select it with trainer.verl.policy_loss=<name>"
            )

    def train(self, job: TrainJob) -> RunResult:
        from aworld_rl_core.backends.plan import planned_result, planning_active
        from aworld_rl_core.runs import RunResult

        if planning_active():
            return planned_result(self.plan(job), job)
        self._check_job(job)
        run, verl = job.run, section(job.trainer, VerlConfig)
        launch = plan_launch(job, run.dir, run.checkpoint_dir, resume=run.resume)
        launch_file = self._save_launch(launch, run.dir)
        outputs = {"launch": launch_file, "data": launch.data_dir}
        if verl.dry_run:
            from aworld_rl_core.backends.plan import remember_planned_model

            print(self.describe(launch))
            print(plan_memory(job.model.name_or_path, job.trainer)[1])
            from aworld_rl_core.backends.batching import plan_batches

            # the last step's model (as verl counts; a recipe planning on sample data counts
            # at least one step per epoch): a later stage's estimate takes this model's shape
            n_rows, batch = len(job.train_rows), job.trainer.batch_size
            for steps in {
                engine_steps_of(launch, n_rows, batch),
                plan_batches(job.trainer, n_rows=n_rows, rl=True, strict=False).steps,
            }:
                last = run.checkpoint_dir / f"global_step_{steps}" / HF_MODEL
                remember_planned_model(last, job.model.name_or_path)
            if verl.resolve_config and verl_installed():
                outputs["verl_config"] = self.resolve_config(launch, run.dir / CONFIG_FILE)
                print(f"verl's resolved config: {outputs['verl_config']}")
            return RunResult(metrics={}, outputs=outputs)
        self._check_machine(job)
        log_path = run.dir / LOG_FILE
        self._execute(launch, log_path)
        outputs["log"] = log_path
        records = read_metrics(launch.metrics_file) if launch.metrics_file else []
        for step, data in records:
            run.log(data, step=step)
        final = records[-1][1] if records else {}
        if launch.metrics_file and launch.metrics_file.is_file():
            outputs["metrics"] = launch.metrics_file
        saved = find_checkpoints(run.checkpoint_dir)
        if saved and (saved[-1] / HF_MODEL).is_dir():
            outputs["model"] = saved[-1] / HF_MODEL
        if job.validation is not None:
            final = {**final, **self._validation_result(run.checkpoint_dir, outputs)}
        return RunResult(metrics=final, outputs=outputs, checkpoints=saved)

    @staticmethod
    def _validation_result(checkpoint_dir: Path, outputs: dict[str, Path]) -> dict[str, float]:
        """The last validation and whether the stop rule ended the run."""
        from aworld_rl_core.backends import validation as val

        history = val.read_history(checkpoint_dir / val.HISTORY_FILE)
        if history:
            outputs["validation"] = checkpoint_dir / val.HISTORY_FILE
        last = {k: v for k, v in (history[-1] if history else {}).items() if k.startswith("val/")}
        stopped = val.read_stop(checkpoint_dir) is not None
        return {**last, "validations": float(len(history)), "stopped_early": float(stopped)}

    @staticmethod
    def describe(launch: Launch) -> str:
        """The full launch, as printed by a dry run."""
        lines = ["verl launch (dry run: nothing was started)", "", "command:", launch.shell(), ""]
        lines += ["overrides:", *(f"  {o}" for o in launch.overrides), ""]
        lines.append(f"data: {launch.data_dir}")
        return "\n".join(lines)

    @staticmethod
    def resolve_config(launch: Launch, path: Path) -> Path:
        """verl's full config for this launch (``main_ppo ... --cfg job``; starts nothing)."""
        command = [sys.executable, "-m", "verl.trainer.main_ppo", *launch.overrides, "--cfg", "job"]
        proc = subprocess.run(command, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise ConfigError(
                "verl rejected the launch overrides (check trainer.verl.extra_overrides):\n"
                + proc.stderr[-3000:]
            )
        path.write_text(proc.stdout, encoding="utf-8")
        return path

    @staticmethod
    def _save_launch(launch: Launch, run_dir: Path) -> Path:
        path = run_dir / LAUNCH_FILE
        record: dict[str, Any] = {
            "command": launch.command,
            "shell": launch.shell(),
            "overrides": launch.overrides,
            "env": launch.env,
            "data_dir": str(launch.data_dir),
        }
        path.write_text(json.dumps(record, indent=2), encoding="utf-8")
        return path

    @staticmethod
    def _check_machine(job: TrainJob) -> None:
        verl = section(job.trainer, VerlConfig)
        if verl.ray_address is not None:
            if shutil.which("ray") is None:
                raise AworldError(
                    "submitting a Ray job needs the `ray` CLI: pip install 'aworld-rl-core[verl]'"
                )
            return
        if job.model.name_or_path.startswith("tiny:"):
            raise ConfigError(
                f"model.name_or_path={job.model.name_or_path!r} is a CPU test model; verl needs a "
                "real model path or hub id (e.g. Qwen/Qwen2.5-0.5B-Instruct)"
            )
        if not verl_installed():
            raise AworldError(
                "trainer.backend=verl needs verl: pip install 'aworld-rl-core[verl]' plus a "
                "rollout engine (verl[vllm] or verl[sglang]) on the GPU machines; "
                "or set trainer.verl.dry_run=true to only print the launch"
            )
        if verl.check_rollout_engine:  # before Ray starts: its workers would fail late
            check_rollout_engine(verl.rollout_engine)
        if not cuda_available():
            raise AworldError(
                "trainer.backend=verl runs on CUDA GPUs and this machine has none: set "
                "trainer.verl.ray_address to submit to a GPU cluster, trainer.verl.dry_run=true "
                "to print the launch, or trainer.backend=trl for CPU training"
            )

    @staticmethod
    def _execute(launch: Launch, log_path: Path) -> None:
        env = {**os.environ, **launch.env}
        tail: deque[str] = deque(maxlen=40)
        with (
            log_path.open("w", encoding="utf-8") as log,
            tethered_process(  # dies with this process, kill -9 included
                launch.command,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                bufsize=1,
            ) as proc,
        ):
            assert proc.stdout is not None
            for line in proc.stdout:
                log.write(line)
                tail.append(line)
                print(line, end="")
            code = proc.wait()
        if code != 0:
            raise AworldError(
                f"verl exited with code {code}; full log: {log_path}\n" + "".join(tail)[-3000:]
            )
