"""EnvTuning's rewards over an episode's statistics (pure Python).

An episode is recorded as :class:`EpisodeStats`: one :class:`StepKind` per model response and
the 0/1 score of every user turn that ended. The rewards:

- stage 1: ``R = I_tool * (R_format + R_tool)`` with ``R_format = (N - format errors) / N`` and
  ``R_tool = successful tool steps / tool steps`` (0 without tool steps), ``I_tool = 1`` when
  the episode made at least one executed tool step;
- progress ``R_P`` = mean turn score, over the entry's expected turns (default: turns never
  reached score 0) or over the turns reached (``denominator="reached"``, the released code);
- binary: 1 when every expected turn scored 1;
- accuracy: BFCL's verdict on the whole episode (1 when valid; the environment judges the
  finished episode), what validation measures;
- direct GRPO mix: ``0.9 * R_P + 0.1 * R_format``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Literal

Denominator = Literal["expected", "reached"]
FormatDenominator = Literal["steps", "entries"]
RewardName = Literal["format", "progress", "binary", "mixed", "accuracy"]
REWARD_NAMES: tuple[str, ...] = ("format", "progress", "binary", "mixed", "accuracy")


class StepKind(str, Enum):
    """What one model response did (the released code's per-step reward codes in brackets)."""

    FORMAT_ERROR = "format_error"  # (-3) the response broke the protocol
    TOOL_OK = "tool_ok"  # (-1) every call ran and returned cleanly
    TOOL_ERROR = "tool_error"  # (-2) at least one call failed
    ANSWER = "answer"  # ended the user turn with <answer>
    BLOCKED_CALL = "blocked_call"  # called tools in a turn that must abstain (not executed)


@dataclass
class EpisodeStats:
    """What happened in one episode, enough for every EnvTuning reward.

    ``turn_scores`` holds the score of each user turn that ended (in order); ``expected_turns``
    is the number of user turns of the entry; ``forced_turn_ends`` counts turns closed by the
    step cap (the released code emits a turn-end reward entry for those too); ``valid`` is
    BFCL's verdict once a judged episode has ended (None before).
    """

    expected_turns: int
    steps: list[StepKind] = field(default_factory=list)
    turn_scores: list[float] = field(default_factory=list)
    forced_turn_ends: int = 0
    valid: bool | None = None

    def __post_init__(self) -> None:
        if self.expected_turns < 1:
            raise ValueError(f"an episode has at least one user turn, got {self.expected_turns}")

    def count(self, kind: StepKind) -> int:
        return sum(step is kind for step in self.steps)

    @property
    def format_errors(self) -> int:
        return self.count(StepKind.FORMAT_ERROR)

    @property
    def tool_steps(self) -> int:
        return self.count(StepKind.TOOL_OK) + self.count(StepKind.TOOL_ERROR)


@dataclass(frozen=True, kw_only=True)
class RewardSpec:
    """Which reward and how to read the paper's ambiguities.

    ``denominator``: progress over the expected turns (paper) or the turns reached (released
    code). ``format_denominator``: N of ``R_format`` is the number of model responses
    (``steps``, the paper's "turns") or of reward entries, i.e. responses plus turns closed by
    the step cap (``entries``, the released code). ``mix_progress`` weighs ``R_P`` in the mixed
    reward (``R_format`` gets the rest).
    """

    name: RewardName = "progress"
    denominator: Denominator = "expected"
    format_denominator: FormatDenominator = "steps"
    mix_progress: float = 0.9

    def __post_init__(self) -> None:
        if self.name not in REWARD_NAMES:
            raise ValueError(f"unknown reward {self.name!r}; use one of {', '.join(REWARD_NAMES)}")
        if self.denominator not in ("expected", "reached"):
            raise ValueError(
                f"denominator must be 'expected' or 'reached', not {self.denominator!r}"
            )
        if self.format_denominator not in ("steps", "entries"):
            raise ValueError(
                f"format_denominator must be 'steps' or 'entries', not {self.format_denominator!r}"
            )
        if not 0.0 <= self.mix_progress <= 1.0:
            raise ValueError(f"mix_progress must be in [0, 1], got {self.mix_progress}")

    def __call__(self, stats: EpisodeStats) -> float:
        return compute_reward(stats, self)


def format_score(stats: EpisodeStats, denominator: FormatDenominator = "steps") -> float:
    """``R_format = (N - format errors) / N``; 0 for an episode without a response."""
    n = len(stats.steps)
    if denominator == "entries":
        n += stats.forced_turn_ends
    return (n - stats.format_errors) / n if n else 0.0


def tool_score(stats: EpisodeStats) -> float:
    """``R_tool`` = successful tool steps / tool steps; 0 without tool steps."""
    total = stats.tool_steps
    return stats.count(StepKind.TOOL_OK) / total if total else 0.0


def stage1_reward(stats: EpisodeStats, denominator: FormatDenominator = "steps") -> float:
    """``I_tool * (R_format + R_tool)``, in [0, 2]."""
    if stats.tool_steps == 0:
        return 0.0
    return format_score(stats, denominator) + tool_score(stats)


def progress_reward(stats: EpisodeStats, denominator: Denominator = "expected") -> float:
    """Mean turn score over the expected turns (or, ``"reached"``, over the turns that ended)."""
    if denominator == "reached":
        n = len(stats.turn_scores)
        return sum(stats.turn_scores) / n if n else 0.0
    return sum(stats.turn_scores) / stats.expected_turns


def binary_reward(stats: EpisodeStats) -> float:
    """1.0 when every expected turn ended with score 1, else 0.0."""
    done = len(stats.turn_scores) >= stats.expected_turns
    return float(done and all(score == 1.0 for score in stats.turn_scores))


def mixed_reward(
    stats: EpisodeStats,
    *,
    mix_progress: float = 0.9,
    denominator: Denominator = "expected",
    format_denominator: FormatDenominator = "steps",
) -> float:
    """The direct-GRPO baseline: ``0.9 * R_P + 0.1 * R_format`` (weights configurable)."""
    return mix_progress * progress_reward(stats, denominator) + (1.0 - mix_progress) * (
        format_score(stats, format_denominator)
    )


def compute_reward(stats: EpisodeStats, spec: RewardSpec) -> float:
    """The reward ``spec`` names, for ``stats``."""
    rewards: dict[str, Callable[[], float]] = {
        "format": lambda: stage1_reward(stats, spec.format_denominator),
        "progress": lambda: progress_reward(stats, spec.denominator),
        "binary": lambda: binary_reward(stats),
        "accuracy": lambda: float(bool(stats.valid)),
        "mixed": lambda: mixed_reward(
            stats,
            mix_progress=spec.mix_progress,
            denominator=spec.denominator,
            format_denominator=spec.format_denominator,
        ),
    }
    return rewards[spec.name]()
