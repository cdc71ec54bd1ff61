"""The tool space: BFCL's offline multi-turn API classes (and a user's own, registered through
core's ``register_tool_apis`` plugin hook), their tools and initial states.

A :class:`ToolSpace` holds the tools (BFCL function docs, with the output fields their
``response`` lists) and a pack of initial states per class. A :class:`Session` is one
trajectory's live environment: core's :class:`~aworld_rl_core.tooluse.bfcl.MultiTurnEpisode`
over the involved classes; it keeps every executed call, so its state can be rebuilt (a failed
sampler call leaves no trace) or forked (the reasoning agent plays a round on a copy).
"""

from __future__ import annotations

import copy
import functools
import inspect
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from importlib import resources
from typing import TYPE_CHECKING, Any, Literal

from aworld_rl_core.tooluse import Call, ToolResult
from aworld_rl_core.tooluse.bfcl.apis import OFFLINE_CLASSES

if TYPE_CHECKING:
    from aworld_rl_core.tooluse.bfcl import BfclEntry

BFCL_CLASSES = tuple(sorted(OFFLINE_CLASSES))
"""The eight offline BFCL multi-turn API classes (BFCL v3/v4 multi-turn categories)."""

ScenarioSource = Literal["builtin", "bfcl"]
SYNTHETIC_CATEGORY = "multi_turn_base"
"""The BFCL category our entries take (all tools visible, every parameter in the query)."""

_ENUM_PATTERNS = (
    re.compile(r"\[Enum\]:\s*\[([^\]]*)\]"),
    re.compile(r"\[Enum\]:\s*([^\[\n]+?)\s*(?:\.\s|$)"),
    re.compile(
        r"(?:Options are|Here are the options|one of)\s*:?\s*([^\n]+?)\s*(?:\.\s|\.$|$)", re.I
    ),
)


def enum_values(description: str) -> tuple[str, ...]:
    """Allowed values a BFCL doc states in a parameter's description (``[Enum]: [...]``,
    ``Options are: a, b``), or ``()``."""
    for pattern in _ENUM_PATTERNS:
        match = pattern.search(description or "")
        if match:
            values = [v.strip().strip("\"'").strip() for v in match.group(1).split(",")]
            values = [v for v in values if v and len(v) <= 40]
            if len(values) >= 2:
                return tuple(values)
    return ()


@dataclass(frozen=True)
class Param:
    """One input parameter of a tool (BFCL types: string, integer, float, boolean, array, dict)."""

    name: str
    type: str
    required: bool
    description: str = ""
    enum: tuple[str, ...] = ()
    items: str | None = None
    default: Any = None


@dataclass(frozen=True)
class Tool:
    """A primitive tool: a public method of a BFCL API class and its doc."""

    name: str
    cls: str
    doc: Mapping[str, Any] = field(repr=False)

    @cached_property
    def params(self) -> dict[str, Param]:
        schema = self.doc.get("parameters") or {}
        required = set(schema.get("required", []))
        out = {}
        for name, spec in (schema.get("properties") or {}).items():
            description = spec.get("description", "")
            enum = tuple(spec.get("enum") or ()) or enum_values(description)
            items = (spec.get("items") or {}).get("type")
            out[name] = Param(
                name,
                spec.get("type", "string"),
                name in required,
                description,
                tuple(str(v) for v in enum),
                items,
                spec.get("default"),
            )
        return out

    @cached_property
    def outputs(self) -> dict[str, Mapping[str, Any]]:
        """Output fields the doc's ``response`` lists (name -> schema)."""
        return dict(((self.doc.get("response") or {}).get("properties")) or {})


def _builtin_scenarios() -> dict[str, list[dict[str, Any]]]:
    text = resources.files("aworld_rl_funreason_mt").joinpath("data/scenarios.json").read_text()
    return json.loads(text)


def _bfcl_scenarios(classes: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    """Distinct initial states of each class in BFCL's ``multi_turn_base`` test entries (a
    contamination risk: these are the test scenarios)."""
    from aworld_rl_core.tooluse.bfcl import load_category

    seen: dict[str, dict[str, dict[str, Any]]] = {c: {} for c in classes}
    for entry in load_category("multi_turn_base"):
        for cls, state in entry.raw.get("initial_config", {}).items():
            if cls in seen:
                seen[cls].setdefault(json.dumps(state, sort_keys=True), state)
    return {c: list(states.values()) or [{}] for c, states in seen.items()}


def registered_classes() -> list[str]:
    """API classes the installed plugins register (core's ``register_tool_apis`` hook)."""
    from aworld_rl_core.tooluse.bfcl.apis import registered_api_classes

    return sorted(registered_api_classes())


def registered_states(cls: str) -> list[dict[str, Any]]:
    """The initial states a registered class came with (``states=``), or one empty state."""
    from aworld_rl_core.registry import resolve
    from aworld_rl_core.tooluse.bfcl.apis import registered_api_classes

    states = registered_api_classes()[cls].meta.get("states") or [{}]
    states = resolve(states) if isinstance(states, str) else states
    return [json.loads(json.dumps(dict(s))) for s in states]


class ToolSpace:
    """The tools of some API classes and initial states to start trajectories from."""

    def __init__(
        self,
        classes: Sequence[str] = BFCL_CLASSES,
        *,
        scenarios: ScenarioSource | Mapping[str, Sequence[Mapping[str, Any]]] = "builtin",
        generated_states: int = 0,
        seed: int = 0,
    ) -> None:
        from aworld_rl_core.tooluse.bfcl import function_docs

        registered = registered_classes()
        unknown = [c for c in classes if c not in BFCL_CLASSES and c not in registered]
        if unknown or not classes:
            raise ValueError(
                f"unknown API classes {unknown}; choose from {', '.join(BFCL_CLASSES)} or a class "
                f"a plugin registers (register_tool_apis; now: {', '.join(registered) or 'none'})"
                if unknown
                else "the tool space needs at least one API class"
            )
        self.classes = tuple(classes)
        self.docs = function_docs(self.classes)
        self.tools: dict[str, Tool] = {
            doc["name"]: Tool(doc["name"], cls, doc)
            for cls in self.classes
            for doc in self.docs[cls]
        }
        if scenarios == "builtin":
            pack = _builtin_scenarios()
        elif scenarios == "bfcl":
            pack = _bfcl_scenarios(self.classes)
        elif isinstance(scenarios, Mapping):
            pack = {k: [dict(s) for s in v] for k, v in scenarios.items()}
        else:
            raise ValueError(f"scenarios must be 'builtin', 'bfcl' or a mapping, got {scenarios!r}")
        self.scenario_source = scenarios if isinstance(scenarios, str) else "custom"
        if generated_states:  # seeded generators add states beyond the pack's
            from aworld_rl_funreason_mt.states import generate_states

            extra = generate_states(self.classes, generated_states, seed=seed)
            pack = {c: [*(pack.get(c) or []), *extra.get(c, [])] for c in self.classes}
        for cls in self.classes:
            if cls in registered and not pack.get(cls):
                pack = {**pack, cls: registered_states(cls)}
        self.scenarios = {c: list(pack.get(c) or [{}]) for c in self.classes}

    def tools_of(self, classes: Iterable[str]) -> list[str]:
        wanted = set(classes)
        return [name for name, tool in self.tools.items() if tool.cls in wanted]

    def docs_of(self, classes: Iterable[str]) -> list[dict[str, Any]]:
        """The BFCL docs of ``classes``' tools, in class order (what a BFCL entry's ``function``
        holds)."""
        return [dict(doc) for cls in classes for doc in self.docs[cls]]

    def owner(self, tool: str) -> str:
        return self.tools[tool].cls

    def initial_config(self, classes: Sequence[str], choice: Mapping[str, int]) -> dict[str, Any]:
        """The initial state of each class from the scenario pack (``choice``: class -> index)."""
        return {
            cls: json.loads(
                json.dumps(self.scenarios[cls][choice.get(cls, 0) % len(self.scenarios[cls])])
            )
            for cls in classes
        }


def bfcl_entry(
    entry_id: str,
    classes: Sequence[str],
    initial_config: Mapping[str, Any],
    functions: Sequence[Mapping[str, Any]],
    *,
    questions: Sequence[Sequence[Mapping[str, Any]]] = ((),),
    ground_truth: Sequence[Sequence[str]] | None = None,
) -> BfclEntry:
    """A BFCL multi-turn entry built in memory (what core's episode and judges take)."""
    from aworld_rl_core.tooluse.bfcl import entry_from_raw

    raw = {
        "id": entry_id,
        "question": [list(turn) for turn in questions],
        "initial_config": dict(initial_config),
        "involved_classes": list(classes),
        "function": [dict(f) for f in functions],
    }
    truth = None if ground_truth is None else [list(turn) for turn in ground_truth]
    return entry_from_raw(raw, ground_truth=truth, category=SYNTHETIC_CATEGORY)


@functools.cache
def mutable_defaults(func: Callable[..., Any] | None) -> dict[str, type]:
    """Parameters of ``func`` whose default is a list, dict or set (name -> its type)."""
    if func is None or func.__name__.startswith("_"):
        return {}
    return {
        p.name: type(p.default)
        for p in inspect.signature(func).parameters.values()
        if isinstance(p.default, (list, dict, set))
    }


class NonDeterministicReplay(RuntimeError):
    """Replaying a session's calls on fresh instances gave different results."""


@dataclass(frozen=True)
class Executed:
    """A call that ran in a session and what it returned."""

    call: Call
    text: str
    ok: bool


class Session:
    """One trajectory's live environment (see the module docstring)."""

    def __init__(
        self,
        classes: Sequence[str],
        initial_config: Mapping[str, Any],
        *,
        entry_id: str = "session",
        history: Sequence[Executed] = (),
    ) -> None:
        self.classes = tuple(classes)
        self.initial_config = json.loads(json.dumps(dict(initial_config)))
        self.entry_id = entry_id
        self.history: list[Executed] = []
        self._episode = self._fresh()
        for item in history:
            self._replay_one(item)

    def _fresh(self) -> Any:
        from aworld_rl_core.tooluse.bfcl import MultiTurnEpisode

        entry = bfcl_entry(self.entry_id, self.classes, self.initial_config, ())
        return MultiTurnEpisode(entry, judge=False)

    def _dispatch(self, call: Call) -> ToolResult:
        # tools keep (and later mutate) the lists and dicts they are given: each run gets its own
        # copy, so a recorded call stays as written (core's dispatcher copies left-out defaults)
        return self._episode.dispatch([copy.deepcopy(call)])[0]

    def _replay_one(self, item: Executed) -> None:
        result = self._dispatch(item.call)
        if result.text != item.text:
            raise NonDeterministicReplay(
                f"{item.call.to_python()} returned {result.text[:120]!r} on replay, "
                f"{item.text[:120]!r} before"
            )
        self.history.append(item)

    @property
    def instances(self) -> Mapping[str, object]:
        return self._episode.instances

    def run(
        self,
        call: Call,
        *,
        keep_failures: bool = True,
        succeeded: Callable[[ToolResult], bool] | None = None,
    ) -> ToolResult:
        """Execute one call. With ``keep_failures=False`` a failed call is undone (the state is
        rebuilt from the calls that succeeded) and left out of the history; ``succeeded``
        decides what failed (default: anything but a clean return)."""
        call = copy.deepcopy(call)
        result = self._dispatch(call)
        ok = result.kind == "ok" if succeeded is None else succeeded(result)
        if ok or keep_failures:
            self.history.append(Executed(call, result.text, ok))
        else:
            self._rebuild()
        return result

    def _rebuild(self) -> None:
        history, self.history = self.history, []
        self._episode.close()
        self._episode = self._fresh()
        for item in history:
            self._replay_one(item)

    def fork(self, entry_id: str | None = None) -> Session:
        """An independent session in the same state (this one's calls replayed on fresh
        instances; raises :class:`NonDeterministicReplay` when a result differs)."""
        return Session(
            self.classes,
            self.initial_config,
            entry_id=entry_id or f"{self.entry_id}-fork",
            history=self.history,
        )

    def close(self) -> None:
        self._episode.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
