"""Moved: ``TrainerConfig`` and its sections to :mod:`aworld_rl_core.trainer_config` (kernel),
``ModelConfig`` to :mod:`aworld_rl_core.models.config`. This module re-exports them for code
written against the old path; new code imports from the new homes."""

from aworld_rl_core.models.config import ModelConfig
from aworld_rl_core.trainer_config import (
    HasSections,
    RLConfig,
    SFTConfig,
    TrainerConfig,
    backend_sections,
    section,
    with_section,
)

__all__ = [
    "HasSections",
    "ModelConfig",
    "RLConfig",
    "SFTConfig",
    "TrainerConfig",
    "backend_sections",
    "section",
    "with_section",
]
