"""Recipe configs: frozen dataclasses built from YAML presets and dotted ``key=value`` overrides.

Unknown keys and wrong types are errors that name the key, the expected type and the value
(and the closest valid key).
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import enum
import math
import os
import types
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Literal, NamedTuple, TypeVar, Union

import yaml

from aworld_rl_core.errors import ConfigError

T = TypeVar("T")


def option(
    default: Any = dataclasses.MISSING,
    *,
    help: str,
    factory: Any = None,
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    resumable: bool = False,
    bound_note: str | None = None,
) -> Any:
    """A documented config field: ``lr: float = option(1e-6, help="learning rate", gt=0)``.

    ``ge`` / ``gt`` / ``le`` bound a number (every element of a list of numbers): a value that
    breaks a bound is a :class:`ConfigError` naming the key. Floats are always finite (NaN and
    infinities are refused). ``resumable`` marks a field a ``--resume`` may change (a budget
    such as a number of rounds), besides ``runs.RESUME_MAY_CHANGE``. ``bound_note`` is added
    to a broken bound's error (what to write instead).
    """
    bounds = {k: v for k, v in (("ge", ge), ("gt", gt), ("le", le)) if v is not None}
    metadata: dict[str, Any] = {"help": help}
    if bounds:
        metadata["bounds"] = bounds
    if resumable:
        metadata["resumable"] = True
    if bound_note:
        metadata["bound_note"] = bound_note
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def limit_option(help: str) -> Any:
    """The one "first N" knob of every recipe: ``limit: int | None = limit_option("first N
    questions")``. null (the default) takes all; 0 is an error that says so (it meant "all"
    in some packages before the vocabulary was one)."""
    return option(None, help=f"{help} (null: all)", ge=1, bound_note=LIMIT_NOTE)


LIMIT_NOTE = "null takes all (0 no longer means all: write null, e.g. limit=null)"
RENAMED_TO_LIMIT = "it is now 'limit' (first N per category; null: all), one name in every recipe"
"""A recipe config's ``__moved_keys__`` value for a "first N" knob it used to name otherwise."""


class SectionTable(NamedTuple):
    """The sections a :func:`sections_option` field holds: name -> config class, and the names
    that are known but not usable (name -> why, e.g. two plugins register it)."""

    classes: Mapping[str, type]
    unavailable: Mapping[str, str]


def sections_option(provider: Callable[[], SectionTable], *, help: str) -> Any:
    """A config field holding named sections whose classes ``provider()`` gives at parse time
    (``trainer.sections``: one per registered training backend).

    The field is a ``name -> section`` mapping (every name ``provider`` gives, with its
    defaults unless set), but its sections are addressed as keys of the parent
    (``trainer.verl.dry_run``): in YAML, overrides, ``to_dict`` and ``describe``.
    """

    def defaults() -> dict[str, Any]:
        return {name: cls() for name, cls in provider().classes.items()}

    return dataclasses.field(
        default_factory=defaults, metadata={"help": help, "sections": provider}
    )


def section_field(cls: Any) -> dataclasses.Field | None:
    """The :func:`sections_option` field of config class ``cls`` (None when it has none)."""
    if not dataclasses.is_dataclass(cls):
        return None
    found = [f for f in dataclasses.fields(cls) if "sections" in f.metadata]
    return found[0] if found else None


def section_table(cls: Any) -> SectionTable:
    """The sections config class ``cls`` holds (an empty table when it has none)."""
    f = section_field(cls)
    return f.metadata["sections"]() if f is not None else SectionTable({}, {})


def member_types(cls: Any) -> dict[str, Any]:
    """A config class's keys and their types: :func:`members` for a class."""
    hints = typing.get_type_hints(cls)
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if "sections" in f.metadata:
            out.update(f.metadata["sections"]().classes)
        else:
            out[f.name] = hints[f.name]
    return out


def members(cfg: Any) -> Iterator[tuple[str, Any]]:
    """A config's keys and values: its fields, a :func:`sections_option` field replaced by its
    sections (``("verl", VerlConfig(...))``)."""
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        if "sections" in f.metadata:
            yield from value.items()
        else:
            yield f.name, value


_BOUND_TEXT = {"ge": ">=", "gt": ">", "le": "<="}
_BOUND_OK = {
    "ge": lambda v, b: v >= b,
    "gt": lambda v, b: v > b,
    "le": lambda v, b: v <= b,
}


def bounds_text(f: dataclasses.Field) -> str:
    """A field's bounds as ``>= 1, <= 10`` ("" when it has none)."""
    bounds = f.metadata.get("bounds", {})
    return ", ".join(f"{_BOUND_TEXT[k]} {b:g}" for k, b in bounds.items())


def _check_bounds(f: dataclasses.Field, value: Any, key: str) -> None:
    bounds = f.metadata.get("bounds")
    if not bounds or value is None:
        return
    values = value if isinstance(value, (list, tuple)) else [value]
    for v in values:
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            for kind, bound in bounds.items():
                if not _BOUND_OK[kind](v, bound):
                    note = f.metadata.get("bound_note")
                    tail = f"; {note}" if note else ""
                    raise ConfigError(f"{key}: must be {bounds_text(f)}, got {v!r}{tail}")


def load_config(
    cls: type[T],
    *,
    preset: str | None = None,
    config_file: str | Path | None = None,
    presets: str | None = None,
    overrides: Sequence[str] = (),
) -> T:
    """Build ``cls`` from a preset (by name or path), a config file and ``key=value`` overrides."""
    data: dict[str, Any] = {}
    if preset is not None:
        data = read_yaml(preset_path(presets, preset))
    if config_file is not None:
        data = merge(data, read_yaml(Path(config_file)))
    return from_dict(cls, apply_overrides(data, overrides))


def apply_overrides(data: Mapping[str, Any], overrides: Sequence[str]) -> dict[str, Any]:
    """``data`` with dotted ``key=value`` overrides merged in (values read as YAML)."""
    out = dict(data)
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(
                f"override '{item}' is not key=value (e.g. trainer.learning_rate=1e-6)"
            )
        parsed = parse_yaml(value, f"override '{item}': the value") if value else ""
        out = merge(out, _nest(key.strip().split("."), parsed))
    return out


def looks_like_path(preset: str) -> bool:
    """Whether ``--preset`` names a file rather than a preset: a ``.yaml``/``.yml`` name or a
    name with a directory part (``./x``, ``dir/x``, ``~/x``). A bare name (``demo``) is always a
    preset name, whatever the working directory holds."""
    seps = {"/", os.sep, *([os.altsep] if os.altsep else [])}
    return Path(preset).suffix in (".yaml", ".yml") or any(s in preset for s in seps)


def preset_path(presets: str | None, preset: str) -> Path:
    """A preset given as a file path (:func:`looks_like_path`), or by name from the recipe's
    presets directory."""
    if looks_like_path(preset):
        as_path = Path(preset).expanduser()
        if not as_path.is_file():
            raise ConfigError(f"preset file '{preset}' does not exist (or is not a file)")
        return as_path
    available = list_presets(presets)
    if preset not in available:
        close = difflib.get_close_matches(preset, available, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        file_hint = (
            f"; to use the file '{preset}', give it as ./{preset}" if Path(preset).is_file() else ""
        )
        raise ConfigError(
            f"unknown preset '{preset}'{hint} (available: {', '.join(available) or 'none'})"
            f"{file_hint}"
        )
    return available[preset]


def list_presets(presets: str | None) -> dict[str, Path]:
    """Preset name -> file, from ``"package:relative/dir"`` (package data) or a directory path."""
    if not presets:
        return {}
    if Path(presets).is_dir():
        root: Any = Path(presets)
    else:
        package, _, subdir = presets.partition(":")
        root = resources.files(package).joinpath(subdir)
    if not root.is_dir():
        return {}
    found = {}
    for item in root.iterdir():
        if item.name.endswith((".yaml", ".yml")):
            found[item.name.rsplit(".", 1)[0]] = Path(str(item))
    return dict(sorted(found.items()))


_SafeLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when there
_SafeDumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _UniqueKeyLoader(_SafeLoader):
    """PyYAML's safe loader, refusing a key repeated in one mapping (YAML 1.2 forbids it)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


MAX_CONFIG_BYTES = 1 << 20
"""A config file (or one override value) larger than this is refused before it is parsed: presets
are a few KiB, and reading ``/dev/zero`` or a log file by mistake must fail fast."""
MAX_CONFIG_VALUES = 100_000
"""The most values (mappings, lists and scalars, counting every use of a YAML alias) one config
may expand to: a free-form field cannot hold an alias bomb (``&a [*b, *b, ...]`` nested)."""
MAX_CONFIG_DEPTH = 64


def parse_yaml(text: str, what: str) -> Any:
    """YAML text to data; syntax errors, duplicate keys and configs too large, too deep or
    expanding too far through aliases are one-line ConfigErrors."""
    if len(text) > MAX_CONFIG_BYTES:
        raise ConfigError(
            f"{what} is {len(text):,} characters, over the {MAX_CONFIG_BYTES:,} a config may "
            "hold; pass a small YAML mapping (large data goes in a file a key names)"
        )
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        detail = " ".join(str(exc).split())
        raise ConfigError(f"{what} is not valid YAML: {detail}") from None
    except RecursionError:
        raise ConfigError(f"{what} nests too deeply (over {MAX_CONFIG_DEPTH} levels)") from None
    _check_expansion(data, what)
    return data


def _check_expansion(data: Any, what: str) -> None:
    """Walk ``data`` as the config code will (aliases expanded), stopping at the caps."""
    stack: list[tuple[Any, int]] = [(data, 0)]
    seen = 0
    while stack:
        value, depth = stack.pop()
        seen += 1
        if seen > MAX_CONFIG_VALUES:
            raise ConfigError(
                f"{what} expands to over {MAX_CONFIG_VALUES:,} values (YAML aliases '*name' "
                "repeat a value at every use); write the values out or shrink the config"
            )
        if depth > MAX_CONFIG_DEPTH:
            raise ConfigError(
                f"{what} nests too deeply (over {MAX_CONFIG_DEPTH} levels; a YAML alias that "
                "refers to itself nests forever)"
            )
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
            seen += len(value)  # the keys
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)


def read_yaml(path: Path) -> dict[str, Any]:
    """A YAML file holding a mapping, or a ConfigError saying what is wrong with it."""
    path = Path(path)
    try:
        with path.open("rb") as handle:  # bounded: /dev/zero or a huge file fails fast
            raw = handle.read(MAX_CONFIG_BYTES + 1)
        if len(raw) > MAX_CONFIG_BYTES:
            raise ConfigError(
                f"config file '{path}' is larger than {MAX_CONFIG_BYTES:,} bytes (a config is a "
                "small YAML mapping); is it the right file?"
            )
        text = raw.decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file '{path}' does not exist") from None
    except IsADirectoryError:
        raise ConfigError(f"config file '{path}' is a directory; give a YAML file") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"config file '{path}' is not UTF-8 text (byte {exc.start}); save it as UTF-8"
        ) from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file '{path}': {exc.strerror}") from None
    data = parse_yaml(text, f"config file '{path}'")
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file '{path}' must hold a mapping, not {type(data).__name__}")
    return data


def merge(base: Mapping[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    """Deep-merge mappings; values of ``update`` win. A mapping with index keys merges into a
    list item by item (``stages.0.batch_size=8`` changes the first stage only)."""
    out = dict(base)
    for key, value in update.items():
        current = out.get(key)
        if isinstance(value, Mapping) and isinstance(current, Mapping):
            out[key] = merge(current, value)
        elif _indexed(value) and isinstance(current, list):
            out[key] = _merge_items(current, value, str(key))
        else:
            out[key] = value
    return out


def _indexed(value: Any) -> bool:
    """Whether ``value`` is a non-empty mapping whose keys are all list indices (``{"0": ...}``)."""
    return (
        isinstance(value, Mapping)
        and bool(value)
        and all(isinstance(k, int) or (isinstance(k, str) and k.isdigit()) for k in value)
    )


def _merge_items(items: Sequence[Any], update: Mapping[Any, Any], key: str) -> list[Any]:
    """``items`` with ``update[i]`` merged into item ``i`` (mappings merge, others replace)."""
    out = list(items)
    for index, value in update.items():
        i = _item_index(index, len(out), key)
        if isinstance(value, Mapping) and isinstance(out[i], Mapping):
            out[i] = merge(out[i], value)
        else:
            out[i] = value
    return out


def _item_index(index: Any, length: int, key: str) -> int:
    i = int(index)
    if i >= length:
        raise ConfigError(
            f"{key}.{i}: the list has {length} items (indices 0 to {length - 1}); give the "
            "whole list to change its length"
        )
    return i


def _nest(keys: list[str], value: Any) -> dict[str, Any]:
    return {keys[0]: _nest(keys[1:], value) if len(keys) > 1 else value}


def from_dict(cls: type[T], data: Mapping[str, Any], prefix: str = "", base: Any = None) -> T:
    """Build a (nested) config dataclass, checking keys, types and bounds.

    Keys absent from ``data`` keep their value in ``base`` (default: ``cls()``, the recipe's own
    defaults, which for a nested section are the values its parent sets), so an override
    changes exactly the keys it names.
    """
    if not isinstance(data, Mapping):
        raise ConfigError(f"{prefix.rstrip('.') or 'config'}: expected a mapping, got {data!r}")
    hints = typing.get_type_hints(cls)
    table_field = section_field(cls)
    table = section_table(cls)
    fields = {
        f.name: f
        for f in dataclasses.fields(typing.cast(Any, cls))
        if f.init and f is not table_field
    }
    moved: Mapping[str, str] = getattr(cls, "__moved_keys__", {})
    for key in data:
        if key in moved:
            raise ConfigError(f"{prefix}{key} is not set here: {moved[key]}")
        if key in fields or key in table.classes:
            continue
        if key in table.unavailable:
            raise ConfigError(f"{prefix}{key}: {table.unavailable[key]}")
        raise _unknown_key(prefix, str(key), list(fields), table, table_field)
    if base is None:
        base = _defaults(cls)
    kwargs: dict[str, Any] = {}
    for name in fields:
        if name in data:
            inner = getattr(base, name, None) if base is not None else None
            value = _convert(hints[name], data[name], prefix + name, inner)
            _check_bounds(fields[name], value, prefix + name)
            kwargs[name] = value
    if table_field is not None and any(key in table.classes for key in data):
        held = getattr(base, table_field.name, {}) if base is not None else {}
        parsed = {n: held.get(n) or c() for n, c in table.classes.items()}
        for name, section_cls in table.classes.items():
            if name in data:
                parsed[name] = _convert(section_cls, data[name], prefix + name, parsed[name])
        kwargs[table_field.name] = parsed
    try:
        return dataclasses.replace(base, **kwargs) if base is not None else cls(**kwargs)
    except TypeError as exc:  # a required field without a value
        raise ConfigError(f"{prefix.rstrip('.') or cls.__name__}: {exc}") from None
    except ValueError as exc:  # a __post_init__ check
        raise ConfigError(f"{prefix.rstrip('.') or cls.__name__}: {exc}") from None


def _unknown_key(
    prefix: str,
    key: str,
    fields: list[str],
    table: SectionTable,
    table_field: dataclasses.Field | None,
) -> ConfigError:
    valid = [prefix + name for name in [*fields, *table.classes]]
    close = difflib.get_close_matches(prefix + key, valid, n=1, cutoff=0.5)
    hint = f"; did you mean '{close[0]}'?" if close else f" (valid: {', '.join(valid)})"
    if table_field is not None:
        named = ", ".join(prefix + name for name in table.classes) or "none"
        hint += f"; {table_field.metadata['help']}: {named}"
    return ConfigError(f"unknown config key '{prefix}{key}'{hint}")


def without_keys(cls: type[T], moved: Mapping[str, str], *, name: str) -> type[T]:
    """A config class like ``cls`` without the dotted keys of ``moved`` (their sections are
    narrowed the same way): a recipe whose parts set those values hides them, and a config
    that sets one gets a ConfigError saying ``moved[key]`` (where to set it instead).
    ``rebuild`` turns an instance back into a ``cls``."""
    here = {k: v for k, v in moved.items() if "." not in k}
    hints = typing.get_type_hints(cls)
    fields: list[tuple[str, Any, Any]] = []
    for f in dataclasses.fields(typing.cast(Any, cls)):
        if f.name in here:
            continue
        tp, default, factory = hints[f.name], f.default, typing.cast(Any, f.default_factory)
        inner = {k.split(".", 1)[1]: v for k, v in moved.items() if k.startswith(f"{f.name}.")}
        if inner:
            tp = without_keys(tp, inner, name=f"{name}_{f.name}")
            default, factory = dataclasses.MISSING, tp
        spec = dataclasses.field(default=default, default_factory=factory, metadata=f.metadata)
        fields.append((f.name, tp, spec))
    narrowed = dataclasses.make_dataclass(
        name, fields, frozen=True, kw_only=True, namespace={"__moved_keys__": dict(here)}
    )
    narrowed.__doc__ = cls.__doc__
    return typing.cast("type[T]", narrowed)


def rebuild(cls: type[T], section: Any, values: Mapping[str, Any]) -> T:
    """A ``cls`` from ``section`` (an instance of a ``without_keys`` class) plus the dotted
    ``values`` of the keys it lacks (checked like any config)."""
    data = to_dict(section)
    for key, value in values.items():
        data = merge(data, _nest(key.split("."), value))
    return from_dict(cls, data)


def _defaults(cls: type) -> Any:
    """``cls()`` with every default, or None when a field is required."""
    try:
        return cls()
    except TypeError:
        return None


def _convert(tp: Any, value: Any, key: str, base: Any = None) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any:
        return value
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        for arg in (a for a in args if a is not type(None)):
            try:
                return _convert(arg, value, key, base)
            except ConfigError:
                continue
        raise _type_error(key, tp, value)
    if origin is Literal:
        if value in args:
            return value
        raise ConfigError(f"{key}: expected one of {', '.join(map(repr, args))}, got {value!r}")
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if value is None:  # merged over the preset's section, null would reset it to defaults
            raise ConfigError(
                f"{key}=null: a config section cannot be null; leave it out to keep the "
                f"preset's values, or set its keys ({key}.<key>=...)"
            )
        inner = base if isinstance(base, tp) else None
        return from_dict(tp, value, key + ".", inner)
    if origin in (list, tuple, Sequence) or tp in (list, tuple):
        item_tp = args[0] if args else Any
        if _indexed(value) and isinstance(base, (list, tuple)):  # stages.0.x=... over defaults
            update = {_item_index(i, len(base), key): v for i, v in value.items()}
            items = [
                _convert(item_tp, update[i], f"{key}.{i}", item) if i in update else item
                for i, item in enumerate(base)
            ]
            return tuple(items) if origin is tuple or tp is tuple else items
        if isinstance(value, str) or not isinstance(value, (list, tuple)):
            raise _type_error(key, tp, value)
        items = [_convert(item_tp, v, f"{key}[{i}]") for i, v in enumerate(value)]
        return tuple(items) if origin is tuple or tp is tuple else items
    if origin in (dict, Mapping) or tp is dict:
        if not isinstance(value, Mapping):
            raise _type_error(key, tp, value)
        val_tp = args[1] if args else Any
        return {str(k): _convert(val_tp, v, f"{key}.{k}") for k, v in value.items()}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(value)
        except ValueError:
            raise _type_error(key, tp, value) from None
    return _scalar(tp, value, key)


def _scalar(tp: Any, value: Any, key: str) -> Any:
    if tp is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false", "yes", "no", "1", "0"):
            return value.lower() in ("true", "yes", "1")
    elif tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str):
            try:
                return int(value)
            except ValueError:
                pass
    elif tp is float:
        number: float | None = None
        if isinstance(value, (int, float, str)) and not isinstance(value, bool):
            with contextlib.suppress(ValueError, OverflowError):
                number = float(value)
        if number is not None:
            if not math.isfinite(number):
                raise ConfigError(f"{key}: expected a finite float, got {value!r}")
            return number
    elif tp is str:
        if isinstance(value, str):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
    elif tp is Path:
        if isinstance(value, (str, Path)):
            return Path(value)
    else:
        raise ConfigError(f"{key}: unsupported config type {tp!r}")
    raise _type_error(key, tp, value)


def _type_error(key: str, tp: Any, value: Any) -> ConfigError:
    return ConfigError(f"{key}: expected {type_name(tp)}, got {value!r}")


def type_name(tp: Any) -> str:
    """A short readable name of a config field type."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (Union, types.UnionType):
        return " | ".join(type_name(a) for a in args)
    if origin is Literal:
        return " | ".join(repr(a) for a in args)
    if origin is not None:
        inner = ", ".join(type_name(a) for a in args if a is not Ellipsis)
        return f"{getattr(origin, '__name__', str(origin))}[{inner}]"
    if tp is type(None):
        return "None"
    return getattr(tp, "__name__", str(tp))


def to_dict(cfg: Any) -> dict[str, Any]:
    """A plain, YAML-ready dict of a config (tuples become lists, paths strings)."""

    def plain(value: Any) -> Any:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {name: plain(member) for name, member in members(value)}
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, Path):
            return str(value)
        if isinstance(value, enum.Enum):
            return value.value
        return value

    return plain(cfg)


def to_yaml(cfg: Any) -> str:
    return yaml.dump(to_dict(cfg), Dumper=_SafeDumper, sort_keys=False)


@dataclasses.dataclass(frozen=True)
class FieldDoc:
    key: str
    type: str
    default: Any
    help: str
    bounds: str = ""
    resumable: bool = False
    bound_note: str = ""


def _section_items(tp: Any) -> Any:
    """The item class of a list / tuple of config sections (None for any other type)."""
    args = [a for a in typing.get_args(tp) if a is not Ellipsis]
    if typing.get_origin(tp) in (list, tuple) and len(args) == 1:
        item = args[0]
        if isinstance(item, type) and dataclasses.is_dataclass(item):
            return item
    return None


def describe(cls: type, prefix: str = "", defaults: Any = None) -> Iterator[FieldDoc]:
    """Every leaf field of a config class: dotted key, type, default and help.

    A list of sections (``stages``) is listed item by item (``stages.0.batch_size``), the keys
    an override addresses them by.

    Defaults are the recipe's own: a nested section shows the values its parent sets (a
    ``paper`` model name), not the nested class's generic defaults.
    """
    if defaults is None:
        try:
            defaults = cls()
        except TypeError:  # required fields: fall back to per-field defaults
            defaults = None
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        if "sections" in f.metadata:
            held = getattr(defaults, f.name, {}) if defaults is not None else {}
            for name, section_cls in f.metadata["sections"]().classes.items():
                yield from describe(section_cls, f"{prefix}{name}.", held.get(name))
            continue
        if defaults is not None:
            default = getattr(defaults, f.name)
        elif f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = "(required)"
        if isinstance(tp, type) and dataclasses.is_dataclass(tp):
            nested = default if dataclasses.is_dataclass(default) else None
            yield from describe(tp, f"{prefix}{f.name}.", nested)
            continue
        item_tp = _section_items(tp)
        if item_tp is not None and isinstance(default, (list, tuple)) and default:
            yield FieldDoc(
                prefix + f.name,
                type_name(tp),
                f"{len(default)} items, below",
                f.metadata.get("help", ""),
            )
            for i, item in enumerate(default):
                yield from describe(item_tp, f"{prefix}{f.name}.{i}.", item)
            continue
        yield FieldDoc(
            prefix + f.name,
            type_name(tp),
            to_dict(default),
            f.metadata.get("help", ""),
            bounds_text(f),
            bool(f.metadata.get("resumable")),
            str(f.metadata.get("bound_note", "")),
        )
