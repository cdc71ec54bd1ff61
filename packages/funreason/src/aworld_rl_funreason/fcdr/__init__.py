"""FCDR: the five-stage function-call data refinement (FunReason) over an LLM judge."""

from aworld_rl_funreason.fcdr.stages import (
    STAGES,
    FcdrItem,
    FcdrSettings,
    Outcome,
    StageRecord,
    count_outcomes,
    fcdr_pipeline,
    outcome_of,
    refine_sample,
)
from aworld_rl_funreason.fcdr.verdict import parse_judge, parse_new_fc

__all__ = [
    "STAGES",
    "FcdrItem",
    "FcdrSettings",
    "Outcome",
    "StageRecord",
    "count_outcomes",
    "fcdr_pipeline",
    "outcome_of",
    "parse_judge",
    "parse_new_fc",
    "refine_sample",
]
