"""Actionable environment augmentation: (API class, method, error text) -> a hint for the model.

The layer sits between BFCL's API classes and the observation the model reads; it never touches
the classes, so the judged results (state and execution results) are BFCL's own. A hint pack is
a YAML or JSON file::

    name: default
    hints:
      - id: fs-nested-path
        category: parameter_constraint        # the generator's error categories
        type: clarify_constraint              # the generator's augmentation types
        class: GorillaFileSystem              # or "*"
        methods: [cd, mkdir]                  # or "*"
        match: "Unsupported path"             # regular expression searched in the error text
        hint: "Pass a single folder name ..."

The first matching hint wins; ``load_hint_pack`` reads packs (the default ships as package data),
``HintPack.merged`` layers a mined pack over the default.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

ERROR_CATEGORIES = (
    "dependency_missing",
    "parameter_constraint",
    "state_prerequisite",
    "format_mismatch",
    "resource_unavailable",
)
AUGMENTATION_TYPES = (
    "clarify_constraint",
    "suggest_prerequisite",
    "explain_dependency",
    "correct_format",
)
DEFAULT_PACK = "default"
_HINT_KEYS = {"id", "category", "type", "class", "methods", "match", "hint"}


class HintPackError(ValueError):
    """A hint pack is malformed (the message names the hint and the field)."""


@dataclass(frozen=True)
class Hint:
    """One rule: where it applies, the error pattern it recognises, and what to tell the model."""

    id: str
    hint: str
    match: str
    api_class: str = "*"
    methods: tuple[str, ...] = ("*",)
    category: str = "parameter_constraint"
    type: str = "clarify_constraint"
    _pattern: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        where = f"hint {self.id!r}"
        if not self.id or not isinstance(self.id, str):
            raise HintPackError("every hint needs a non-empty string 'id'")
        if not isinstance(self.hint, str) or not self.hint.strip():
            raise HintPackError(f"{where}: 'hint' must be non-empty text")
        if self.category not in ERROR_CATEGORIES:
            raise HintPackError(
                f"{where}: category {self.category!r} is not one of {', '.join(ERROR_CATEGORIES)}"
            )
        if self.type not in AUGMENTATION_TYPES:
            raise HintPackError(
                f"{where}: type {self.type!r} is not one of {', '.join(AUGMENTATION_TYPES)}"
            )
        try:
            pattern = re.compile(self.match)
        except (re.error, TypeError) as exc:
            raise HintPackError(
                f"{where}: 'match' is not a valid regular expression: {exc}"
            ) from None
        object.__setattr__(self, "_pattern", pattern)

    def applies(self, api_class: str | None, method: str, error: str) -> bool:
        """Whether this hint is for ``api_class.method`` and recognises ``error``."""
        if self.api_class != "*" and api_class != self.api_class:
            return False
        if "*" not in self.methods and method not in self.methods:
            return False
        return self._pattern.search(error) is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "category": self.category,
            "type": self.type,
            "class": self.api_class,
            "methods": list(self.methods),
            "match": self.match,
            "hint": self.hint,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Hint:
        if not isinstance(data, Mapping):
            raise HintPackError(f"a hint must be a mapping, got {type(data).__name__}")
        unknown = set(data) - _HINT_KEYS
        if unknown:
            raise HintPackError(
                f"hint {data.get('id')!r}: unknown keys {sorted(unknown)} "
                f"(valid: {', '.join(sorted(_HINT_KEYS))})"
            )
        methods = data.get("methods", "*")
        methods = (methods,) if isinstance(methods, str) else tuple(methods)
        return cls(
            id=data.get("id", ""),
            hint=data.get("hint", ""),
            match=data.get("match", ""),
            api_class=data.get("class", "*"),
            methods=methods,
            category=data.get("category", "parameter_constraint"),
            type=data.get("type", "clarify_constraint"),
        )


@dataclass(frozen=True)
class HintPack:
    """An ordered set of hints; ``lookup`` returns the first that applies."""

    name: str
    hints: tuple[Hint, ...] = ()

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for hint in self.hints:
            if hint.id in seen:
                raise HintPackError(f"hint pack {self.name!r}: duplicate hint id {hint.id!r}")
            seen.add(hint.id)

    def lookup(self, api_class: str | None, method: str, error: str) -> Hint | None:
        return next((h for h in self.hints if h.applies(api_class, method, error)), None)

    def merged(self, other: HintPack) -> HintPack:
        """``other``'s hints first (they win), then this pack's hints with other ids."""
        ids = {h.id for h in other.hints}
        kept = tuple(h for h in self.hints if h.id not in ids)
        return HintPack(f"{other.name}+{self.name}", other.hints + kept)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "hints": [h.to_dict() for h in self.hints]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str = "hint pack") -> HintPack:
        if not isinstance(data, Mapping) or not isinstance(data.get("hints"), list):
            raise HintPackError(f"{source}: expected a mapping with a 'hints' list")
        return cls(str(data.get("name", source)), tuple(Hint.from_dict(h) for h in data["hints"]))

    def write(self, path: str | Path) -> Path:
        """Save as YAML (``.yaml``/``.yml``) or JSON (any other suffix)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix in (".yaml", ".yml"):
            import yaml

            text = yaml.safe_dump(self.to_dict(), sort_keys=False, allow_unicode=True, width=100)
        else:
            text = json.dumps(self.to_dict(), indent=2, ensure_ascii=False)
        path.write_text(text, encoding="utf-8")
        return path


def load_hint_pack(source: str | Path = DEFAULT_PACK) -> HintPack:
    """A hint pack by name (``"default"``, shipped with the package) or from a YAML/JSON file.

    Packs are immutable, so each is parsed once per process (files again when they change).
    """
    if isinstance(source, str) and not source.endswith((".yaml", ".yml", ".json")):
        return _shipped_pack(source)
    path = Path(source)
    if not path.is_file():
        raise HintPackError(f"hint pack file '{path}' does not exist")
    stat = path.stat()
    return _file_pack(str(path.resolve()), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=8)
def _shipped_pack(name: str) -> HintPack:
    import yaml

    resource = resources.files("aworld_rl_envtuning") / "hints" / f"{name}.yaml"
    if not resource.is_file():
        raise HintPackError(
            f"no shipped hint pack {name!r} (shipped: {', '.join(shipped_packs())}); "
            "pass a .yaml/.json file path for your own"
        )
    return HintPack.from_dict(yaml.safe_load(resource.read_text("utf-8")), source=name)


@functools.lru_cache(maxsize=32)
def _file_pack(path: str, mtime_ns: int, size: int) -> HintPack:
    import yaml

    text = Path(path).read_text(encoding="utf-8")
    data = json.loads(text) if path.endswith(".json") else yaml.safe_load(text)
    return HintPack.from_dict(data, source=path)


def load_hint_packs(sources: Sequence[str | Path]) -> HintPack:
    """Several packs layered: later ones win on the same id and match first."""
    if not sources:
        return HintPack("empty")
    pack = load_hint_pack(sources[0])
    for source in sources[1:]:
        pack = pack.merged(load_hint_pack(source))
    return pack


def shipped_packs() -> list[str]:
    folder = resources.files("aworld_rl_envtuning") / "hints"
    return sorted(p.name[: -len(".yaml")] for p in folder.iterdir() if p.name.endswith(".yaml"))


class Augmenter:
    """Adds hints to failed tool results; ``enabled=False`` passes results through untouched."""

    def __init__(self, pack: HintPack | None = None, *, enabled: bool = True) -> None:
        self.pack = pack if pack is not None else load_hint_pack()
        self.enabled = enabled
        self.used: list[str] = []

    def hint_for(self, api_class: str | None, method: str, error: str) -> str | None:
        if not self.enabled:
            return None
        hint = self.pack.lookup(api_class, method, error)
        if hint is None:
            return None
        self.used.append(hint.id)
        return hint.hint

    def render(self, api_class: str | None, method: str, text: str, *, failed: bool) -> str:
        """The result text the model sees: the original, plus a hint when one applies."""
        if not failed:
            return text
        hint = self.hint_for(api_class, method, text)
        return text if hint is None else f"{text}\nHint: {hint}"


def revealed_calls(text: str, calls: Iterable[str]) -> list[str]:
    """The calls (BFCL call strings) that ``text`` gives away: it names the function together
    with one of the call's argument values (a string of 2+ characters, a number, a boolean;
    whole words, case-insensitive). Naming a function alone (``ls()``, "look the code up with
    list_all_airports") points at a direction and is allowed."""
    from aworld_rl_core.tooluse import ToolCallParseError, parse_python_calls

    found = []
    for source in calls:
        try:
            parsed = parse_python_calls(source)
        except ToolCallParseError:
            continue
        for call in parsed:
            name = call.name.rpartition(".")[2]
            if _mentions(text, name) and any(_mentions(text, v) for v in _literal_texts(call)):
                found.append(source)
                break
    return found


def _literal_texts(call: Any) -> Iterator[str]:
    stack = [*call.arguments.values(), *call.positional]
    while stack:
        value = stack.pop()
        if isinstance(value, (list, tuple)):
            stack.extend(value)
        elif isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, (bool, int, float)):
            yield repr(value)
        elif isinstance(value, str) and len(value.strip()) >= 2:
            yield value.strip()


def _mentions(text: str, token: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(token)}(?!\w)", text, re.IGNORECASE) is not None


def method_owners(instances: Mapping[str, object] | Iterable[tuple[str, object]]) -> dict[str, str]:
    """Public method name -> class name, later classes winning (the dispatcher's rule)."""
    items = instances.items() if isinstance(instances, Mapping) else instances
    owners: dict[str, str] = {}
    for label, instance in items:
        for name in dir(type(instance)):
            if not name.startswith("_") and callable(getattr(type(instance), name, None)):
                owners[name] = label
    return owners
