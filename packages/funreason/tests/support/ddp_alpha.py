"""Run under ``torchrun --nproc-per-node 2``: SRML with a learnable alpha through ``hf-sft`` on
2 gloo ranks (each rank its own samples); every rank appends its alpha after each step to
``<dir>/rank<r>.jsonl``. Arguments: the run directory, and ``no-reduce`` to switch off core's
reduction of the loss's gradients (the control: the ranks then drift apart). Used by
``test_alpha_ddp.py``."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from aworld_rl_core.backends.base import TrainJob
from aworld_rl_core.backends.hf_sft import HfSftBackend
from aworld_rl_core.models.config import ModelConfig
from aworld_rl_core.trainer_config import SFTConfig, TrainerConfig
from aworld_rl_funreason.data import read_samples
from aworld_rl_funreason.loss import SRMLLoss
from aworld_rl_funreason.paths import resolve_path
from aworld_rl_funreason.recipes.sft import SftDataConfig, sft_rows

ALPHA_LR = 0.05


class RankRun:
    """A run double: one shared run directory, metrics to one file per rank."""

    def __init__(self, directory: Path, rank: int) -> None:
        self.dir, self.rank, self.resume, self.quiet = directory, rank, False, True
        self.checkpoint_dir = directory / "checkpoints"
        self.checkpoint_dir.mkdir(parents=True, exist_ok=True)

    def progress(self, iterable, total=None, desc=""):
        return iter(iterable)

    def log(self, metrics: dict, step: int | None = None) -> None:
        with open(self.dir / f"rank{self.rank}.jsonl", "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"step": step, **metrics}) + "\n")


def main(directory: str, reduce: bool = True) -> None:
    if not reduce:
        from aworld_rl_core.backends import loss_hooks

        loss_hooks.reduce_loss_gradients = lambda loss: None
    rank = int(os.environ["RANK"])
    samples = read_samples(resolve_path("aworld_rl_funreason:sample_data/fcdr_tiny.jsonl"), 4)
    rows, _ = sft_rows(samples, SftDataConfig())
    loss = SRMLLoss(0.7, learnable=True, alpha_lr=ALPHA_LR)
    trainer = TrainerConfig(
        backend="hf-sft",
        learning_rate=1e-4,
        max_steps=2,
        batch_size=2,  # one sample per rank and step
        micro_batch_size=1,
        save_steps=2,
        logging_steps=1,
        sft=SFTConfig(max_length=512),
    )
    job = TrainJob(
        model=ModelConfig(name_or_path="tiny:qwen3", dtype="float32"),
        trainer=trainer,
        run=RankRun(Path(directory), rank),  # type: ignore[arg-type]
        train_rows=rows,
        loss=loss,
    )
    HfSftBackend().train(job)


if __name__ == "__main__":
    main(sys.argv[1], reduce="no-reduce" not in sys.argv[2:])
