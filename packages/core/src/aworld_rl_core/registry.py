"""The only module that touches the plugin manager; everything else uses the accessors."""

from __future__ import annotations

import dataclasses
import difflib
import functools
import importlib
import importlib.metadata as md
import os
import re
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import pluggy

from aworld_rl_core import hookspecs
from aworld_rl_core.errors import PluginError

KINDS = (
    "datasets",
    "environments",
    "rewards",
    "losses",
    "trainers",
    "tool_apis",
    "parsers",
    "episode_parts",
    "recipes",
    "smoke_parts",
)
LOSS_KINDS = ("token", "model")
PART_ROLES = ("protocol", "turns", "feedback", "reward")
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
    dist: str | None = None

    def load(self, target: Any = None) -> Any:
        """Resolve the target (or a meta target), turning a missing module into an install hint."""
        try:
            return resolve(self.target if target is None else target)
        except ModuleNotFoundError as exc:
            hint = install_hint(self.dist, exc.name or "")
            raise PluginError(
                f"{self.kind[:-1]} '{self.name}' needs the missing module '{exc.name}'. {hint}"
            ) from exc


@dataclass(frozen=True)
class RecipeEntry(Entry):
    """A recipe: ``config`` dataclass, ``run(cfg, run)`` and the presets directory."""

    def config_cls(self) -> type[Any]:
        return self.load(self.meta["config"])

    def run_fn(self) -> Any:
        return self.load(self.target)

    @property
    def presets(self) -> str:
        return self.meta["presets"]


@dataclass(frozen=True)
class PluginInfo:
    """An installed plugin: entry-point name, distribution, and why it failed (None: loaded)."""

    name: str
    dist: str | None
    version: str | None
    error: str | None = None


class Registry:
    """Everything the installed plugins registered, by kind and name.

    A name registered by two plugins is blocked: asking for it is an error naming both, and
    every other name keeps working.
    """

    def __init__(self) -> None:
        self.entries: dict[str, dict[str, Entry]] = {kind: {} for kind in KINDS}
        self.plugins: list[PluginInfo] = []
        self.conflicts: dict[tuple[str, str], list[str]] = {}

    @property
    def failures(self) -> list[PluginInfo]:
        return [p for p in self.plugins if p.error]

    def add(self, entry: Entry) -> None:
        key = (entry.kind, entry.name)
        table = self.entries[entry.kind]
        if key in self.conflicts:
            self.conflicts[key].append(entry.plugin)
        elif entry.name in table:
            self.conflicts[key] = [table.pop(entry.name).plugin, entry.plugin]
        else:
            table[entry.name] = entry

    def conflict_message(self, kind: str, name: str) -> str:
        owners = self.conflicts[(kind, name)]
        return (
            f"{kind[:-1]} '{name}' is registered by {' and '.join(f'plugin {o!r}' for o in owners)}"
            f", so it is blocked; uninstall one, or block one with {DISABLE_ENV}={owners[-1]}"
        )

    @functools.cached_property
    def trainer_sections(self) -> tuple[dict[str, type], dict[str, str]]:
        """The backends' config sections: name -> config class, and name -> why a section
        cannot be used (two plugins register the backend, or its class does not load)."""
        classes: dict[str, type] = {}
        unavailable = {
            name: self.conflict_message(kind, name)
            for kind, name in self.conflicts
            if kind == "trainers"
        }
        with _user_interrupts():
            self._load_sections(classes, unavailable)
        return classes, unavailable

    def _load_sections(self, classes: dict[str, type], unavailable: dict[str, str]) -> None:
        for name, entry in self.entries["trainers"].items():
            if entry.meta.get("config") is None:
                continue
            try:
                cls = entry.load(entry.meta["config"])
                if not dataclasses.is_dataclass(cls) or not isinstance(cls, type):
                    raise PluginError(f"{cls!r} is not a config dataclass")
                cls()
            except _UserInterrupt:
                raise
            except BaseException as exc:  # this section fails alone (SystemExit included)
                unavailable[name] = f"the config section of trainer '{name}' failed: {_error(exc)}"
                continue
            classes[name] = cls

    def get(self, kind: str, name: str) -> Entry:
        table = self.entries[kind]
        if name in table:
            return table[name]
        if (kind, name) in self.conflicts:
            raise PluginError(self.conflict_message(kind, name))
        other = [k for k in self.entries if k != kind and name in self.entries[k]]
        if other:  # e.g. a loss named as a trainer backend
            how = f"; select it with trainer.loss={name}" if other[0] == "losses" else ""
            singular = "loss" if other[0] == "losses" else other[0][:-1]
            raise PluginError(f"'{name}' is a registered {singular}, not a {kind[:-1]}{how}")
        close = difflib.get_close_matches(name, list(table), n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        known = ", ".join(sorted(table)) or "none"
        failed = ""
        if self.failures:
            names = ", ".join(p.name for p in self.failures)
            failed = f"; plugins that failed to load: {names} (see `aworld-run plugins`)"
        raise PluginError(f"unknown {kind[:-1]} '{name}'{hint} (known: {known}){failed}")


_TARGET = re.compile(r"[A-Za-z_][\w.]*(:[A-Za-z_][\w.]*)?")


class _Registrar:
    """The typed ``register`` callback one plugin gets for one hook; it collects entries."""

    def __init__(self, kind: str, plugin: str, dist: str | None) -> None:
        self.kind, self.plugin, self.dist = kind, plugin, dist
        self.entries: list[Entry] = []

    def __call__(self, name: str, target: Any = None, *, help: str = "", **meta: Any) -> None:
        what = f"plugin '{self.plugin}' registered {self.kind[:-1]}"
        if not isinstance(name, str) or not name.strip():
            raise PluginError(f"{what} {name!r}: a name is a non-empty string")
        if not isinstance(help, str):
            raise PluginError(f"{what} '{name}' with help={help!r}: help is a string")
        if self.kind == "recipes":
            self._check_namespace(what, name)
            run = meta.pop("run", target)
            missing = sorted(
                {"config", "presets"} - meta.keys() | ({"run"} if run is None else set())
            )
            if missing:
                raise PluginError(f"{what} '{name}' without {', '.join(missing)}")
            self._check_target(name, run)
            self._check_target(name, meta["config"])
            entry: Entry = RecipeEntry(
                self.kind, name, run, self.plugin, help, meta, dist=self.dist
            )
        else:
            if target is None:
                raise PluginError(f"{what} '{name}' without target")
            self._check_target(name, target)
            if self.kind == "trainers" and meta.get("config") is not None:
                self._check_section(name, meta["config"])
            self._check_namespace(what, name)
            if self.kind == "losses" and meta.get("kind") not in LOSS_KINDS:
                raise PluginError(
                    f"{what} '{name}' with kind={meta.get('kind')!r}: a loss is kind='token' "
                    "(fn(logits, labels, segments)) or kind='model' (compute_loss(model, batch) "
                    "-> (loss, metrics))"
                )
            if self.kind == "episode_parts" and meta.get("role") not in PART_ROLES:
                raise PluginError(
                    f"{what} '{name}' with role={meta.get('role')!r}: an episode part's role is "
                    f"one of {', '.join(PART_ROLES)}"
                )
            entry = Entry(self.kind, name, target, self.plugin, help, meta, dist=self.dist)
        self.entries.append(entry)

    def _check_namespace(self, what: str, name: str) -> None:
        """Names are ``<plugin>.<name>``: a plugin may not take another package's name (a
        foreign ``rag_r1.em`` would block the first-party reward). Backends are the exception:
        their name is a config key (``trainer.<name>``), so it holds no dot; so are parsers, whose
        name is a format (``protocol: hermes``), shared by every package (two registrations of one
        name block it, as for any kind)."""
        if self.kind in ("trainers", "parsers") and "." not in name:
            return
        namespace = name.partition(".")[0] if "." in name else ""
        if namespace != self.plugin:
            raise PluginError(
                f"{what} '{name}' outside its namespace: plugin '{self.plugin}' registers names "
                f"'{self.plugin}.<name>'"
                + (f" ('{namespace}.*' belongs to plugin '{namespace}')" if namespace else "")
            )

    def _check_section(self, name: str, config: Any) -> None:
        what = f"plugin '{self.plugin}' registered trainer '{name}' with config={config!r}"
        if "." in name:
            raise PluginError(
                f"{what}: its section would be trainer.{name}, but a key holds no '.'; "
                "name the backend without dots (e.g. mypkg-ppo)"
            )
        if not isinstance(config, str) and not dataclasses.is_dataclass(config):
            raise PluginError(f"{what}: give a config dataclass or 'package.module:Class'")
        self._check_target(name, config)

    def _check_target(self, name: str, target: Any) -> None:
        if isinstance(target, str) and not _TARGET.fullmatch(target):
            raise PluginError(
                f"plugin '{self.plugin}' registered {self.kind[:-1]} '{name}' with target "
                f"{target!r}: a lazy target is 'package.module:attr'"
            )
        if not isinstance(target, str) and not callable(target):
            raise PluginError(
                f"plugin '{self.plugin}' registered {self.kind[:-1]} '{name}' with a "
                f"{type(target).__name__} target: give a callable or 'package.module:attr'"
            )


def _disabled() -> set[str]:
    return {p.strip() for p in os.environ.get(DISABLE_ENV, "").split(",") if p.strip()}


def _error(exc: BaseException) -> str:
    error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return " ".join(error.split())


class _UserInterrupt(KeyboardInterrupt):
    """Ctrl-C pressed while plugins load: unlike a plugin's own KeyboardInterrupt, it stops."""


@contextmanager
def _user_interrupts() -> Iterator[None]:
    """Inside the block a real SIGINT raises :class:`_UserInterrupt`, so that a plugin raising
    KeyboardInterrupt (or SystemExit) is contained like any error while Ctrl-C still works."""
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return

    def interrupt(signum: int, frame: Any) -> None:
        raise _UserInterrupt

    signal.signal(signal.SIGINT, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@dataclass
class _Candidate:
    info: PluginInfo
    load: Callable[[], object]


def _entry_point_candidates(registry: Registry) -> list[_Candidate]:
    """One loader per entry-point name; a name two distributions claim goes to the one named
    ``aworld-rl-<name>`` (else the first by distribution name), the others are reported."""
    by_name: dict[str, list[md.EntryPoint]] = {}
    for ep in md.entry_points(group=hookspecs.PROJECT):
        found = by_name.setdefault(ep.name, [])
        if not any(_dist_name(e) == _dist_name(ep) and e.value == ep.value for e in found):
            found.append(ep)
    out = []
    for name in sorted(by_name):
        home = _normalise(f"aworld-rl-{name}")
        owner, *others = sorted(
            by_name[name],
            key=lambda e: (_normalise(_dist_name(e) or "") != home, _dist_name(e) or ""),
        )
        for ep in others:
            registry.plugins.append(
                PluginInfo(
                    name,
                    _dist_name(ep),
                    ep.dist.version if ep.dist else None,
                    f"entry-point name '{name}' is already taken by {_dist_name(owner)}; "
                    f"this plugin is not loaded: rename its [project.entry-points.aworld_rl] "
                    f"entry or uninstall {_dist_name(ep)}",
                )
            )
        info = PluginInfo(name, _dist_name(owner), owner.dist.version if owner.dist else None)
        out.append(_Candidate(info, owner.load))
    return out


def _dist_name(ep: md.EntryPoint) -> str | None:
    return ep.dist.name if ep.dist else None


def build_registry(
    extra: Sequence[tuple[str, object]] = (), *, entry_points: bool = True
) -> Registry:
    """Load the ``aworld_rl`` entry points and ``extra`` (name, plugin) pairs into a registry
    (an extra plugin named like an installed one replaces it: a test double of ``funreason``
    registers ``funreason.*`` names).

    Each plugin fails alone: one that does not import, implements a hook no spec defines
    (``check_pending``), raises in a hook (``SystemExit`` and ``KeyboardInterrupt`` included)
    or registers a name outside its namespace is listed with its error and registers nothing;
    the others load as usual.
    """
    with _user_interrupts():
        return _build_registry(extra, entry_points=entry_points)


def _build_registry(extra: Sequence[tuple[str, object]], *, entry_points: bool) -> Registry:
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    registry = Registry()
    blocked = _disabled()
    standing_in = {name for name, _ in extra}  # a test double stands in for the installed one
    candidates = (
        [c for c in _entry_point_candidates(registry) if c.info.name not in standing_in]
        if entry_points
        else []
    )
    candidates += [
        _Candidate(PluginInfo(n, None, None), functools.partial(_same, p)) for n, p in extra
    ]
    loaded: list[PluginInfo] = []
    for candidate in candidates:
        info = candidate.info
        if info.name in blocked:
            continue
        try:
            pm.register(candidate.load(), name=info.name)
        except _UserInterrupt:
            raise
        except BaseException as exc:  # a broken plugin is reported, never hidden, never fatal
            why = _error(exc)
            if isinstance(exc, ModuleNotFoundError):
                why += ". " + install_hint(info.dist, exc.name or "")
            registry.plugins.append(replace(info, error=why))
            continue
        try:
            pm.check_pending()  # every plugin before this one passed: the culprit is this one
        except pluggy.PluginValidationError as exc:
            pm.unregister(name=info.name)
            registry.plugins.append(replace(info, error=_error(exc)))
            continue
        loaded.append(info)
    for info in loaded:
        plugin = pm.get_plugin(info.name)
        others = [p for p in pm.get_plugins() if p is not plugin]
        entries: list[Entry] = []
        error: str | None = None
        for kind in KINDS:
            register = _Registrar(kind, info.name, info.dist)
            try:
                pm.subset_hook_caller(f"register_{kind}", remove_plugins=others)(register=register)
            except _UserInterrupt:
                raise
            except BaseException as exc:  # this plugin registers nothing; the others go on
                error = f"register_{kind} raised {_error(exc)}"
                break
            entries += register.entries
        registry.plugins.append(replace(info, error=error))
        if error is None:
            for entry in entries:
                registry.add(entry)
    order = {c.info.name: i for i, c in enumerate(candidates)}
    registry.plugins.sort(key=lambda p: (order.get(p.name, len(order)), p.error is not None))
    return registry


def _same(plugin: object) -> object:
    return plugin


def install_hint(dist: str | None, module: str) -> str:
    """Name the extra of ``dist`` that provides ``module``, if one does."""
    if dist is None:
        return f"Install the package that provides '{module}'."
    wanted = _normalise(module)
    try:
        requirements = md.requires(dist) or []
    except md.PackageNotFoundError:
        requirements = []
    for req in requirements:
        extra = re.search(r"extra\s*==\s*['\"]([^'\"]+)['\"]", req)
        req_name = _normalise(re.split(r"[\s;\[<>=!~]", req, maxsplit=1)[0])
        if extra and req_name == wanted:
            return f"Install it with: pip install '{dist}[{extra.group(1)}]'"
    return f"Install the package that provides '{module}' (needed by {dist})."


CORE_DIST = "aworld-rl-core"


def missing_module_hint(dist: str | None, module: str) -> str:
    """The install command for a module that a run of ``dist``'s recipe found missing: the
    extra of ``dist`` that provides it, directly or through an extra of core it pulls in
    (``train = ["aworld-rl-core[trl]"]``: ``pip install 'aworld-rl-mypaper[train]'``), else
    core's own extra (``pip install 'aworld-rl-core[trl]'``)."""
    top = module.split(".")[0]
    own = _extras_providing(dist, top) if dist else set()
    if own:
        return f"Install it with: pip install '{dist}[{_best_extra(own, top)}]'"
    core_extras = _extras_providing(CORE_DIST, top)
    if dist and core_extras:
        try:
            requirements = md.requires(dist) or []
        except md.PackageNotFoundError:
            requirements = []
        wanted = _best_extra(core_extras, top)
        pulling: dict[str, bool] = {}  # dist's extra -> whether it pulls core's preferred one
        for req in requirements:
            extra = re.search(r"extra\s*==\s*['\"]([^'\"]+)['\"]", req)
            pulled = re.match(r"\s*aworld[-_]rl[-_]core\s*\[([^\]]*)\]", req)
            names = {e.strip() for e in pulled.group(1).split(",")} if pulled else set()
            if extra and core_extras & names:
                pulling[extra.group(1)] = pulling.get(extra.group(1), False) or wanted in names
        if pulling:
            best = {e for e, exact in pulling.items() if exact} or set(pulling)
            return f"Install it with: pip install '{dist}[{_best_extra(best, top)}]'"
    if core_extras:
        return f"Install it with: pip install '{CORE_DIST}[{_best_extra(core_extras, top)}]'"
    return install_hint(dist, top)


def _best_extra(extras: set[str], module: str) -> str:
    """The extra named like the module, else one that is not a test extra, else any."""
    if module in extras:
        return module
    plain = sorted(e for e in extras if not e.startswith("test"))
    return (plain or sorted(extras))[0]


def _extras_providing(dist: str, module: str) -> set[str]:
    try:
        requirements = md.requires(dist) or []
    except md.PackageNotFoundError:
        return set()
    wanted, found = _normalise(module), set()
    for req in requirements:
        extra = re.search(r"extra\s*==\s*['\"]([^'\"]+)['\"]", req)
        if extra and _normalise(re.split(r"[\s;\[<>=!~]", req, maxsplit=1)[0]) == wanted:
            found.add(extra.group(1))
    return found


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


CORE_PACKAGE = "aworld_rl_core"
_CALLABLE_KINDS = (
    "datasets",
    "environments",
    "rewards",
    "losses",
    "trainers",
    "parsers",
    "episode_parts",
)


def _mine(reg: Registry, plugin: str) -> list[Entry]:
    return [e for kind in reg.entries.values() for e in kind.values() if e.plugin == plugin]


def check_targets(reg: Registry, plugin: str) -> tuple[list[str], list[str]]:
    """Load every target ``plugin`` registered (and each config, docs and states target) the way
    the registry will; returns (problems, skipped), each a line per entry."""
    problems: list[str] = []
    skipped: list[str] = []
    for entry in _mine(reg, plugin):
        what = f"{entry.kind[:-1]} '{entry.name}'"
        targets = {"target": entry.target}
        for key in ("config", "docs", "states"):
            if isinstance(entry.meta.get(key), str) and ":" in entry.meta[key]:
                targets[key] = entry.meta[key]
        for key, target in targets.items():
            try:
                obj = entry.load(target)
            except PluginError as exc:  # a missing module
                missing = getattr(exc.__cause__, "name", "") or ""
                own = target.partition(":")[0].split(".")[0]
                if missing and missing.split(".")[0] not in (own, plugin, CORE_PACKAGE):
                    skipped.append(f"{what}: {exc}")
                    continue
                problems.append(f"{what} {key} {target!r}: {exc}")
                continue
            except Exception as exc:
                problems.append(f"{what} {key} {target!r}: {type(exc).__name__}: {exc}")
                continue
            if key == "target" and entry.kind in _CALLABLE_KINDS and not callable(obj):
                problems.append(f"{what} {target!r} is a {type(obj).__name__}, not callable")
            if key == "config" and not dataclasses.is_dataclass(obj):
                problems.append(f"{what} config {target!r} is not a dataclass")
        if isinstance(entry, RecipeEntry):
            try:
                from aworld_rl_core.config import list_presets

                if not list_presets(entry.presets):
                    problems.append(f"{what}: no YAML presets at {entry.presets!r}")
            except Exception as exc:
                problems.append(f"{what} presets {entry.presets!r}: {type(exc).__name__}: {exc}")
    return problems, skipped


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


def get_loss(name: str) -> Entry:
    """The registered loss ``name``: ``.load()`` gives it, ``.meta["kind"]`` is token or model."""
    return current().get("losses", name)


def get_trainer(name: str) -> Any:
    return current().get("trainers", name).load()


def trainer_sections() -> tuple[dict[str, type], dict[str, str]]:
    """The registered backends' config sections (see :attr:`Registry.trainer_sections`)."""
    return current().trainer_sections


def get_dataset(name: str) -> Any:
    return current().get("datasets", name).load()


def get_parser(name: str) -> Any:
    """The registered tool-call parser ``name`` (``tooluse.get_parser`` binds its options)."""
    return current().get("parsers", name).load()


def get_episode_part(name: str) -> Entry:
    """The registered part ``name`` of core's BFCL multi-turn environment: ``.load()`` gives its
    factory ``factory(entry, **options)``, ``.meta["role"]`` is protocol, turns, feedback or
    reward."""
    return current().get("episode_parts", name)


def get_smoke_part(name: str) -> Any:
    """The registered smoke part ``name`` (``aworld_rl_core.smoke``): ``fn(device, model, out)``."""
    return current().get("smoke_parts", name).load()


def get_tool_api(name: str) -> Entry:
    """The registered tool API class ``name``: ``.load()`` gives it, ``.meta["stateless"]``."""
    return current().get("tool_apis", name)
