"""FCDR: the five-stage function-call data refinement (FunReason) over an LLM judge."""

from aworld_rl_funreason.fcdr.pipeline import (
    STAGES,
    FcdrSettings,
    Outcome,
    StageRecord,
    count_outcomes,
    refine_sample,
)
from aworld_rl_funreason.fcdr.verdict import parse_judge, parse_new_fc

__all__ = [
    "STAGES",
    "FcdrSettings",
    "Outcome",
    "StageRecord",
    "count_outcomes",
    "parse_judge",
    "parse_new_fc",
    "refine_sample",
]
