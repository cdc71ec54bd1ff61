"""The ``mypaper.score`` recipe: a config dataclass and ``run(cfg, run)``."""

from __future__ import annotations

from dataclasses import dataclass, field

from aworld_rl_core.runs import Run, RunResult
from aworld_rl_mypaper.reward import exact_match


@dataclass(frozen=True, kw_only=True)
class ScoreConfig:
    completions: tuple[str, ...] = field(default=(), metadata={"help": "model answers"})
    answers: tuple[str, ...] = field(default=(), metadata={"help": "reference answers"})


def run(cfg: ScoreConfig, run: Run) -> RunResult:
    completions = [[{"role": "assistant", "content": text}] for text in cfg.completions]
    scores = exact_match(completions, list(cfg.answers))
    for step, score in enumerate(run.progress(scores, desc="scoring")):
        run.log({"reward": score}, step=step)
    accuracy = sum(scores) / len(scores) if scores else 0.0
    return RunResult(metrics={"accuracy": accuracy})
