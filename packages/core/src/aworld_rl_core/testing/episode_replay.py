"""Replay scripted episodes through an environment and compare with a recorded trace.

A refactoring of an environment keeps its behaviour when the same scripted replies give the same
opening, observations, rewards, ``done`` flags and infos. :func:`trace` plays a flat list of
replies (until the episode ends or the list does) and returns one JSON-ready record per step;
:func:`record` writes the traces of many cases, :func:`mismatches` lists where a fresh trace
differs from a recorded one. Cases are ``name -> (make_env, replies)``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

Case = tuple[Callable[[], Any], Sequence[str]]


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value, default=repr, sort_keys=True))


def _digest(messages: Any) -> str:
    text = json.dumps(messages, default=repr, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def trace(make_env: Callable[[], Any], replies: Sequence[str]) -> list[dict[str, Any]]:
    """One record for the opening, then one per step: the observation (its digest and its
    roles), the reward (rounded to 1e-9), ``done`` and the info."""
    env = make_env()
    try:
        opening = env.reset()
        out: list[dict[str, Any]] = [{"opening": _digest(opening)}]
        for text in replies:
            step = env.step(text)
            out.append(
                {
                    "observation": _digest(step.observation),
                    "roles": [m.get("role") for m in step.observation],
                    "reward": round(float(step.reward), 9),
                    "done": bool(step.done),
                    "info": _plain(step.info),
                }
            )
            if step.done:
                break
        return out
    finally:
        env.close()


def record(cases: Mapping[str, Case], path: str | Path) -> None:
    """Write every case's trace to ``path`` (JSON)."""
    data = {name: trace(make, replies) for name, (make, replies) in cases.items()}
    Path(path).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def mismatches(cases: Mapping[str, Case], path: str | Path) -> list[str]:
    """Where the cases' fresh traces differ from the ones recorded at ``path`` (case, step,
    field, recorded value, fresh value); empty when every trace is identical."""
    recorded = json.loads(Path(path).read_text(encoding="utf-8"))
    problems = []
    missing = sorted(set(cases) - set(recorded))
    if missing:
        problems.append(f"no recorded trace for {missing}")
    for name, (make, replies) in cases.items():
        if name not in recorded:
            continue
        fresh, old = trace(make, replies), recorded[name]
        if len(fresh) != len(old):
            problems.append(f"{name}: {len(old)} records recorded, {len(fresh)} now")
        for i, (a, b) in enumerate(zip(old, fresh, strict=False)):
            for key in sorted(set(a) | set(b)):
                if a.get(key) != b.get(key):
                    problems.append(f"{name} step {i} {key}: {a.get(key)!r} != {b.get(key)!r}")
    return problems
