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
from aworld_rl_core.backends.config import section
from aworld_rl_core.backends.verl.config import VerlConfig
from aworld_rl_core.backends.verl.launcher import Launch, plan_launch
from aworld_rl_core.errors import AworldError, ConfigError

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


class VerlBackend:
    """Train through verl (``trainer.backend=verl``)."""

    name = "verl"

    def train(self, job: TrainJob) -> RunResult:
        from aworld_rl_core.runs import RunResult

        if job.loss is not None or job.trainer.loss:
            raise ConfigError(
                "the verl backend does not take a token loss (TrainJob.loss / trainer.loss): "
                "register a verl policy loss with "
                "aworld_rl_core.backends.verl.extensions.register_policy_loss "
                "and select it with trainer.verl.policy_loss=<name>"
            )
        run, verl = job.run, section(job.trainer, VerlConfig)
        launch = plan_launch(job, run.dir, run.checkpoint_dir, resume=run.resume)
        launch_file = self._save_launch(launch, run.dir)
        outputs = {"launch": launch_file, "data": launch.data_dir}
        if verl.dry_run:
            print(self.describe(launch))
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
            subprocess.Popen(
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
