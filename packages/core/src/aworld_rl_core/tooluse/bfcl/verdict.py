"""Verdicts of the BFCL judges."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Verdict:
    """A judged output: ``valid`` as BFCL would score it, per-turn scores, and why it failed.

    ``error_type`` uses BFCL's error-type names (``"multi_turn:instance_state_mismatch"``,
    ``"simple_function_checker:missing_required"``, ...); empty when valid.
    """

    valid: bool
    turn_scores: tuple[float, ...] = ()
    reason: str = ""
    error_type: str = ""
    details: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def __bool__(self) -> bool:
        return self.valid
