"""Building a LLaMA-Factory SFT launch: data, training arguments, PYTHONPATH and command.

Everything here is plain Python (no torch, no LLaMA-Factory): the training itself runs in a
subprocess with the LLaMA-Factory environment's python (``worker.py``).
"""

from __future__ import annotations

import os
import pickle
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aworld_rl_core.backends.batching import plan_batches
from aworld_rl_core.backends.llamafactory.config import LlamaFactoryConfig
from aworld_rl_core.errors import AworldError
from aworld_rl_core.records import ToolUseRecord, as_record, write_sharegpt
from aworld_rl_core.trainer_config import section

if TYPE_CHECKING:
    from aworld_rl_core.backends.base import TrainJob

TRAIN_NAME, EVAL_NAME = "train", "eval"
TORCHAUDIO_STUB = '''"""Stub torchaudio written by aworld-rl.

LLaMA-Factory imports torchaudio at import time, and PyPI has no torchaudio for this torch.
Audio datasets are unsupported."""


def load(*args, **kwargs):
    raise RuntimeError("torchaudio stub: audio datasets are unsupported; install a torchaudio "
                       "matching torch and set trainer.llamafactory.stub_torchaudio=false")


class _Functional:
    def resample(self, *args, **kwargs):
        raise RuntimeError("torchaudio stub: audio resampling is unsupported")


functional = _Functional()
'''


class LlamaFactoryError(AworldError):
    """The LLaMA-Factory backend cannot run this job; the message says what to change."""


def per_turn_records(record: ToolUseRecord) -> list[ToolUseRecord]:
    """One record per assistant turn: the conversation up to and including that turn."""
    out = []
    for k, i in enumerate(record.assistant_indices()):
        out.append(
            ToolUseRecord(
                messages=record.messages[: i + 1],
                tools=record.tools,
                ground_truth=record.ground_truth,
                id=f"{record.id}#turn{k}" if record.id else f"turn{k}",
                data_source=record.data_source,
                metadata=record.metadata,
            )
        )
    return out


def write_dataset(
    rows: Iterable[ToolUseRecord | Mapping[str, Any]], data_dir: Path, name: str, per_turn: bool
) -> int:
    """Write rows as sharegpt ``<data_dir>/<name>.json`` (+ ``dataset_info.json``); the count.

    With ``per_turn`` a multi-turn sample becomes one sample per assistant turn, and the
    training arguments set ``mask_history`` so that only each sample's last turn is trained.
    """
    records = [as_record(r) for r in rows]
    if per_turn:
        records = [part for r in records for part in per_turn_records(r)]
    write_sharegpt(records, data_dir, name)
    return len(records)


def model_source(name_or_path: str) -> tuple[str, str | None]:
    """(model_name_or_path for LLaMA-Factory, tiny architecture and size or None)."""
    from aworld_rl_core.models import check_source, is_tiny, tiny_spec

    if is_tiny(check_source(name_or_path)):
        # the worker materialises the tiny model on disk and substitutes its path
        return name_or_path, tiny_spec(name_or_path)
    return name_or_path, None


def build_train_args(
    job: TrainJob,
    dataset_dir: Path,
    *,
    has_eval: bool,
    resume_from: Path | None,
    n_samples: int | None = None,
    strict: bool = True,
) -> dict[str, Any]:
    """LLaMA-Factory ``run_exp`` arguments from our model and trainer configs.

    Batches and steps come from ``batching.plan_batches`` over the ``n_samples`` written
    (default: the job's rows; ``strict=False`` for a dry run on sample data). Device and
    precision arguments are added by the worker (it knows whether CUDA is there);
    ``trainer.llamafactory.extra_args`` are merged last, by the worker.
    """
    model, trainer = job.model, job.trainer
    lf, sft = section(trainer, LlamaFactoryConfig), trainer.sft
    if model.tokenizer and model.tokenizer != model.name_or_path:
        raise LlamaFactoryError(
            "LLaMA-Factory loads the tokenizer from the model directory: leave model.tokenizer "
            "unset (or copy the tokenizer files into the model directory)"
        )
    if model.chat_template:
        raise LlamaFactoryError(
            "LLaMA-Factory formats samples with its own templates: leave model.chat_template "
            "unset and choose trainer.llamafactory.template (null = parse the tokenizer's)"
        )
    if lf.nproc_per_node < 1:
        raise LlamaFactoryError("trainer.llamafactory.nproc_per_node must be >= 1")
    name, _ = model_source(model.name_or_path)
    samples = len(job.train_rows) if n_samples is None else n_samples
    plan = plan_batches(trainer, n_rows=samples, rl=False, devices=lf.nproc_per_node, strict=strict)
    args: dict[str, Any] = {
        "stage": "sft",
        "do_train": True,
        "model_name_or_path": name,
        "trust_remote_code": False,
        "finetuning_type": lf.finetuning_type,
        "dataset": TRAIN_NAME,
        "dataset_dir": str(dataset_dir.resolve()),
        "cutoff_len": sft.max_length,
        "mask_history": sft.per_turn,
        "overwrite_cache": True,
        "preprocessing_num_workers": lf.preprocessing_num_workers,
        "output_dir": str(job.run.checkpoint_dir.resolve()),
        "overwrite_output_dir": resume_from is None,
        "per_device_train_batch_size": plan.micro_batch,
        "gradient_accumulation_steps": plan.accumulation,
        "learning_rate": trainer.learning_rate,
        "max_steps": plan.steps,
        "dataloader_drop_last": True,  # a partial last batch is dropped (batching's rule)
        "lr_scheduler_type": sft.lr_scheduler,
        "warmup_ratio": sft.warmup_ratio,
        "weight_decay": trainer.weight_decay,
        "max_grad_norm": trainer.max_grad_norm,
        "seed": trainer.seed,
        "data_seed": trainer.seed,
        "logging_steps": trainer.logging_steps,
        "save_strategy": "steps",
        # 0 = only at the end (the Trainer always saves the last step with the steps strategy)
        "save_steps": trainer.save_steps if trainer.save_steps > 0 else 2**31 - 1,
        "save_total_limit": trainer.keep_checkpoints,
        "report_to": "none",
        "plot_loss": False,
        "dataloader_num_workers": 0,
    }
    if lf.template is not None:
        args["template"] = lf.template
    if resume_from is not None:
        args["resume_from_checkpoint"] = str(resume_from)
    deepspeed = deepspeed_file(job, write=False)
    if deepspeed:
        args["deepspeed"] = deepspeed
    if lf.finetuning_type == "lora":
        args.update(
            lora_rank=lf.lora_rank,
            lora_alpha=lf.lora_alpha if lf.lora_alpha is not None else 2 * lf.lora_rank,
            lora_target=lf.lora_target,
        )
    if has_eval:
        args.update(
            eval_dataset=EVAL_NAME,
            do_eval=True,
            per_device_eval_batch_size=trainer.micro_batch_size,
        )
    return {k: v for k, v in args.items() if v is not None}


WORK_DIR = "llamafactory"
"""The backend's folder in the run directory (data, arguments, ZeRO config, worker log)."""


def deepspeed_file(job: TrainJob, *, write: bool) -> str | None:
    """The DeepSpeed config the job trains with: ``trainer.llamafactory.deepspeed`` when given,
    else the ZeRO config of ``trainer.llamafactory.zero_stage`` (core's ``zero_config``, both
    precisions ``"auto"``: the worker sets bf16/fp16 for the device), written to
    ``<run>/llamafactory/zero<stage>.json`` when ``write``."""
    from aworld_rl_core.backends.hf_sft_launch import zero_file

    lf = section(job.trainer, LlamaFactoryConfig)
    if lf.deepspeed:
        return lf.deepspeed
    folder = job.run.dir.resolve() / WORK_DIR
    return zero_file(
        folder,
        lf.zero_stage,
        bf16=None,
        cpu_offload=lf.cpu_offload,
        write=write,
        key="trainer.llamafactory",
    )


def python_path_dir(directory: Path, *, stub_torchaudio: bool) -> Path:
    """A folder for the subprocess's PYTHONPATH: our loaded ``aworld_rl*`` packages (linked,
    so the worker and a pickled loss hook import the same code) and the torchaudio stub."""
    directory.mkdir(parents=True, exist_ok=True)
    for name in sorted({m.split(".")[0] for m in list(sys.modules) if m.startswith("aworld_rl")}):
        module = sys.modules.get(name)
        source = Path(module.__file__).parent if module and module.__file__ else None
        link = directory / name
        if source is None or source.name != name or link.exists() or link.is_symlink():
            continue
        link.symlink_to(source, target_is_directory=True)
    if stub_torchaudio:
        stub = directory / "torchaudio"
        stub.mkdir(exist_ok=True)
        (stub / "__init__.py").write_text(TORCHAUDIO_STUB, encoding="utf-8")
    return directory


def write_loss(loss: Any, path: Path) -> Path:
    """Pickle the loss hook for the subprocess (by reference: it must be importable there)."""
    try:
        payload = pickle.dumps(loss)
    except (pickle.PicklingError, AttributeError, TypeError) as exc:
        raise LlamaFactoryError(
            f"job.loss ({loss!r}) cannot be sent to the LLaMA-Factory subprocess: {exc}. Use a "
            "module-level function, a functools.partial of one, or an instance of a "
            "module-level class (not a lambda or a local function)"
        ) from None
    path.write_bytes(payload)
    return path


def subprocess_env(path_dir: Path) -> dict[str, str]:
    """The parent's environment with ``path_dir`` first on PYTHONPATH."""
    env = dict(os.environ)
    parts = [str(path_dir), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    env["PYTHONPATH"] = os.pathsep.join(parts)
    env["PYTHONUNBUFFERED"] = "1"
    env.setdefault("WANDB_DISABLED", "true")
    return env


def command(python: str, nproc_per_node: int, spec: Path, *, deepspeed: bool = False) -> list[str]:
    """The worker command line: through torchrun for several processes per node, and for
    DeepSpeed even on one (LLaMA-Factory refuses DeepSpeed outside distributed mode:
    "Please use `FORCE_TORCHRUN=1` to launch DeepSpeed training")."""
    module = ["-m", "aworld_rl_core.backends.llamafactory.worker", str(spec)]
    if nproc_per_node == 1 and not deepspeed:
        return [python, *module]
    return [python, "-m", "torch.distributed.run", f"--nproc_per_node={nproc_per_node}", *module]
