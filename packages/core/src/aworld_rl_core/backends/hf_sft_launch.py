"""hf-sft on several processes: torchrun starts one worker per GPU, all in the job's run directory.

``trainer.hf-sft.nproc_per_node`` (and ``nnodes``) > 1, or ``launcher=torchrun``, makes
``HfSftBackend.train`` write the job to ``<run>/hf-sft/job.pkl`` and start
``python -m torch.distributed.run ... -m aworld_rl_core.backends.hf_sft_launch <job.pkl>``.
Every rank trains in the one run directory the parent claimed (checkpoints, the final model: one
output directory, never one per rank); rank 0 writes ``<run>/hf-sft/result.json`` and the
metrics, the parent reads the result back. ``zero_stage`` 2 or 3 writes a DeepSpeed ZeRO config
(:func:`zero_config`) into ``<run>/hf-sft/`` and hands it to transformers.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from aworld_rl_core.config import option
from aworld_rl_core.errors import AworldError, ConfigError

if TYPE_CHECKING:
    from aworld_rl_core.backends.base import TrainJob
    from aworld_rl_core.runs import RunResult

WORK_DIR = "hf-sft"
JOB_FILE = "job.pkl"
RESULT_FILE = "result.json"
WORKER = "aworld_rl_core.backends.hf_sft_launch"


@dataclass(frozen=True, kw_only=True)
class HfSftConfig:
    """hf-sft's own settings: the process launch and DeepSpeed ZeRO."""

    launcher: Literal["auto", "torchrun"] = option(
        "auto",
        help="auto: train in this process for one process in all without ZeRO, through "
        "torchrun for more processes or a zero_stage (DeepSpeed wants a process group, even of "
        "one); torchrun: always through torchrun",
    )
    nproc_per_node: int = option(1, help="processes (GPUs) per node", ge=1)
    nnodes: int = option(1, help="machines; run the same command on each (node_rank apart)", ge=1)
    node_rank: int = option(0, help="this machine's rank (0 on the master)", ge=0)
    master_addr: str = option("127.0.0.1", help="address of the rank-0 machine")
    master_port: int = option(29500, help="rendezvous port on the rank-0 machine", ge=1)
    zero_stage: Literal[0, 2, 3] = option(
        0,
        help="DeepSpeed ZeRO stage: 0 = none (plain DDP); 2 = optimizer state and gradients "
        "sharded; 3 = parameters too. Writes <run>/hf-sft/zero<stage>.json (trainer.sft."
        "deepspeed, a file of your own, takes precedence)",
    )
    cpu_offload: bool = option(False, help="ZeRO: offload optimizer state to CPU memory")

    @property
    def world_size(self) -> int:
        return self.nproc_per_node * self.nnodes

    def uses_torchrun(self) -> bool:
        return self.launcher == "torchrun" or self.world_size > 1 or self.zero_stage > 0


def hf_sft_section(trainer: Any) -> HfSftConfig:
    """The job's ``trainer.hf-sft`` section (defaults where a recipe's trainer has none)."""
    found = getattr(trainer, "sections", {}).get("hf-sft")
    return found if isinstance(found, HfSftConfig) else HfSftConfig()


def zero_config(
    stage: int, *, bf16: bool | None, cpu_offload: bool = False, key: str = "trainer.hf-sft"
) -> dict[str, Any]:
    """A DeepSpeed ZeRO-``stage`` config whose batch sizes, clipping and bucket sizes are
    ``"auto"``: transformers fills them from its ``TrainingArguments`` (one source of truth).
    ``bf16=None``: both precisions ``"auto"`` too (the launcher decides, as LLaMA-Factory's
    worker does from the device); ``key`` names the config section in errors."""
    if stage not in (2, 3):
        raise ConfigError(f"{key}.zero_stage={stage}: DeepSpeed ZeRO stage 2 or 3")
    zero: dict[str, Any] = {
        "stage": stage,
        "overlap_comm": True,
        "contiguous_gradients": True,
        "reduce_bucket_size": "auto",
    }
    if stage == 3:
        zero |= {
            "stage3_prefetch_bucket_size": "auto",
            "stage3_param_persistence_threshold": "auto",
            "stage3_gather_16bit_weights_on_model_save": True,
        }
    else:
        zero |= {"allgather_partitions": True, "reduce_scatter": True}
    if cpu_offload:
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": True}
    return {
        "bf16": {"enabled": "auto" if bf16 or bf16 is None else False},
        "fp16": {"enabled": "auto" if not bf16 else False},
        "zero_optimization": zero,
        "gradient_accumulation_steps": "auto",
        "gradient_clipping": "auto",
        "train_micro_batch_size_per_gpu": "auto",
        "train_batch_size": "auto",
    }


def deepspeed_file(job: TrainJob, *, write: bool) -> str | None:
    """The DeepSpeed config the job trains with: ``trainer.sft.deepspeed`` when given, else the
    ZeRO config of ``trainer.hf-sft.zero_stage`` (written to the run directory when ``write``)."""
    sft, hs = job.trainer.sft, hf_sft_section(job.trainer)
    if sft.deepspeed:
        return sft.deepspeed
    bf16 = job.model.dtype == "bfloat16"
    folder = job.run.dir.resolve() / WORK_DIR
    return zero_file(folder, hs.zero_stage, bf16=bf16, cpu_offload=hs.cpu_offload, write=write)


def zero_file(
    folder: Path,
    stage: int,
    *,
    bf16: bool | None,
    cpu_offload: bool,
    write: bool,
    key: str = "trainer.hf-sft",
) -> str | None:
    """``folder/zero<stage>.json``, holding ``zero_config`` (written when ``write``); None for
    stage 0 (no DeepSpeed)."""
    if stage == 0:
        return None
    path = folder / f"zero{stage}.json"
    if write:
        config = zero_config(stage, bf16=bf16, cpu_offload=cpu_offload, key=key)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(config, indent=2), encoding="utf-8")
    return str(path)


def torchrun_command(hs: HfSftConfig, job_file: Path, python: str | None = None) -> list[str]:
    """The command each node runs (the same on every node but ``--node_rank``)."""
    command = [python or sys.executable, "-m", "torch.distributed.run"]
    command += [f"--nnodes={hs.nnodes}", f"--nproc_per_node={hs.nproc_per_node}"]
    if hs.nnodes > 1:
        command += [
            f"--node_rank={hs.node_rank}",
            f"--master_addr={hs.master_addr}",
            f"--master_port={hs.master_port}",
        ]
    else:
        command += ["--standalone"]
    return [*command, "-m", WORKER, str(job_file)]


def write_job(job: TrainJob, path: Path) -> Path:
    """Pickle what the workers need (the run is passed as its directory)."""
    fields = {
        "model": job.model,
        "trainer": job.trainer,
        "train_rows": [dict(r) for r in job.train_rows],
        "eval_rows": [dict(r) for r in job.eval_rows],
        "loss": job.loss,
        "model_factory": job.model_factory,
        "model_setup": job.model_setup,
        "run_dir": str(job.run.dir.resolve()),
        "run_name": getattr(job.run, "name", "run"),
        "resume": bool(getattr(job.run, "resume", False)),
    }
    try:
        payload = pickle.dumps(fields)
    except (pickle.PicklingError, AttributeError, TypeError) as exc:
        raise ConfigError(
            f"the hf-sft job cannot be sent to the torchrun workers: {exc}. Give the loss, "
            "model_factory and model_setup as registered names, Refs, import paths or "
            "module-level functions (not lambdas or local functions)"
        ) from None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(payload)
    return path


def launch(job: TrainJob) -> RunResult:
    """Train ``job`` through torchrun and return rank 0's result."""
    from aworld_rl_core.runs import RunResult

    hs = hf_sft_section(job.trainer)
    work = job.run.dir.resolve() / WORK_DIR
    result_file = work / RESULT_FILE
    result_file.unlink(missing_ok=True)
    job_file = write_job(job, work / JOB_FILE)
    command = torchrun_command(hs, job_file)
    env = dict(os.environ)
    env.setdefault("PYTHONUNBUFFERED", "1")
    proc = subprocess.run(command, env=env, check=False)
    if proc.returncode != 0:
        raise AworldError(
            f"hf-sft: torchrun exited with code {proc.returncode} (command: "
            f"{' '.join(command)}); the workers' output is above, their run.log in {job.run.dir}"
        )
    if hs.node_rank != 0:  # rank 0 (on the master node) writes the result
        return RunResult(metrics={}, outputs={"model": job.run.dir / "model"})
    try:
        record = json.loads(result_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise AworldError(
            f"hf-sft: torchrun ended without a result ({result_file}: {exc})"
        ) from None
    return RunResult(
        metrics={k: float(v) for k, v in record["metrics"].items()},
        outputs={k: Path(v) for k, v in record["outputs"].items()},
        checkpoints=[Path(c) for c in record["checkpoints"]],
    )


def worker(job_file: Path) -> int:
    """One torchrun rank: rebuild the job in the shared run directory and train."""
    from aworld_rl_core.backends.base import TrainJob
    from aworld_rl_core.registry import get_trainer
    from aworld_rl_core.runs import Run

    fields = pickle.loads(Path(job_file).read_bytes())
    rank = int(os.environ.get("RANK", "0"))
    run = Run(Path(fields.pop("run_dir")), name=fields.pop("run_name"), quiet=rank != 0)
    run.resume = fields.pop("resume")
    if rank != 0:  # one metrics log: rank 0's
        run.log = lambda *args, **kwargs: None  # type: ignore[method-assign]
    try:
        # the backend by its registered name (hf_sft imports this module, not the reverse)
        result = get_trainer("hf-sft")().train_here(TrainJob(run=run, **fields))
    finally:
        run.close()
    if rank == 0:
        record = {
            "metrics": result.metrics,
            "outputs": {k: str(v) for k, v in result.outputs.items()},
            "checkpoints": [str(c) for c in result.checkpoints],
            "world_size": int(os.environ.get("WORLD_SIZE", "1")),
        }
        path = Path(job_file).parent / RESULT_FILE
        path.write_text(json.dumps(record, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(f"usage: python -m {WORKER} <job.pkl> (started by torchrun)")
    sys.exit(worker(Path(sys.argv[1])))
