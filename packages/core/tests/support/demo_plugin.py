"""A plugin registered by the tests themselves: a counting recipe with two presets."""

from __future__ import annotations

import logging
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from aworld_rl_core import hookimpl
from aworld_rl_core.runs import Run, RunResult


@dataclass(frozen=True, kw_only=True)
class Optim:
    lr: float = field(default=1e-6, metadata={"help": "learning rate"})
    schedule: Literal["cosine", "constant"] = field(default="cosine", metadata={"help": "shape"})


@dataclass(frozen=True, kw_only=True)
class CountConfig:
    steps: int = field(default=3, metadata={"help": "how many steps"})
    name: str = field(default="demo", metadata={"help": "a label"})
    tags: tuple[str, ...] = field(default=(), metadata={"help": "free tags"})
    limit: int | None = field(default=None, metadata={"help": "optional cap"})
    interrupt_at: int = field(
        default=-1, metadata={"help": "raise KeyboardInterrupt at this step (not on resume)"}
    )
    sleep_at: int = field(default=-1, metadata={"help": "sleep a minute at this step"})
    noisy: bool = field(
        default=False, metadata={"help": "warn and log as libraries do (transformers, warnings)"}
    )
    optim: Optim = field(default_factory=Optim, metadata={"help": "optimiser"})


def _make_noise() -> None:
    from transformers.utils import logging as hf_logging

    warnings.warn("this API is deprecated (demo)", FutureWarning, stacklevel=2)
    logging.getLogger("demo.lib").warning("a library logs a warning (demo)")
    hf_logging.get_logger("transformers.demo").warning("transformers logs a warning (demo)")
    for _ in hf_logging.tqdm(range(3), desc="Loading weights (demo)"):
        pass


def run(cfg: CountConfig, run: Run) -> RunResult:
    if cfg.noisy:
        _make_noise()
    total = 0
    for step in run.progress(range(cfg.steps), desc="counting"):
        if step == cfg.interrupt_at and not run.resume:
            raise KeyboardInterrupt
        if step == cfg.sleep_at:
            (run.dir / "sleeping").write_text("")
            time.sleep(60)
        total += step
        run.log({"total": total, "lr": cfg.optim.lr}, step=step)
    run.add_section("Summary", f"counted to {total}")
    return RunResult(
        metrics={"total": total, "pass_rate": 1051 / 1053},
        outputs={"metrics": run.dir / "metrics.jsonl"},
    )


class DemoPlugin:
    @hookimpl
    def register_recipes(self, register):
        register(
            "demo.count",
            config=CountConfig,
            run=run,
            presets=str(Path(__file__).parent / "demo_presets"),
            help="count to steps",
        )

    @hookimpl
    def register_rewards(self, register):
        register("demo.length", "tests_demo_reward:length", help="not importable on purpose")
