"""``LlamaFactoryBackend``: SFT through LLaMA-Factory, in its own environment, with our loss.

The backend writes the rows as sharegpt data (+ ``dataset_info.json``), the training
arguments and a spec under ``<run>/llamafactory/``, then runs ``worker.py`` with
``trainer.llamafactory.python``. The worker streams events (logs, saves) to a JSON-lines file
that the backend follows to log metrics and drive the progress bar. Checkpoints go to
``run.checkpoint_dir`` (``checkpoint-N`` folders; the final model at its top level).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from aworld_rl_core.backends.checkpoints import checkpoints, latest_checkpoint
from aworld_rl_core.backends.llamafactory.config import LlamaFactoryConfig
from aworld_rl_core.backends.llamafactory.launch import (
    EVAL_NAME,
    TRAIN_NAME,
    WORK_DIR,
    LlamaFactoryError,
    build_train_args,
    command,
    deepspeed_file,
    model_source,
    python_path_dir,
    subprocess_env,
    write_dataset,
    write_loss,
)
from aworld_rl_core.children import tethered_process
from aworld_rl_core.losses import token_loss
from aworld_rl_core.trainer_config import section

if TYPE_CHECKING:
    from aworld_rl_core.backends.base import TrainJob
    from aworld_rl_core.runs import Run, RunResult

POLL_S = 0.5
DEEPSPEED = "deepspeed>=0.10.0,<=0.16.4"
"""The DeepSpeed the llamafactory extra installs (LLaMA-Factory 0.9.5's tested range)."""
LOG_TAIL_LINES = 40


class LlamaFactoryBackend:
    """SFT through LLaMA-Factory 0.9.5 (``trainer.backend=llamafactory``)."""

    name = "llamafactory"

    def plan(self, job: TrainJob) -> Any:
        """The launch plan: the worker (through torchrun for several GPUs) with the arguments
        it passes to ``run_exp`` (written, with the data, under ``<run>/llamafactory/``)."""
        from aworld_rl_core.backends import plan as p

        _check_job(job)
        lf = section(job.trainer, LlamaFactoryConfig)
        work = job.run.dir.resolve() / WORK_DIR
        inputs = _write_inputs(job, work)
        args = yaml.safe_load(inputs.args_file.read_text(encoding="utf-8"))
        gpus = lf.nproc_per_node
        n = inputs.counts["train_samples"]
        stage = p.deepspeed_stage(args.get("deepspeed"))
        memory, note = p.sft_memory(
            job.model.name_or_path,
            gpus=gpus,
            micro_batch=args["per_device_train_batch_size"],
            seq_len=job.trainer.sft.max_length,
            zero3=stage == 3,
            gradient_checkpointing=not args.get("disable_gradient_checkpointing", False),
        )
        packages = ["llamafactory==0.9.5 (its own environment)"]
        if "deepspeed" in args:
            packages.append(f"{DEEPSPEED} (aworld-rl-core[llamafactory]: LLaMA-Factory's bounds)")
        steps = int(args["max_steps"])
        final = job.run.checkpoint_dir / f"checkpoint-{steps}"
        return p.LaunchPlan(
            backend=self.name,
            processes=[
                p.Process(
                    "LLaMA-Factory worker",
                    command(
                        lf.python or "python", gpus, inputs.spec, deepspeed="deepspeed" in args
                    ),
                    writes=[
                        str(inputs.data_dir),
                        str(inputs.args_file),
                        str(job.run.checkpoint_dir),
                    ],
                )
            ],
            steps=p.StepPlan(
                steps=steps,
                steps_per_epoch=n // job.trainer.batch_size,
                epochs=job.trainer.epochs,
                samples_per_step=job.trainer.batch_size,
                micro_batch=args["per_device_train_batch_size"],
                world_size=gpus,
                accumulation=args["gradient_accumulation_steps"],
                engine_settings={
                    k: args[k]
                    for k in ("max_steps", "dataloader_drop_last", "deepspeed", "save_total_limit")
                    if k in args
                },
            ),
            checkpoints=p.CheckpointPlan(
                directory=str(job.run.checkpoint_dir),
                every=job.trainer.save_steps or steps,
                keep=job.trainer.keep_checkpoints,
                final=str(final),
                model=str(job.run.checkpoint_dir),
            ),
            packages=packages,
            memory_gib=memory,
            memory_note=note,
            notes=[f"{n} training samples (per assistant turn: {job.trainer.sft.per_turn})"],
        )

    def train(self, job: TrainJob) -> RunResult:
        from aworld_rl_core.backends.plan import planned_result, planning_active
        from aworld_rl_core.runs import RunResult

        if planning_active():
            return planned_result(self.plan(job), job)
        _check_job(job)
        lf = section(job.trainer, LlamaFactoryConfig)
        python = _python(lf.python)
        work = job.run.dir.resolve() / WORK_DIR
        inputs = _write_inputs(job, work)
        path_dir = python_path_dir(work / "pythonpath", stub_torchaudio=lf.stub_torchaudio)
        job.run.log({f"llamafactory/{k}": float(v) for k, v in inputs.counts.items()})
        final = _run_worker(
            command(python, lf.nproc_per_node, inputs.spec, deepspeed=inputs.deepspeed),
            subprocess_env(path_dir),
            work,
            work / "worker.log",
            inputs.events,
            job.run,
            total=inputs.steps,
        )
        final.update({k: float(v) for k, v in inputs.counts.items()})
        if inputs.resume_from is not None:
            final["resumed_from_step"] = float(inputs.resume_from.name.split("-")[1])
        return RunResult(
            metrics=final,
            outputs={
                "model": job.run.checkpoint_dir,
                "data": inputs.data_dir,
                "train_args": inputs.args_file,
                "log": work / "worker.log",
            },
            checkpoints=checkpoints(job.run.checkpoint_dir),
        )


@dataclass(frozen=True)
class _Inputs:
    """What the backend wrote for the worker."""

    data_dir: Path
    args_file: Path
    spec: Path
    events: Path
    resume_from: Path | None
    counts: dict[str, int]
    steps: int
    deepspeed: bool


def _check_job(job: TrainJob) -> None:
    if job.env is not None or job.rewards:
        raise LlamaFactoryError(
            "the llamafactory backend does supervised fine-tuning only: use "
            "trainer.backend=trl or verl for environment / reward (RL) training"
        )
    if not job.train_rows:
        raise LlamaFactoryError("the llamafactory backend got no training rows")


def _write_inputs(job: TrainJob, work: Path) -> _Inputs:
    """Write the sharegpt data, the training arguments, the loss and the worker's spec."""
    work.mkdir(parents=True, exist_ok=True)
    data_dir = work / "data"
    if data_dir.exists():
        shutil.rmtree(data_dir)
    per_turn = job.trainer.sft.per_turn
    counts = {"train_samples": write_dataset(job.train_rows, data_dir, TRAIN_NAME, per_turn)}
    counts["eval_samples"] = (
        write_dataset(job.eval_rows, data_dir, EVAL_NAME, per_turn) if job.eval_rows else 0
    )
    resume = job.trainer.resume or getattr(job.run, "resume", False)
    resume_from = latest_checkpoint(job.run.checkpoint_dir) if resume else None
    from aworld_rl_core.backends.plan import planning_active

    args = build_train_args(
        job,
        data_dir,
        has_eval=counts["eval_samples"] > 0,
        resume_from=resume_from,
        n_samples=counts["train_samples"],
        strict=not planning_active(),  # a plan on sample data counts a short epoch as 1 step
    )
    deepspeed_file(job, write=True)  # the ZeRO config of zero_stage (none for a file of yours)
    args_file = work / "train_args.yaml"
    args_file.write_text(yaml.safe_dump(args, sort_keys=False), encoding="utf-8")
    events = work / "events.jsonl"
    events.unlink(missing_ok=True)
    loss = token_loss(job, "llamafactory")
    spec = {
        "train_args": str(args_file),
        "resolved_args": str(work / "train_args.resolved.yaml"),
        "events": str(events),
        "loss": str(write_loss(loss, work / "loss.pkl")) if loss is not None else None,
        "segments": {name: list(tags) for name, tags in job.trainer.sft.segments.items()},
        "tiny_arch": model_source(job.model.name_or_path)[1],
        "seed": job.trainer.seed,
        "dtype": job.model.dtype,
        "extra_args": dict(section(job.trainer, LlamaFactoryConfig).extra_args),
    }
    spec_file = work / "spec.json"
    spec_file.write_text(json.dumps(spec, indent=2), encoding="utf-8")
    return _Inputs(
        data_dir,
        args_file,
        spec_file,
        events,
        resume_from,
        counts,
        args["max_steps"],
        deepspeed="deepspeed" in args,
    )


INSTALL_HINT = (
    "python -m venv ENV; ENV/bin/pip install torch==2.13.0; ENV/bin/pip install "
    "llamafactory==0.9.5 -c c.txt (c.txt holding torch==2.13.0); ENV/bin/pip uninstall -y "
    "torchvision torchaudio; then set trainer.llamafactory.python=ENV/bin/python"
)


def _python(configured: str | None) -> str:
    """The LLaMA-Factory environment's python, checked to have ``llamafactory`` installed."""
    python = sys.executable if configured is None else shutil.which(configured)
    if python is None:
        raise LlamaFactoryError(
            f"trainer.llamafactory.python={configured!r} is not an executable; give the python "
            "of the environment where llamafactory==0.9.5 is installed"
        )
    probe = "import importlib.metadata as m; m.version('llamafactory')"  # the installed dist
    if subprocess.run([python, "-I", "-c", probe], capture_output=True).returncode != 0:
        raise LlamaFactoryError(
            f"llamafactory is not installed for {python}. It needs its own environment "
            f"(its pins conflict with TRL's): {INSTALL_HINT}"
        )
    return python


def _run_worker(
    cmd: list[str],
    env: dict[str, str],
    cwd: Path,
    log_file: Path,
    events: Path,
    run: Run,
    total: int | None,
) -> dict[str, float]:
    """Run the worker, forwarding its events to ``run``; the last value of every metric."""
    final: dict[str, float] = {}
    with log_file.open("ab") as log:
        log.write(f"$ {' '.join(cmd)}\n".encode())
        log.flush()
        # dies with this process, kill -9 included, and is stopped when the block ends
        with tethered_process(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=cwd) as proc:
            steps = _follow(proc, events, _forwarder(run, final))
            for _ in run.progress(steps, total=total, desc="llamafactory sft"):
                pass
    if proc.returncode != 0:
        raise LlamaFactoryError(
            f"LLaMA-Factory training failed (exit code {proc.returncode}); the end of "
            f"{log_file}:\n{_tail(log_file)}"
        )
    return final


def _forwarder(run: Run, final: dict[str, float]) -> Callable[[dict[str, Any]], None]:
    """Log each ``log`` event to ``run`` and keep the last value of every metric in ``final``."""

    def handle(record: dict[str, Any]) -> None:
        if record["event"] == "log":
            run.log(record["metrics"], step=record["step"])
            final.update(record["metrics"])
            final["global_step"] = float(record["step"])

    return handle


def _follow(
    proc: subprocess.Popen, events: Path, handle: Callable[[dict[str, Any]], None]
) -> Iterator[int]:
    """Hand each event the worker appends to ``handle``; yield once per optimizer step.

    Ends when the worker has exited and its last events are read.
    """
    offset, step = 0, 0
    while True:
        running = proc.poll() is None
        lines, offset = _read_new_lines(events, offset)
        for line in lines:
            record = json.loads(line)
            if record["event"] == "begin":
                step = record["step"]
            handle(record)
            while record.get("step", step) > step:
                step += 1
                yield step
        if not running:
            return
        time.sleep(POLL_S)


def _read_new_lines(path: Path, offset: int) -> tuple[list[str], int]:
    """Complete lines appended to ``path`` after byte ``offset`` (a partial last line waits)."""
    if not path.exists():
        return [], offset
    with path.open("rb") as fh:
        fh.seek(offset)
        chunk = fh.read()
    end = chunk.rfind(b"\n") + 1
    lines = chunk[:end].decode("utf-8").splitlines()
    return [ln for ln in lines if ln.strip()], offset + end


def _tail(path: Path, n: int = LOG_TAIL_LINES) -> str:
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    return "\n".join(lines[-n:])
