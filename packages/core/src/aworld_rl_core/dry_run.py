"""``aworld-run <recipe> --dry-run``: the collector of launch plans (kernel).

Inside :func:`planning` every training backend plans instead of training and hands its plan to
:func:`record_plan`; the CLI writes the plans it collected to ``plan.json``. What a plan holds
(``backends.plan.LaunchPlan``) is the backends' business: here a plan is any object with
``to_json()``, so the kernel never imports a backend.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

PLAN_FILE = "plan.json"

_PLANS: ContextVar[list[Any] | None] = ContextVar("aworld_rl_plans", default=None)


@contextmanager
def planning() -> Iterator[list[Any]]:
    """Within this block backends plan instead of training; yields the plans made."""
    plans: list[Any] = []
    token = _PLANS.set(plans)
    try:
        yield plans
    finally:
        _PLANS.reset(token)


def planning_active() -> bool:
    """Whether backends only plan now (``aworld-run ... --dry-run``)."""
    return _PLANS.get() is not None


def record_plan(plan: Any) -> None:
    """Add ``plan`` to the plans of the active :func:`planning` block (none active: a no-op)."""
    plans = _PLANS.get()
    if plans is not None:
        plans.append(plan)


def write_plans(plans: Sequence[Any], path: Path) -> Path:
    """Write ``{"plans": [plan.to_json(), ...]}`` to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"plans": [p.to_json() for p in plans]}
    path.write_text(json.dumps(record, indent=1, default=str), encoding="utf-8")
    return path
