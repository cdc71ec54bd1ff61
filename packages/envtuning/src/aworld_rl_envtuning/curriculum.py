"""EnvTuning's four-stage curriculum: stage settings, the transition rule and a resumable state.

| stage | data | reward | augmentation | prompt | max response |
|---|---|---|---|---|---|
| 1 syntax | easy subset of the base training entries | format (stage-1) | on | basic | 10,000 |
| 2 hints | base training entries | progress | on | basic | 10,000 |
| 3 hard | all four training splits | progress | on | resourceful | 24,576 |
| 4 independent | all four training splits | progress | off | resourceful | 24,576 |

A stage is trained in rounds of ``rounds_steps`` optimizer steps, each from the previous
round's (or stage's) checkpoint, with a validation after every round. It ends after ``epochs``
passes over its data (``rule="fixed"``) or earlier when validation accuracy has plateaued and
the gradient norm is stable (``rule="plateau"``, the paper's Remark 3.1 made automatic).
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from aworld_rl_core.config import option
from aworld_rl_envtuning.rewards import REWARD_NAMES

StageData = Literal["easy", "base", "all"]
STATE_FILE = "curriculum_state.json"


@dataclass(frozen=True, kw_only=True)
class StageConfig:
    """One curriculum stage."""

    name: str = option(help="stage name (used for its run folder)")
    data: StageData = option("all", help="training entries: easy (subset of base), base, all")
    reward: str = option("progress", help=f"episode reward: {', '.join(REWARD_NAMES)}")
    augmentation: bool = option(True, help="hints on failed tool results")
    prompt_style: Literal["basic", "resourceful"] = option(
        "basic", help="system prompt: basic (stages 1-2) or resourceful (3-4)"
    )
    max_response_tokens: int = option(
        10_000, help="max tokens of one episode's multi-turn response"
    )
    batch_size: int = option(32, help="prompts per optimizer step")
    rounds_steps: int = option(
        10, help="optimizer steps per round (a validation follows each round)"
    )
    epochs: float = option(20.0, help="passes over the stage's data before it ends in any case")

    def __post_init__(self) -> None:
        if self.data not in ("easy", "base", "all"):
            raise ValueError(f"stage {self.name}: data must be easy, base or all, not {self.data}")
        if self.reward not in REWARD_NAMES:
            raise ValueError(
                f"stage {self.name}: reward {self.reward!r} is not one of {', '.join(REWARD_NAMES)}"
            )
        for key in ("max_response_tokens", "batch_size", "rounds_steps"):
            if getattr(self, key) < 1:
                raise ValueError(f"stage {self.name}: {key} must be >= 1")
        if self.epochs <= 0:
            raise ValueError(f"stage {self.name}: epochs must be > 0")

    def total_steps(self, n_rows: int) -> int:
        """Optimizer steps of ``epochs`` passes over ``n_rows`` prompts."""
        return max(1, math.ceil(self.epochs * n_rows / self.batch_size))

    def max_rounds(self, n_rows: int) -> int:
        return math.ceil(self.total_steps(n_rows) / self.rounds_steps)


def paper_stages() -> tuple[StageConfig, ...]:
    """The paper's four stages (batch 16 then 32; 10,000 then 24,576 response tokens)."""
    return (
        StageConfig(name="syntax", data="easy", reward="format", batch_size=16),
        StageConfig(name="hints", data="base", reward="progress"),
        StageConfig(
            name="hard", data="all", prompt_style="resourceful", max_response_tokens=24_576
        ),
        StageConfig(
            name="independent",
            data="all",
            augmentation=False,
            prompt_style="resourceful",
            max_response_tokens=24_576,
        ),
    )


@dataclass(frozen=True, kw_only=True)
class TransitionConfig:
    """When a stage ends."""

    rule: Literal["fixed", "plateau"] = option(
        "plateau", help="fixed: every stage runs max_rounds; plateau: stop on a plateau"
    )
    patience: int = option(3, help="plateau: rounds without a min_delta gain in val accuracy")
    min_delta: float = option(0.01, help="plateau: smallest gain that counts")
    grad_window: int = option(3, help="plateau: recent rounds whose gradient norms must be stable")
    max_grad_cv: float = option(
        0.5, help="plateau: largest coefficient of variation of those gradient norms"
    )

    def __post_init__(self) -> None:
        if self.rule not in ("fixed", "plateau"):
            raise ValueError(f"transition rule must be fixed or plateau, not {self.rule!r}")
        if self.patience < 1 or self.grad_window < 1:
            raise ValueError("patience and grad_window must be >= 1")


def accuracy_plateaued(accuracies: Sequence[float], patience: int, min_delta: float) -> bool:
    """No gain of ``min_delta`` over the best earlier accuracy in the last ``patience`` rounds."""
    if len(accuracies) <= patience:
        return False
    best_before = max(accuracies[:-patience])
    return max(accuracies[-patience:]) < best_before + min_delta


def grad_norm_stable(grad_norms: Sequence[float], window: int, max_cv: float) -> bool:
    """The last ``window`` gradient norms are finite and vary by at most ``max_cv`` (std/mean)."""
    recent = list(grad_norms[-window:])
    if len(recent) < window or not all(math.isfinite(g) for g in recent):
        return False
    mean = statistics.fmean(recent)
    if mean == 0.0:
        return True
    spread = statistics.pstdev(recent) if len(recent) > 1 else 0.0
    return spread / abs(mean) <= max_cv


def stage_finished(
    rounds: Sequence[dict[str, float]], max_rounds: int, rule: TransitionConfig
) -> bool:
    """Whether the stage ends after ``rounds`` (each with ``val_accuracy`` and ``grad_norm``)."""
    if len(rounds) >= max_rounds:
        return True
    if rule.rule == "fixed":
        return False
    accuracies = [r["val_accuracy"] for r in rounds]
    norms = [r.get("grad_norm", math.nan) for r in rounds]
    return accuracy_plateaued(accuracies, rule.patience, rule.min_delta) and grad_norm_stable(
        norms, rule.grad_window, rule.max_grad_cv
    )


@dataclass
class CurriculumState:
    """Progress through the curriculum, saved after every round (``curriculum_state.json``).

    ``model`` is the checkpoint the next round starts from; ``rounds[stage_name]`` lists the
    finished rounds' validation results; ``finished`` the stages that ended.
    """

    model: str
    stage: int = 0
    rounds: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    finished: list[str] = field(default_factory=list)

    def save(self, directory: Path) -> Path:
        path = Path(directory) / STATE_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=1), encoding="utf-8")
        tmp.replace(path)  # atomic: a kill leaves the old or the new state, never half of one
        return path

    @classmethod
    def load(cls, directory: Path) -> CurriculumState | None:
        path = Path(directory) / STATE_FILE
        if not path.is_file():
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
        return cls(**data)

    def record_round(self, stage: StageConfig, result: dict[str, Any], model: str) -> None:
        self.rounds.setdefault(stage.name, []).append(result)
        self.model = model

    def finish_stage(self, stage: StageConfig) -> None:
        self.finished.append(stage.name)
        self.stage += 1
