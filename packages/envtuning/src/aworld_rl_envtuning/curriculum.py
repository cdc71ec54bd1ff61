"""EnvTuning's four-stage curriculum: stage settings, the transition rule, a resumable state.

| stage | data | reward | feedback | prompt | max response |
|---|---|---|---|---|---|
| 1 syntax | easy subset of the base training entries | stage-1 | BFCL's errors | basic | 10,000 |
| 2 hints | base training entries | progress | hints | basic | 10,000 |
| 3 hard | all four training splits | progress | hints | resourceful | 24,576 |
| 4 independent | all four training splits | progress | BFCL's errors | resourceful | 24,576 |

A stage is one training run from the previous stage's final model: the KL reference is that
starting policy for the whole stage and the optimizer state carries on. The run validates itself
every ``validation.every`` steps and ends after ``epochs`` passes over its data
(``rule="fixed"``) or earlier, when validation accuracy has plateaued and the gradient norm is
stable (``rule="plateau"``: the paper's Remark 3.1 made automatic, applied inside the run by
:func:`plateau`). The paper's settings live in ``paper.yaml``.
"""

from __future__ import annotations

import functools
import json
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from aworld_rl_core.atomic import write_atomic
from aworld_rl_core.config import option
from aworld_rl_envtuning.rewards import REWARD_NAMES

StageData = Literal["easy", "base", "all"]
STATE_FILE = "curriculum_state.json"
PLATEAU_RULE = "aworld_rl_envtuning.curriculum:plateau"


@functools.lru_cache(maxsize=1)
def paper_settings() -> dict[str, Any]:
    """The paper's table (``paper.yaml``): trainer, validation and stage settings."""
    import yaml

    text = (resources.files("aworld_rl_envtuning") / "paper.yaml").read_text("utf-8")
    return yaml.safe_load(text)


@dataclass(frozen=True, kw_only=True)
class StageConfig:
    """One curriculum stage."""

    name: str = option(help="stage name (used for its run folder)")
    data: StageData = option("all", help="training entries: easy (subset of base), base, all")
    reward: str = option("progress", help=f"episode reward: {', '.join(REWARD_NAMES)}")
    augmentation: bool = option(True, help="hints on failed tool results (else BFCL's errors)")
    prompt_style: Literal["basic", "resourceful"] = option(
        "basic", help="system prompt: basic (stages 1-2) or resourceful (3-4)"
    )
    max_response_tokens: int = option(
        10_000, help="max tokens of one episode's multi-turn response", ge=1
    )
    batch_size: int = option(32, help="prompts per optimizer step", ge=1)
    epochs: float = option(20.0, help="passes over the stage's data before it ends anyway", gt=0)

    def __post_init__(self) -> None:
        if self.data not in ("easy", "base", "all"):
            raise ValueError(f"stage {self.name}: data must be easy, base or all, not {self.data}")
        if self.reward not in REWARD_NAMES:
            raise ValueError(
                f"stage {self.name}: reward {self.reward!r} is not one of {', '.join(REWARD_NAMES)}"
            )

    @property
    def feedback(self) -> str:
        """What failed tool calls show the model in this stage."""
        return "hints" if self.augmentation else "BFCL's errors"

    def total_steps(self, n_rows: int) -> int:
        """Optimizer steps of ``epochs`` passes over ``n_rows`` prompts as the engines count
        them: full batches only (verl's loader drops the last partial batch), so 75 prompts at
        batch 16 give 4 steps per epoch, 80 in 20 epochs (core's ``batching.epoch_steps``)."""
        from aworld_rl_core.backends.batching import epoch_steps

        return max(1, epoch_steps(n_rows, self.batch_size, self.epochs))


def paper_stages() -> tuple[StageConfig, ...]:
    """The paper's four stages (``paper.yaml``)."""
    return tuple(StageConfig(**s) for s in paper_settings()["stages"])


@dataclass(frozen=True, kw_only=True)
class TransitionConfig:
    """When a stage ends."""

    rule: Literal["fixed", "plateau"] = option(
        "plateau", help="fixed: every stage runs its epochs; plateau: stop on a plateau"
    )
    patience: int = option(
        30, help="plateau: validations without a min_delta gain in accuracy", ge=1
    )
    min_delta: float = option(0.01, help="plateau: smallest gain that counts", ge=0)
    grad_window: int = option(
        10, help="plateau: recent validations whose gradient norms must be stable", ge=1
    )
    max_grad_cv: float = option(
        0.5, help="plateau: largest coefficient of variation of those gradient norms", ge=0
    )

    def stop_rule(self) -> Any:
        """The in-run stop rule (a reference to :func:`plateau`), or None for ``fixed``."""
        from aworld_rl_core.refs import Ref

        if self.rule == "fixed":
            return None
        options = asdict(self)
        options.pop("rule")
        return Ref(PLATEAU_RULE, kwargs=options)


def accuracy_plateaued(accuracies: Sequence[float], patience: int, min_delta: float) -> bool:
    """No gain of ``min_delta`` over the best earlier accuracy in the last ``patience`` values."""
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


def plateau(
    history: Sequence[Mapping[str, float]],
    *,
    patience: int,
    min_delta: float,
    grad_window: int,
    max_grad_cv: float,
    metric: str = "val/reward",
) -> bool:
    """The in-run stop rule: validation accuracy (``metric``: the validation episodes'
    reward, BFCL's verdict) has plateaued and the gradient norm is stable."""
    accuracies = [float(h.get(metric, math.nan)) for h in history]
    norms = [float(h.get("grad_norm", math.nan)) for h in history]
    return accuracy_plateaued(accuracies, patience, min_delta) and grad_norm_stable(
        norms, grad_window, max_grad_cv
    )


@dataclass
class CurriculumState:
    """Progress through the curriculum (``curriculum_state.json``), saved at each stage's start
    and end: ``model`` is where the next stage starts; ``stages[name]`` holds the stage's
    ``start`` model (its KL reference, also after a resume), ``feedback``, and once it ended
    ``end``, ``steps``, ``validations`` and ``stopped_early``; ``finished`` lists ended stages."""

    model: str
    stages: dict[str, dict[str, Any]] = field(default_factory=dict)
    finished: list[str] = field(default_factory=list)

    def save(self, directory: Path) -> Path:
        path = Path(directory) / STATE_FILE
        write_atomic(path, json.dumps(asdict(self), indent=1))  # the old or the new state
        return path

    @classmethod
    def load(cls, directory: Path) -> CurriculumState | None:
        path = Path(directory) / STATE_FILE
        if not path.is_file():
            return None
        return cls(**json.loads(path.read_text(encoding="utf-8")))

    def begin(self, stage: StageConfig) -> dict[str, Any]:
        """The stage's record; a stage begun before (a resumed run) keeps its start model."""
        return self.stages.setdefault(stage.name, {"start": self.model, "feedback": stage.feedback})

    def finish(self, stage: StageConfig, end: str, **result: Any) -> None:
        self.stages[stage.name].update(end=end, **result)
        self.finished.append(stage.name)
        self.model = end
