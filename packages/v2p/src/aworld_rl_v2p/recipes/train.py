"""Recipe ``v2p.train``: V2P's two stages through core's hf-sft backend.

Stage ``warmup`` trains the action head and the new token rows (pointer loss only); stage
``main`` trains everything (LM + pointer loss). The multi-GPU launch is hf-sft's own
(``trainer.hf-sft.nproc_per_node`` / ``nnodes``: torchrun; ``zero_stage: 3``: DeepSpeed ZeRO-3;
``trainer.sft.gradient_checkpointing``), and ``aworld-run v2p.train --dry-run`` prints its plan
(the torchrun command, steps, per-GPU memory) like any recipe's.
"""

from __future__ import annotations

import dataclasses
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

    __moved_keys__ = {
        "loss": "the pointer loss's options are trainer.loss_options.<key> (one place for every "
        "recipe's loss options), e.g. trainer.loss_options.lm_weight=1"
    }

    model: ModelConfig = option(
        factory=lambda: ModelConfig(name_or_path="Qwen/Qwen2.5-VL-7B-Instruct", dtype="bfloat16"),
        help="the base model (warm-up) or the warm-up checkpoint (main)",
    )
    stage: Literal["warmup", "main"] = option("warmup", help="warmup: head + new rows; main: all")
    data: TrainDataConfig = option(factory=TrainDataConfig, help="training data")
    trainer: TrainerConfig = option(
        factory=_trainer,
        help="optimisation and launch (hf-sft backend; trainer.loss_options: v2p.pointer's "
        "label_style, sigma_factor, suppression, suppression_region, lm_weight, pointer_weight; "
        "trainer.hf-sft.nproc_per_node / nnodes / zero_stage for several GPUs)",
    )


def run(cfg: TrainConfig, run: Run) -> RunResult:
    from aworld_rl_core.backends.hf_sft_launch import hf_sft_section

    check(cfg, hf_sft_section(cfg.trainer).world_size)
    return _train(cfg, run)


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
    if t.loss != LOSS:
        raise ConfigError(f"v2p.train trains {LOSS}, not trainer.loss={t.loss!r}")
    loss_options(cfg)  # typed: a wrong key or value names trainer.loss_options.<key>
    if cfg.stage == "warmup" and t.weight_decay > 0:
        raise ConfigError(
            f"stage=warmup with trainer.weight_decay={t.weight_decay}: AdamW's decay would move "
            "the frozen embedding rows the gradient mask keeps fixed; use trainer.weight_decay=0"
        )


def training_job(cfg: TrainConfig, run: Run):
    """core's hf-sft job: V2P records, this package's model factory and stage setup, and
    ``v2p.pointer`` with ``trainer.loss_options`` (typed, lm_weight set by stage)."""
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
    t = cfg.trainer
    return TrainJob(
        model=cfg.model,
        trainer=dataclasses.replace(t, loss_options=dataclasses.asdict(loss)),
        run=run,
        train_rows=rows,
        model_factory=Ref("aworld_rl_v2p.training:model_factory", kwargs=pixels),
        model_setup=Ref("aworld_rl_v2p.training:warmup_trainable", kwargs={"stage": cfg.stage}),
    )


def loss_options(cfg: TrainConfig) -> PointerLossOptions:
    """``trainer.loss_options`` as the pointer loss's typed options (an unknown key or a wrong
    type is a ConfigError naming ``trainer.loss_options.<key>``)."""
    from aworld_rl_core.config import from_dict

    return from_dict(PointerLossOptions, cfg.trainer.loss_options, prefix="trainer.loss_options.")


def stage_loss(cfg: TrainConfig) -> PointerLossOptions:
    """The loss options with ``lm_weight`` set by stage where it is not given: none in the
    warm-up (the paper trains the head on the pointer loss only), 1.0 in the main stage."""
    loss = loss_options(cfg)
    if loss.lm_weight is not None:
        return loss
    return dataclasses.replace(loss, lm_weight=-1.0 if cfg.stage == "warmup" else 1.0)


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
        found = read_aguvis(
            packaged(source.path), images=source.images, skipped=skipped, whole=True
        )
        whole, part = divmod(source.weight, 1.0)
        out += found * int(whole) + rng.sample(found, round(part * len(found)))
    return out, skipped


def packaged(path: str) -> Path:
    """``path``, or for ``package:rel/path`` the file shipped inside that installed package
    (``aworld_rl_v2p:sample_data/data.json``: four rendered pages, eight targets)."""
    import importlib.util
    from importlib import resources

    package, sep, rel = path.partition(":")
    if sep and not Path(path).exists() and package.isidentifier():
        if importlib.util.find_spec(package) is None:
            raise FileNotFoundError(f"data path '{path}': no installed package '{package}'")
        return Path(str(resources.files(package).joinpath(rel)))
    return Path(path)


def _train(cfg: TrainConfig, run: Run) -> RunResult:
    from aworld_rl_core.registry import get_trainer

    job = training_job(cfg, run)
    result = get_trainer(job.trainer.backend)().train(job)
    metrics = {**result.metrics, "samples": float(len(job.train_rows))}
    return RunResult(
        metrics=metrics, outputs=dict(result.outputs), checkpoints=list(result.checkpoints)
    )
