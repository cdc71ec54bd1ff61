"""The only module that touches the plugin manager; everything else uses the accessors."""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata as md
import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pluggy

from aworld_rl_core import hookspecs
from aworld_rl_core.errors import PluginError

KINDS = ("datasets", "environments", "rewards", "trainers", "recipes")
DISABLE_ENV = "AWORLD_RL_DISABLE_PLUGINS"


def resolve(target: Any) -> Any:
    """Import a lazy ``"module:attr"`` target; any other object is returned as is."""
    if not isinstance(target, str):
        return target
    module_name, _, attr = target.partition(":")
    module = importlib.import_module(module_name)
    obj: Any = module
    for part in attr.split(".") if attr else ():
        obj = getattr(obj, part)
    return obj


@dataclass(frozen=True)
class Entry:
    """One registered thing: its kind, name, lazy target and the plugin that registered it."""

    kind: str
    name: str
    target: Any
    plugin: str
    help: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    def load(self, target: Any = None) -> Any:
        """Resolve the target (or a meta target), turning a missing module into an install hint."""
        try:
            return resolve(self.target if target is None else target)
        except ModuleNotFoundError as exc:
            hint = install_hint(self.plugin, exc.name or "")
            raise PluginError(
                f"{self.kind[:-1]} '{self.name}' needs the missing module '{exc.name}'. {hint}"
            ) from exc


@dataclass(frozen=True)
class RecipeEntry(Entry):
    """A recipe: ``config`` dataclass, ``run(cfg, run)`` and the presets directory."""

    def config_cls(self) -> type:
        return self.load(self.meta["config"])

    def run_fn(self) -> Any:
        return self.load(self.target)

    @property
    def presets(self) -> str:
        return self.meta["presets"]


@dataclass(frozen=True)
class PluginInfo:
    name: str
    dist: str | None
    version: str | None
    error: str | None = None


class Registry:
    """Everything the installed plugins registered, by kind and name."""

    def __init__(self) -> None:
        self.entries: dict[str, dict[str, Entry]] = {kind: {} for kind in KINDS}
        self.plugins: list[PluginInfo] = []

    @property
    def failures(self) -> list[PluginInfo]:
        return [p for p in self.plugins if p.error]

    def add(self, entry: Entry) -> None:
        table = self.entries[entry.kind]
        if entry.name in table:
            other = table[entry.name].plugin
            raise PluginError(
                f"{entry.kind[:-1]} '{entry.name}' is registered by both plugin '{other}' and "
                f"plugin '{entry.plugin}'; uninstall one, or block one with "
                f"{DISABLE_ENV}={entry.plugin}"
            )
        table[entry.name] = entry

    def get(self, kind: str, name: str) -> Entry:
        table = self.entries[kind]
        if name in table:
            return table[name]
        close = difflib.get_close_matches(name, list(table), n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        known = ", ".join(sorted(table)) or "none"
        raise PluginError(f"unknown {kind[:-1]} '{name}'{hint} (known: {known})")


def _register_callback(registry: Registry, kind: str, plugin: str):
    def register(name: str, target: Any = None, *, help: str = "", **meta: Any) -> None:
        if kind == "recipes":
            missing = {"config", "presets"} - meta.keys()
            run = meta.pop("run", target)
            if missing or run is None:
                raise PluginError(
                    f"plugin '{plugin}' registered recipe '{name}' without "
                    f"{', '.join(sorted(missing | ({'run'} if run is None else set())))}"
                )
            registry.add(RecipeEntry(kind, name, run, plugin, help, meta))
        else:
            if target is None:
                raise PluginError(
                    f"plugin '{plugin}' registered {kind[:-1]} '{name}' without target"
                )
            registry.add(Entry(kind, name, target, plugin, help, meta))

    return register


def _disabled() -> set[str]:
    return {p.strip() for p in os.environ.get(DISABLE_ENV, "").split(",") if p.strip()}


def build_registry(
    extra: Sequence[tuple[str, object]] = (), *, entry_points: bool = True
) -> Registry:
    """Load the ``aworld_rl`` entry points and ``extra`` (name, plugin) pairs into a registry."""
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    registry = Registry()
    blocked = _disabled()
    found = md.entry_points(group=hookspecs.PROJECT) if entry_points else []
    for ep in sorted(found, key=lambda e: e.name):
        dist = ep.dist.name if ep.dist else None
        version = ep.dist.version if ep.dist else None
        if ep.name in blocked:
            continue
        try:
            pm.register(ep.load(), name=ep.name)
        except Exception as exc:  # a broken plugin is reported, never hidden, never fatal
            error = f"{type(exc).__name__}: {exc}"
            if isinstance(exc, ModuleNotFoundError):
                error += ". " + install_hint(ep.name, exc.name or "")
            registry.plugins.append(PluginInfo(ep.name, dist, version, error))
            continue
        registry.plugins.append(PluginInfo(ep.name, dist, version))
    for name, module in extra:
        if name not in blocked:
            pm.register(module, name=name)
            registry.plugins.append(PluginInfo(name, None, None))
    for kind in KINDS:
        caller = getattr(pm.hook, f"register_{kind}")
        for impl in caller.get_hookimpls():
            impl.function(register=_register_callback(registry, kind, impl.plugin_name))
    return registry


def install_hint(plugin: str, module: str) -> str:
    """Name the extra that provides ``module`` for the plugin's distribution, if one does."""
    dist = _dist_of(plugin)
    if dist is None:
        return f"Install the package that provides '{module}'."
    wanted = _normalise(module)
    for req in md.requires(dist) or []:
        extra = re.search(r"extra\s*==\s*['\"]([^'\"]+)['\"]", req)
        req_name = _normalise(re.split(r"[\s;\[<>=!~]", req, maxsplit=1)[0])
        if extra and req_name == wanted:
            return f"Install it with: pip install '{dist}[{extra.group(1)}]'"
    return f"Install the package that provides '{module}' (needed by {dist})."


def _dist_of(plugin: str) -> str | None:
    for ep in md.entry_points(group=hookspecs.PROJECT):
        if ep.name == plugin and ep.dist:
            return ep.dist.name
    return None


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


_current: Registry | None = None


def current() -> Registry:
    """The process-wide registry, built on first use."""
    global _current
    if _current is None:
        _current = build_registry()
    return _current


@contextmanager
def use_registry(reg: Registry) -> Iterator[Registry]:
    """Make ``reg`` the current registry inside the block (tests register their own plugins)."""
    global _current
    saved, _current = _current, reg
    try:
        yield reg
    finally:
        _current = saved


def names(kind: str) -> list[str]:
    return sorted(current().entries[kind])


def get_recipe(name: str) -> RecipeEntry:
    entry = current().get("recipes", name)
    assert isinstance(entry, RecipeEntry)
    return entry


def get_environment(name: str) -> Any:
    return current().get("environments", name).load()


def get_reward(name: str) -> Any:
    return current().get("rewards", name).load()


def get_trainer(name: str) -> Any:
    return current().get("trainers", name).load()


def get_dataset(name: str) -> Any:
    return current().get("datasets", name).load()
