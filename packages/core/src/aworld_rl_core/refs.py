"""References to registered things: a registry name (or ``module:attr`` path) plus JSON options.

Recipes name environments, rewards and losses this way, so a job can be rebuilt anywhere: in
verl's Ray workers, in LLaMA-Factory's subprocess, by another package that never imports the
one that registered the name. A reference serialises as ``{"target", "args", "kwargs"}``.
Targets come from configs and code, never from model text.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aworld_rl_core.config import option
from aworld_rl_core.errors import ConfigError

KINDS = ("environments", "rewards", "losses", "datasets")


def lookup(kind: str, name: str) -> Any:
    """The registry entry ``name`` of ``kind``; an unknown ``<package>.<name>`` whose package is
    not installed says which distribution to install."""
    from aworld_rl_core import registry
    from aworld_rl_core.errors import PluginError

    current = registry.current()
    try:
        return current.get(kind, name)
    except PluginError as exc:
        package, dot, _ = name.partition(".")
        if dot and package not in {p.name for p in current.plugins}:
            dist = "aworld-rl-" + package.replace("_", "-")
            raise PluginError(
                f"{exc}. '{name}' belongs to the package '{package}', which is not installed: "
                f"pip install {dist}"
            ) from None
        raise


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
        f"{where} is a {type(value).__name__}, which cannot travel to another process; use "
        "JSON values (str, number, bool, list, dict) in rows and options"
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
        f"the {what} must be rebuildable in another process (verl's Ray workers), so it must be "
        f"a registered name or importable: got {obj!r}. Use a registered name with options, or "
        "a module-level function or class (optionally in functools.partial with JSON arguments),"
        " not a lambda, closure or object defined in __main__"
    )


@dataclass(frozen=True)
class Ref:
    """A rebuildable callable: a registry name or ``module:attr`` path plus JSON arguments."""

    target: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, obj: Any, what: str) -> Ref:
        """Reference a name, a path, a module-level callable or a ``functools.partial`` of one."""
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
    def named(cls, name: str, options: Mapping[str, Any] | None = None) -> Ref:
        """A registered name (or path) with keyword options."""
        return cls(name, (), to_jsonable(dict(options or {}), f"options of {name!r}"))

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

    def resolve(self, kind: str) -> Any:
        """The target itself: imported by path, or looked up in the ``kind`` registry."""
        from aworld_rl_core import registry

        if kind not in KINDS:
            raise ValueError(f"unknown registry kind {kind!r}: use one of {', '.join(KINDS)}")
        if self.is_import_path:
            return registry.resolve(self.target)
        return lookup(kind, self.target).load()

    def load(self, kind: str) -> Callable[..., Any]:
        """The target with this reference's arguments bound (``functools.partial``)."""
        target = self.resolve(kind)
        if self.args or self.kwargs:
            return functools.partial(target, *self.args, **self.kwargs)
        return target


def callable_of(value: Any, kind: str) -> Callable[..., Any]:
    """A callable from a :class:`Ref`, a registered name / path, or a callable (as is)."""
    if isinstance(value, (Ref, str)):
        return Ref.of(value, kind[:-1]).load(kind)
    if not callable(value):
        raise ConfigError(
            f"expected a {kind[:-1]} (a registered name, Ref or callable), got {value!r}"
        )
    return value


@dataclass(frozen=True, kw_only=True)
class RefConfig:
    """A config section naming a registered thing: ``env.name=rag_r1.search env.options.k=3``."""

    name: str = option("", help="registered name (aworld-run plugins lists them) or module:attr")
    options: dict[str, Any] = option(factory=dict, help="JSON options passed to it")

    def ref(self) -> Ref | None:
        """The reference, or None when no name is set."""
        return Ref.named(self.name, self.options) if self.name else None
