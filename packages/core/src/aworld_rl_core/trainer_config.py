"""Trainer configuration shared by every recipe; ``backend`` picks the backend (kernel: the CLI
and every recipe read it; the backends import it, never the reverse).

``TrainerConfig`` holds what every backend means the same way; each backend's own settings
are its registered config section (``register_trainers``), ``trainer.<backend>.*`` in YAML and
overrides, read with :func:`section`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol, TypeVar

from aworld_rl_core import registry
from aworld_rl_core.config import SectionTable, option, sections_option
from aworld_rl_core.errors import ConfigError

S = TypeVar("S")


@dataclass(frozen=True, kw_only=True)
class RLConfig:
    """GRPO-family settings, shared by the ``trl`` and ``verl`` backends."""

    group_size: int = option(8, help="completions sampled per prompt (GRPO n)", ge=1)
    kl_coef: float = option(0.0, help="KL penalty coefficient (beta)", ge=0)
    kl_estimator: Literal["k1", "k2", "k3", "low_var_kl"] = option(
        "low_var_kl", help="KL estimator (low_var_kl = k3 clipped)"
    )
    clip_low: float = option(0.2, help="lower PPO clip range (epsilon low)", ge=0)
    clip_high: float = option(0.28, help="upper PPO clip range (epsilon high)", ge=0)
    dual_clip: float | None = option(
        None, help="dual-clip constant c for negative advantages (verl only)", gt=1
    )
    entropy_coef: float = option(0.0, help="entropy bonus coefficient", ge=0)
    iterations: int = option(
        1,
        help="optimizer passes over each generated batch (GRPO's mu; the trl backend's "
        "num_iterations, with the PPO clip against the sampling policy); verl: "
        "trainer.verl.ppo_epochs",
        ge=1,
    )
    max_turns: int = option(8, help="max model turns per episode", ge=1)
    max_new_tokens: int = option(256, help="max new tokens per model turn", ge=1)
    max_response_tokens: int = option(
        2048, help="max tokens of the whole multi-turn response", ge=1
    )
    temperature: float = option(1.0, help="sampling temperature", ge=0)
    top_p: float = option(1.0, help="nucleus sampling p", gt=0, le=1)
    call_constraint: Literal["none", "copy"] = option(
        "none",
        help="decoding of the trl backend's rollouts and validations: copy = a JSON tool "
        "call's argument values may only be words and numbers of the user turns and tool "
        "results (an exploration aid for small policies; aworld_rl_core.tooluse.constrain)",
    )


@dataclass(frozen=True, kw_only=True)
class SFTConfig:
    """Supervised fine-tuning settings (``hf-sft`` and ``llamafactory``)."""

    max_length: int = option(2048, help="max tokens per training sample", ge=1)
    per_turn: bool = option(
        True,
        help="split multi-turn samples per assistant turn; earlier turns are context",
    )
    segments: dict[str, tuple[str, str]] = option(
        factory=lambda: {"think": ("<think>", "</think>")},
        help="segment kinds a token loss gets, found in the text: name -> [open tag, close tag] "
        "(an unclosed block runs to the end; 'call' = every other supervised token)",
    )
    lr_groups: dict[str, float] = option(
        factory=dict,
        help="hf-sft: learning rates by parameter-name prefix (e.g. {lm_head.: 1e-4}); the "
        "other parameters use trainer.learning_rate",
    )
    warmup_ratio: float = option(0.0, help="LR warm-up fraction", ge=0, le=1)
    lr_scheduler: str = option("cosine", help="LR scheduler name")
    gradient_checkpointing: bool = option(
        False, help="hf-sft: activation checkpointing (less memory, ~30% more compute)"
    )
    deepspeed: str | None = option(
        None, help="hf-sft: a DeepSpeed config JSON file (ZeRO-3 ...), passed to transformers"
    )

    def __post_init__(self) -> None:
        for name, tags in self.segments.items():
            if len(tags) != 2 or not all(isinstance(t, str) and t for t in tags):
                raise ConfigError(
                    f"trainer.sft.segments.{name} must be [open tag, close tag], got {tags!r}"
                )


@dataclass(frozen=True, kw_only=True)
class TrainerConfig:
    """How to train: the backend and the optimisation settings every backend reads."""

    backend: str = option(
        "trl",
        help="training backend: trl (CPU / 1 GPU RL), hf-sft, verl, llamafactory",
    )
    learning_rate: float = option(1e-6, help="peak learning rate", ge=0)
    max_steps: int = option(-1, help="optimizer steps; -1 = use epochs", ge=-1)
    epochs: float = option(1.0, help="passes over the training rows", gt=0)
    batch_size: int = option(8, help="rows per optimizer step (RL: prompts per step)", ge=1)
    micro_batch_size: int = option(1, help="rows per forward pass", ge=1)
    weight_decay: float = option(0.0, help="AdamW weight decay", ge=0)
    max_grad_norm: float = option(1.0, help="gradient clipping norm", ge=0)
    seed: int = option(42, help="random seed", ge=0)
    save_steps: int = option(0, help="checkpoint every N steps; 0 = at the end", ge=0)
    keep_checkpoints: int | None = option(
        3,
        help="checkpoints kept on disk (older ones deleted; verl max_actor_ckpt_to_keep, "
        "transformers save_total_limit); null = all",
        ge=1,
    )
    logging_steps: int = option(1, help="log metrics every N steps", ge=1)
    resume: bool = option(False, help="resume from the latest checkpoint in the run directory")
    loss: str | None = option(
        None,
        help="SFT backends: a registered loss (e.g. funreason.srml; aworld-run plugins lists "
        "them) or module:attr; null = the recipe's loss or the backend's cross-entropy",
    )
    loss_options: dict[str, Any] = option(
        factory=dict, help="options of trainer.loss (e.g. {alpha: 0.7})"
    )
    rl: RLConfig = option(factory=RLConfig, help="RL (GRPO) settings")
    sft: SFTConfig = option(factory=SFTConfig, help="SFT settings")
    sections: Mapping[str, Any] = sections_option(
        lambda: backend_sections(), help="registered backend sections"
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "sections", _complete(self.sections))


def backend_sections() -> SectionTable:
    """Each registered backend's config section, by backend name; a name that is also a
    ``TrainerConfig`` field cannot own one."""
    classes, unavailable = registry.trainer_sections()
    taken = {f.name for f in dataclasses.fields(TrainerConfig)}
    clash = {
        name: f"'{name}' is a TrainerConfig field; backend '{name}' needs another name to own "
        "a config section"
        for name in classes
        if name in taken
    }
    usable = {name: cls for name, cls in classes.items() if name not in clash}
    return SectionTable(usable, {**unavailable, **clash})


def _complete(given: Mapping[str, Any]) -> dict[str, Any]:
    """Every registered section: ``given``'s, the others with their defaults."""
    table = backend_sections()
    for name, value in given.items():
        cls = table.classes.get(name)
        if cls is None:
            why = table.unavailable.get(name) or "registered backend sections: " + (
                ", ".join(table.classes) or "none"
            )
            raise ConfigError(f"trainer.{name}: no such backend section ({why})")
        if type(value) is not cls:
            raise ConfigError(
                f"trainer.{name} must be a {cls.__name__}, got {type(value).__name__}"
            )
    return {name: given[name] if name in given else cls() for name, cls in table.classes.items()}


class HasSections(Protocol):
    """A trainer config: ``TrainerConfig`` or a recipe's narrowed copy (``config.without_keys``)."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def sections(self) -> Mapping[str, Any]: ...


T = TypeVar("T", bound=HasSections)


def section(trainer: HasSections, cls: type[S]) -> S:
    """The backend section of type ``cls``: ``section(job.trainer, VerlConfig).dry_run``."""
    return trainer.sections[_name_of(trainer, cls)]


def with_section(trainer: T, value: Any) -> T:
    """``trainer`` with the section of ``value``'s type replaced by ``value``."""
    name = _name_of(trainer, type(value))
    return dataclasses.replace(trainer, sections={**trainer.sections, name: value})


def _name_of(trainer: HasSections, cls: type) -> str:
    names = [name for name, value in trainer.sections.items() if type(value) is cls]
    if len(names) == 1:
        return names[0]
    if names:
        raise ConfigError(f"trainer sections {', '.join(names)} all hold {cls.__name__}")
    raise ConfigError(
        f"no trainer section holds {cls.__name__}: its backend registers it with "
        f"register(name, target, config={cls.__name__}) in register_trainers "
        f"(registered sections: {', '.join(trainer.sections) or 'none'})"
    )
