"""Serialisable references to environments and rewards, so verl's Ray workers can rebuild them.

verl runs rollouts and rewards in other processes (often other nodes), so a ``TrainJob``'s
callables travel as JSON: a *reference* ``{"target": ..., "args": [...], "kwargs": {...}}``
where ``target`` is a registry name (``envtuning.bfcl``) or an import path (``pkg.mod:fn``).
Each parquet row carries an *episode spec* (JSON string in ``extra_info["aworld"]``): the
environment reference, the reward references and weights, the task row and turn limits.
Targets come from our configs and code, never from model text.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aworld_rl_core.errors import ConfigError

SPEC_KEY = "aworld"
"""The ``extra_info`` key holding the episode spec (a JSON string)."""


def to_jsonable(value: Any, where: str) -> Any:
    """``value`` as plain JSON types (tuples to lists, numpy scalars/arrays to Python)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        return to_jsonable(value.tolist(), where)
    raise ConfigError(
        f"{where} is a {type(value).__name__}, which the verl backend cannot send to its Ray "
        "workers; use JSON values (str, number, bool, list, dict) in rows and factory arguments"
    )


def import_path(obj: Any, what: str) -> str:
    """The ``module:qualname`` path that imports back to ``obj``, or a clear error."""
    from aworld_rl_core.registry import resolve

    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if module and qualname and "<" not in qualname and module != "__main__":
        path = f"{module}:{qualname}"
        try:
            if resolve(path) is obj:
                return path
        except (ImportError, AttributeError):
            pass
    raise ConfigError(
        f"the verl backend rebuilds the {what} in its Ray workers, so it must be importable: "
        f"got {obj!r}. Use a module-level function or class (optionally in functools.partial "
        "with JSON arguments), not a lambda, closure or object defined in __main__"
    )


@dataclass(frozen=True)
class Ref:
    """A rebuildable callable: a registry name or ``module:attr`` path plus JSON arguments."""

    target: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, obj: Any, what: str) -> Ref:
        """Reference a module-level callable, or a ``functools.partial`` of one."""
        if isinstance(obj, Ref):
            return obj
        if isinstance(obj, str):
            return cls(obj)
        if isinstance(obj, functools.partial):
            inner = cls.of(obj.func, what)
            args = to_jsonable(list(obj.args), f"{what} arguments")
            kwargs = to_jsonable(dict(obj.keywords), f"{what} arguments")
            return cls(inner.target, (*inner.args, *args), {**inner.kwargs, **kwargs})
        return cls(import_path(obj, what))

    @classmethod
    def from_json(cls, data: Any) -> Ref:
        if isinstance(data, str):
            return cls(data)
        if not isinstance(data, Mapping) or not isinstance(data.get("target"), str):
            raise ConfigError(f"bad reference {data!r}: expected a name or {{'target': ...}}")
        return cls(data["target"], tuple(data.get("args") or ()), dict(data.get("kwargs") or {}))

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "args": list(self.args), "kwargs": self.kwargs}

    @property
    def is_import_path(self) -> bool:
        return ":" in self.target

    @property
    def label(self) -> str:
        """A short name for logs: the registry name or the attribute name."""
        return self.target.rpartition(":")[2] if self.is_import_path else self.target

    def load(self, kind: str) -> Callable[..., Any]:
        """The callable: imported by path, or looked up in the ``kind`` registry."""
        from aworld_rl_core import registry

        if self.is_import_path:
            target = registry.resolve(self.target)
        elif kind == "environments":
            target = registry.get_environment(self.target)
        elif kind == "rewards":
            target = registry.get_reward(self.target)
        else:
            raise ValueError(f"unknown registry kind {kind!r}")
        if self.args or self.kwargs:
            return functools.partial(target, *self.args, **self.kwargs)
        return target


@dataclass(frozen=True)
class EpisodeSpec:
    """What one row needs in a verl worker: environment, rewards, the task row, limits."""

    task: dict[str, Any]
    env: Ref | None = None
    rewards: tuple[Ref, ...] = ()
    weights: tuple[float, ...] = ()
    max_new_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.weights and len(self.weights) != len(self.rewards):
            raise ConfigError(
                f"{len(self.weights)} reward weights for {len(self.rewards)} rewards: give one "
                "weight per reward (or none for equal weights of 1.0)"
            )

    def reward_weights(self) -> tuple[float, ...]:
        return self.weights or (1.0,) * len(self.rewards)

    def dumps(self) -> str:
        data = {
            "task": to_jsonable(self.task, "row"),
            "env": self.env.to_json() if self.env else None,
            "rewards": [r.to_json() for r in self.rewards],
            "weights": [float(w) for w in self.weights],
            "max_new_tokens": self.max_new_tokens,
        }
        return json.dumps(data, ensure_ascii=False, sort_keys=True)

    @classmethod
    def loads(cls, text: str) -> EpisodeSpec:
        data = json.loads(text)
        env = data.get("env")
        return cls(
            task=dict(data.get("task") or {}),
            env=Ref.from_json(env) if env else None,
            rewards=tuple(Ref.from_json(r) for r in data.get("rewards") or ()),
            weights=tuple(float(w) for w in data.get("weights") or ()),
            max_new_tokens=data.get("max_new_tokens"),
        )

    @classmethod
    def from_extra_info(cls, extra_info: Mapping[str, Any] | None) -> EpisodeSpec | None:
        """The spec a row carries, or None for rows written by someone else."""
        text = (extra_info or {}).get(SPEC_KEY)
        return cls.loads(text) if text else None

    def build_env(self) -> Any:
        """A fresh environment for this episode (a registry factory gets its options)."""
        if self.env is None:
            raise ConfigError("this row has no environment: set TrainJob.env_factory")
        factory = self.env.load("environments")
        # Registry factories take options (already bound); TrainJob factories take the row.
        return factory(self.task) if self.env.is_import_path else factory()


def reward_refs(rewards: Sequence[Any]) -> tuple[Ref, ...]:
    """References for a job's reward callables (or names / paths)."""
    return tuple(Ref.of(fn, f"reward {getattr(fn, '__name__', fn)!r}") for fn in rewards)
