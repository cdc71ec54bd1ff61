"""Recipe ``v2p.train``: V2P's two stages through core's hf-sft backend, and a launch dry run.

Stage ``warmup`` trains the action head and the new token rows (pointer loss only); stage
``main`` trains everything (LM + pointer loss). ``launch.dry_run`` prints the multi-GPU launch
(torchrun or accelerate, DeepSpeed ZeRO-3) and a per-GPU memory estimate, and writes
``launch.sh`` and ``zero3.json`` into the run directory.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from aworld_rl_core.config import option
from aworld_rl_core.models.config import ModelConfig
from aworld_rl_core.runs import Run, RunResult
from aworld_rl_core.trainer_config import SFTConfig, TrainerConfig
from aworld_rl_v2p.options import PointerLossOptions

LOSS = "v2p.pointer"


@dataclass(frozen=True, kw_only=True)
class SourceConfig:
    """One training source (the released data_config.yaml: json_path, images_folder,
    sampling_strategy)."""

    path: str = option("", help="AGUVIS JSON file")
    images: str | None = option(None, help="its image folder (default: beside the file)")
    weight: float = option(
        1.0, help="how much of it: 0.5 = a random half, 2 = twice over (seeded by data.seed)", gt=0
    )


@dataclass(frozen=True, kw_only=True)
class TrainDataConfig:
    """Training data: GUI-Actor/AGUVIS JSON (v2p.generate writes it too); multi-turn
    conversations stay whole (one record, a click per assistant turn)."""

    paths: tuple[str, ...] = option(("data/data.json",), help="AGUVIS JSON files")
    images: str | None = option(None, help="image folder (default: beside each JSON file)")
    sources: tuple[SourceConfig, ...] = option(
        (), help="per-source files, image folders and weights (used instead of paths when set)"
    )
    seed: int = option(0, help="seed of the per-source sampling")
    max_pixels: int = option(5_720_064, help="smart-resize pixel cap of the training images")
    min_pixels: int = option(3136, help="smart-resize pixel floor")


@dataclass(frozen=True, kw_only=True)
class LaunchConfig:
    """Multi-GPU launch (printed by the dry run)."""

    dry_run: bool = option(False, help="print the launch and the memory estimate; train nothing")
    launcher: Literal["torchrun", "accelerate"] = option("torchrun", help="process launcher")
    nodes: int = option(1, help="machines", ge=1)
    gpus_per_node: int = option(1, help="GPUs per machine", ge=1)
    zero3: bool = option(True, help="DeepSpeed ZeRO-3 (params, grads and optimizer sharded)")
    gradient_checkpointing: bool = option(True, help="recompute activations in backward")
    seq_len: int = option(
        7600, help="tokens per sample for the estimate (7,296 visual + text)", ge=1
    )


def _trainer() -> TrainerConfig:
    return TrainerConfig(
        backend="hf-sft",
        learning_rate=1e-4,
        batch_size=1,
        micro_batch_size=1,
        epochs=1.0,
        loss=LOSS,
        sft=SFTConfig(max_length=24576, warmup_ratio=0.03, lr_scheduler="cosine"),
    )


@dataclass(frozen=True, kw_only=True)
class TrainConfig:
    """Train V2P (warm-up or main stage)."""

    model: ModelConfig = option(
        factory=lambda: ModelConfig(name_or_path="Qwen/Qwen2.5-VL-7B-Instruct", dtype="bfloat16"),
        help="the base model (warm-up) or the warm-up checkpoint (main)",
    )
    stage: Literal["warmup", "main"] = option("warmup", help="warmup: head + new rows; main: all")
    data: TrainDataConfig = option(factory=TrainDataConfig, help="training data")
    loss: PointerLossOptions = option(
        factory=PointerLossOptions, help="v2p.pointer, the model-level loss (trainer.loss)"
    )
    trainer: TrainerConfig = option(factory=_trainer, help="optimisation (hf-sft backend)")
    launch: LaunchConfig = option(factory=LaunchConfig, help="multi-GPU launch")


def zero3_config(cfg: TrainConfig) -> dict:
    """DeepSpeed ZeRO-3 settings with the trainer's batch sizes ("auto": from the Trainer)."""
    return {
        "bf16": {"enabled": cfg.model.dtype == "bfloat16"},
        "zero_optimization": {
            "stage": 3,
            "overlap_comm": True,
            "contiguous_gradients": True,
            "reduce_bucket_size": "auto",
            "stage3_prefetch_bucket_size": "auto",
            "stage3_param_persistence_threshold": "auto",
            "stage3_gather_16bit_weights_on_model_save": True,
        },
        "gradient_accumulation_steps": "auto",
        "gradient_clipping": "auto",
        "train_micro_batch_size_per_gpu": "auto",
        "train_batch_size": "auto",
    }


def launch_command(cfg: TrainConfig, config_path: str) -> str:
    """The command each node runs (NODE_RANK, MASTER_ADDR from the cluster's environment)."""
    gpus = cfg.launch.nodes * cfg.launch.gpus_per_node
    if cfg.launch.launcher == "torchrun":
        head = [
            "torchrun",
            f"--nnodes={cfg.launch.nodes}",
            f"--nproc_per_node={cfg.launch.gpus_per_node}",
            "--node_rank=$NODE_RANK",
            "--master_addr=$MASTER_ADDR",
            "--master_port=29500",
            "-m",
            "aworld_rl_core.cli",
        ]
    else:
        head = [
            "accelerate",
            "launch",
            f"--num_machines={cfg.launch.nodes}",
            f"--num_processes={gpus}",
            "--machine_rank=$NODE_RANK",
            "--main_process_ip=$MASTER_ADDR",
            "--main_process_port=29500",
            "-m",
            "aworld_rl_core.cli",
        ]
    tail = ["v2p.train", "--config", shlex.quote(config_path), "launch.dry_run=false"]
    return " ".join(head + tail)


def _shape(cfg: TrainConfig):
    """core's shape of the base model: a known one, else counted on the loaded model (vision
    tower included, the action head left out: ``memory_per_gpu`` adds it)."""
    from aworld_rl_core.backends.memory import KNOWN_SHAPES, ModelShape

    name = cfg.model.name_or_path
    if name in KNOWN_SHAPES:
        return KNOWN_SHAPES[name]
    from aworld_rl_v2p.loading import load_v2p

    model, _, _ = load_v2p(name, device="cpu")
    text = model.config.text_config
    params = sum(p.numel() for p in model.parameters()) - 8 * text.hidden_size**2
    config = {
        **text.to_dict(),
        "tie_word_embeddings": getattr(model.config, "tie_word_embeddings", False),
    }
    return dataclasses.replace(ModelShape.from_config(config), params=float(params))


def run(cfg: TrainConfig, run: Run) -> RunResult:
    gpus = cfg.launch.nodes * cfg.launch.gpus_per_node
    check(cfg, gpus)
    return _dry_run(cfg, run, gpus) if cfg.launch.dry_run else _train(cfg, run)


def check(cfg: TrainConfig, gpus: int) -> None:
    """What would fail (or train wrongly) once launched, found before anything loads."""
    from aworld_rl_core.errors import ConfigError

    t = cfg.trainer
    if t.batch_size % (t.micro_batch_size * gpus):
        raise ValueError(
            f"trainer.batch_size={t.batch_size} must be a multiple of micro_batch_size x "
            f"GPUs = {t.micro_batch_size} x {gpus}"
        )
    if t.backend != "hf-sft":
        raise ConfigError(f"v2p.train trains through hf-sft, not trainer.backend={t.backend!r}")
    if t.loss_options:
        raise ConfigError(
            "v2p.train takes the pointer loss's options as loss.<key>, not trainer.loss_options"
        )
    if cfg.stage == "warmup" and t.weight_decay > 0:
        raise ConfigError(
            f"stage=warmup with trainer.weight_decay={t.weight_decay}: AdamW's decay would move "
            "the frozen embedding rows the gradient mask keeps fixed; use trainer.weight_decay=0"
        )


def _dry_run(cfg: TrainConfig, run: Run, gpus: int) -> RunResult:
    from aworld_rl_v2p.training import memory_per_gpu

    shape = _shape(cfg)
    memory = memory_per_gpu(
        shape,
        stage=cfg.stage,
        gpus=gpus,
        micro_batch=cfg.trainer.micro_batch_size,
        seq_len=cfg.launch.seq_len,
        zero3=cfg.launch.zero3,
        gradient_checkpointing=cfg.launch.gradient_checkpointing,
    )
    (run.dir / "zero3.json").write_text(json.dumps(zero3_config(cfg), indent=2), encoding="utf-8")
    command = launch_command(cfg, str(run.dir / "config.yaml"))
    (run.dir / "launch.sh").write_text(
        "#!/usr/bin/env bash\nset -euo pipefail\n" + command + "\n", encoding="utf-8"
    )
    accumulation = cfg.trainer.batch_size // (cfg.trainer.micro_batch_size * gpus)
    table = "| per GPU | GiB |\n|---|---|\n" + "\n".join(
        f"| {k.removesuffix('_gib')} | {v:.2f} |" for k, v in memory.items()
    )
    t = cfg.trainer
    text = (
        f"stage {cfg.stage}: {gpus} GPU(s) ({cfg.launch.nodes} x {cfg.launch.gpus_per_node}), "
        f"global batch {t.batch_size} = micro {t.micro_batch_size} x {gpus} GPUs x "
        f"{accumulation} accumulation, lr {t.learning_rate}, {t.sft.lr_scheduler}, "
        f"warm-up {t.sft.warmup_ratio:.0%}\n\n```bash\n{command}\n```\n\n{table}\n"
    )
    print(text)
    run.add_section("Launch (dry run)", text)
    metrics = {"gpus": float(gpus), "accumulation": float(accumulation), **memory}
    return RunResult(
        metrics=metrics, outputs={"launch": run.dir / "launch.sh", "zero3": run.dir / "zero3.json"}
    )


def launch_trainer(cfg: TrainConfig, run: Run) -> TrainerConfig:
    """The trainer the launch trains with: on several GPUs, ``launch.zero3`` and
    ``launch.gradient_checkpointing`` go into hf-sft's job (``trainer.sft.deepspeed`` = the
    ``zero3.json`` written into the run directory), so what trains is what the dry run's
    estimate describes. One process (CPU, one GPU) keeps the trainer as configured."""
    t = cfg.trainer
    if cfg.launch.nodes * cfg.launch.gpus_per_node == 1:
        return t
    sft = t.sft
    if cfg.launch.zero3 and not sft.deepspeed:
        path = run.dir / "zero3.json"
        path.write_text(json.dumps(zero3_config(cfg), indent=2), encoding="utf-8")
        sft = dataclasses.replace(sft, deepspeed=str(path))
    if cfg.launch.gradient_checkpointing:
        sft = dataclasses.replace(sft, gradient_checkpointing=True)
    return dataclasses.replace(t, sft=sft)


def training_job(cfg: TrainConfig, run: Run):
    """core's hf-sft job: V2P records, this package's model factory and stage setup, and
    ``v2p.pointer`` with the ``loss`` section as its options."""
    from aworld_rl_core.backends.base import TrainJob
    from aworld_rl_core.refs import Ref
    from aworld_rl_v2p.training import to_record

    samples, skipped = training_samples(cfg.data)
    rows = [to_record(s) for s in samples]
    if skipped:
        run.add_section("Skipped rows", "\n".join(f"- {k}: {v}" for k, v in skipped.items()))
        print(f"v2p.train: skipped rows {dict(skipped)}")
    if not rows:
        raise ValueError(
            f"no grounding samples in the training data (skipped rows: {dict(skipped)})"
        )
    loss = stage_loss(cfg)
    pixels = {"max_pixels": cfg.data.max_pixels, "min_pixels": cfg.data.min_pixels}
    t = launch_trainer(cfg, run)
    return TrainJob(
        model=cfg.model,
        trainer=dataclasses.replace(t, loss_options=dataclasses.asdict(loss)),
        run=run,
        train_rows=rows,
        model_factory=Ref("aworld_rl_v2p.training:model_factory", kwargs=pixels),
        model_setup=Ref("aworld_rl_v2p.training:warmup_trainable", kwargs={"stage": cfg.stage}),
    )


def stage_loss(cfg: TrainConfig) -> PointerLossOptions:
    """The loss options with ``lm_weight`` set by stage where it is not given: none in the
    warm-up (the paper trains the head on the pointer loss only), 1.0 in the main stage."""
    if cfg.loss.lm_weight is not None:
        return cfg.loss
    return dataclasses.replace(cfg.loss, lm_weight=-1.0 if cfg.stage == "warmup" else 1.0)


def training_samples(data: TrainDataConfig):
    """(samples, skipped-row counts): each source read whole-conversation and sampled by its
    weight (``data.sources``), or every file of ``data.paths``."""
    import random
    from collections import Counter

    from aworld_rl_v2p.data import read_aguvis

    sources = data.sources or tuple(SourceConfig(path=p, images=data.images) for p in data.paths)
    rng = random.Random(data.seed)
    skipped: Counter = Counter()
    out = []
    for source in sources:
        if not source.path:
            raise ValueError("a data.sources entry has no path: give its AGUVIS JSON file")
        found = read_aguvis(Path(source.path), images=source.images, skipped=skipped, whole=True)
        whole, part = divmod(source.weight, 1.0)
        out += found * int(whole) + rng.sample(found, round(part * len(found)))
    return out, skipped


def _train(cfg: TrainConfig, run: Run) -> RunResult:
    from aworld_rl_core.registry import get_trainer

    job = training_job(cfg, run)
    result = get_trainer(job.trainer.backend)().train(job)
    metrics = {**result.metrics, "samples": float(len(job.train_rows))}
    return RunResult(
        metrics=metrics, outputs=dict(result.outputs), checkpoints=list(result.checkpoints)
    )
