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
from typing import Literal

from aworld_rl_core.backends.config import ModelConfig, SFTConfig, TrainerConfig
from aworld_rl_core.config import option
from aworld_rl_core.runs import Run, RunResult


@dataclass(frozen=True, kw_only=True)
class TrainDataConfig:
    """Training data: GUI-Actor/AGUVIS JSON (v2p.generate writes it too)."""

    paths: tuple[str, ...] = option(("data/data.json",), help="AGUVIS JSON files")
    images: str | None = option(None, help="image folder (default: beside each JSON file)")
    max_pixels: int = option(5_720_064, help="smart-resize pixel cap of the training images")
    min_pixels: int = option(3136, help="smart-resize pixel floor")


@dataclass(frozen=True, kw_only=True)
class PointerLossConfig:
    """``v2p.pointer``: labels, suppression and the loss weights."""

    label_style: Literal["all", "center", "gauss"] = option("gauss", help="patch labels")
    sigma_factor: float = option(
        1.0, help="sigma = box size / f (1: released scripts; 4.1325: ~2 sigma)", gt=0
    )
    suppression: bool = option(True, help="add the out-of-box attention mass (V2P)")
    suppression_region: Literal["box", "label"] = option(
        "box", help="suppress outside the box, or outside the label's support (released code)"
    )
    lm_weight: float = option(1.0, help="LM loss weight (<= 0: not computed)")
    pointer_weight: float = option(1.0, help="pointer loss weight")


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
    loss: PointerLossConfig = option(factory=PointerLossConfig, help="the pointer loss")
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
    from aworld_rl_v2p.training import KNOWN_SHAPES, ModelShape

    name = cfg.model.name_or_path
    if name in KNOWN_SHAPES:
        return KNOWN_SHAPES[name]
    from aworld_rl_v2p.loading import load_v2p

    model, _, _ = load_v2p(name)
    text = model.config.text_config
    params = sum(p.numel() for p in model.parameters()) - 8 * text.hidden_size**2
    tied = bool(getattr(model.config, "tie_word_embeddings", False))
    return ModelShape(
        float(params), text.hidden_size, text.num_hidden_layers, text.vocab_size, tied
    )


def run(cfg: TrainConfig, run: Run) -> RunResult:
    from aworld_rl_v2p.training import memory_per_gpu

    gpus = cfg.launch.nodes * cfg.launch.gpus_per_node
    if cfg.trainer.batch_size % (cfg.trainer.micro_batch_size * gpus):
        raise ValueError(
            f"trainer.batch_size={cfg.trainer.batch_size} must be a multiple of micro_batch_size x "
            f"GPUs = {cfg.trainer.micro_batch_size} x {gpus}"
        )
    if not cfg.launch.dry_run:
        _train(cfg, run)
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


def _train(cfg: TrainConfig, run: Run) -> None:
    from aworld_rl_core.backends.base import TrainJob

    if "model_factory" not in {f.name for f in dataclasses.fields(TrainJob)}:
        raise RuntimeError(
            "training V2P needs core's vision seam (hf-sft model_factory, model-level loss, "
            "gradient mask: CONTRACT.md section 7), which this aworld-rl-core does not have yet; "
            "launch.dry_run=true prints the launch and the memory estimate"
        )
    raise RuntimeError("core's vision seam changed: update aworld_rl_v2p.recipes.train")
