"""Config pieces the EnvTuning recipes share, and how they become environments and data."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from aworld_rl_core.config import limit_option, option
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
    abstain_credit: Literal["clean", "no_call"] = option(
        "clean",
        help="turns that must abstain: clean = only a well-formed reply without calls earns "
        "them; no_call = any turn without a call (BFCL's checker, the earlier reading)",
    )

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
            "abstain_credit": self.abstain_credit,
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
    balance_categories: bool = option(
        False,
        help="stages on all data draw every category equally (the paper's 100 entries per "
        "category): each category's entries repeated up to the largest category's count",
    )


@dataclass(frozen=True, kw_only=True)
class ValidationConfig:
    """Validation inside each stage's run (greedy episodes on the validation entries, no hints,
    scored by BFCL's verdict) and the settings of the final held-out evaluation."""

    __moved_keys__ = {
        "entries_per_category": "it is now 'validation.limit' (first N validation entries per "
        "category; null: all) and 'validation.enabled' (entries_per_category=0 -> "
        "validation.enabled=false; entries_per_category=N -> validation.limit=N)"
    }

    enabled: bool = option(
        True,
        help="validate inside each stage's run (false: no validation entries; "
        "transition.rule=plateau needs them)",
    )
    limit: int | None = limit_option(
        "validation entries per category (the split holds data.validation_per_category)"
    )
    every: int = option(
        10, help="validate every N optimizer steps of a stage (and at its end)", ge=1
    )
    before_train: bool = option(False, help="also validate each stage's starting model")
    max_steps_per_turn: int = option(20, help="model steps per user turn (BFCL uses 20)", ge=1)
    whole_episodes: bool = option(
        False,
        help="in-run validation plays every user turn (only max_steps_per_turn ends a turn; "
        "trl backend); false: validation episodes have the training episodes' caps "
        "(trainer.rl.max_turns, stages.N.max_response_tokens), as verl validates",
    )
    max_tokens: int = option(
        4096,
        help="final evaluation: max new tokens per response (in-run validation uses "
        "trainer.rl.max_new_tokens, as training does)",
    )
    temperature: float = option(0.0, help="final evaluation: sampling temperature (0: greedy)")
    max_batch_size: int = option(8, help="final evaluation: responses per batch")
    concurrency: int = option(8, help="final evaluation: episodes in flight")
    device: str = option("cpu", help="final evaluation: torch device of the local model")


def check_categories(categories: tuple[str, ...]) -> tuple[str, ...]:
    unknown = [c for c in categories if c not in CATEGORIES]
    if unknown:
        raise ValueError(f"unknown categories {unknown}: use some of {', '.join(CATEGORIES)}")
    return categories or CATEGORIES
