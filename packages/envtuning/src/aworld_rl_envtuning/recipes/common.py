"""Config pieces the EnvTuning recipes share, and how they become environments and data."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from aworld_rl_core.config import option
from aworld_rl_envtuning.data import CATEGORIES, SplitConfig


@dataclass(frozen=True, kw_only=True)
class EnvConfig:
    """The environment, shared by every stage (stages switch augmentation, reward and prompt)."""

    max_steps_per_turn: int = option(
        5, help="model steps per user turn before it is force-advanced"
    )
    hint_packs: tuple[str, ...] = option(
        ("default",), help="hint packs (shipped names or .yaml/.json paths); later ones win"
    )
    error_dicts_fail: bool = option(
        True, help="count {'error': ...} results as failed calls (false: released code)"
    )
    denominator: Literal["expected", "reached"] = option(
        "expected", help="progress over the entry's expected turns, or over turns reached"
    )
    format_denominator: Literal["steps", "entries"] = option(
        "steps", help="R_format's N: model responses, or reward entries (released code)"
    )
    mix_progress: float = option(
        0.9, help="weight of R_P in the mixed reward (R_format gets the rest)"
    )
    tool_docs: Literal["json", "compact"] = option(
        "json", help="tool list in the system prompt: BFCL JSON or one line each"
    )
    think_tag: str = option("think", help="reasoning tag name")

    def options(
        self, *, reward: str, augmentation: bool, prompt_style: str, max_steps: int | None = None
    ) -> dict[str, Any]:
        """JSON options of the ``envtuning.bfcl`` environment for one stage."""
        return {
            "augmentation": augmentation,
            "max_steps_per_turn": max_steps or self.max_steps_per_turn,
            "hint_packs": list(self.hint_packs),
            "reward": {
                "name": reward,
                "denominator": self.denominator,
                "format_denominator": self.format_denominator,
                "mix_progress": self.mix_progress,
            },
            "error_dicts_fail": self.error_dicts_fail,
            "prompt_style": prompt_style,
            "tool_docs": self.tool_docs,
            "think_tag": self.think_tag,
        }

    def factory(self, **stage: Any) -> Any:
        """The stage's environment by registered name: ``Ref("envtuning.bfcl", options)``."""
        from aworld_rl_core.refs import Ref

        return Ref.named("envtuning.bfcl", self.options(**stage))


@dataclass(frozen=True, kw_only=True)
class DataConfig(SplitConfig):
    """Which BFCL entries train and validate (the split is written to the run directory)."""

    easy_size: int = option(75, help="stage 1: base training entries with the fewest GT calls")
    max_train_entries: int = option(
        0, help="cap on each stage's training entries (0 = no cap; CPU runs)"
    )


@dataclass(frozen=True, kw_only=True)
class ValidationConfig:
    """The validation after every training round (BFCL accuracy, augmentation off)."""

    entries_per_category: int = option(
        25, help="validation entries per category (paper: 100 in all)"
    )
    max_steps_per_turn: int = option(20, help="model steps per user turn (BFCL uses 20)")
    max_tokens: int = option(4096, help="max new tokens per model response")
    temperature: float = option(0.0, help="sampling temperature (0: greedy)")
    max_batch_size: int = option(8, help="local model: responses per batch")
    concurrency: int = option(8, help="episodes in flight")
    device: str = option("cpu", help="local model: torch device")


def check_categories(categories: tuple[str, ...]) -> tuple[str, ...]:
    unknown = [c for c in categories if c not in CATEGORIES]
    if unknown:
        raise ValueError(f"unknown categories {unknown}: use some of {', '.join(CATEGORIES)}")
    return categories or CATEGORIES
