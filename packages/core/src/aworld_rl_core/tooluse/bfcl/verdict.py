"""Verdicts of the BFCL judges."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

NO_DETAILS: Mapping[str, Any] = MappingProxyType({})


class Verdict(NamedTuple):
    """A judged output: ``valid`` as BFCL would score it, per-turn scores, and why it failed.

    ``error_type`` uses BFCL's error-type names (``"multi_turn:instance_state_mismatch"``,
    ``"simple_function_checker:missing_required"``, ...); empty when valid. Immutable (a named
    tuple: judging millions of outputs makes its construction cost count); truthy when valid.
    """

    valid: bool
    turn_scores: tuple[float, ...] = ()
    reason: str = ""
    error_type: str = ""
    details: Mapping[str, Any] = NO_DETAILS

    def __bool__(self) -> bool:
        return self.valid
