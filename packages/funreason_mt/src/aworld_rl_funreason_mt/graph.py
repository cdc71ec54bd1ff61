"""The environment-API graph G = (T, R, P): tools, prerequisite edges, parameter constraints.

An edge ``source -> target`` says ``target`` needs ``source`` first. Edges carry how they were
found (``name_type``: an output field of ``source`` feeds an input of ``target``; ``probe``:
``target`` failed until ``source`` had run; ``llm``: an LLM judged it) and the prerequisite
*group* they belong to: ``param:<name>`` (any tool producing that input) or ``state`` (any tool
that enables ``target``). Hard edges are prerequisites; soft edges only shorten distances.

Legality (MT-v2 section 4.1: ``I(T_i) = 1`` iff ``Prerequisite(T_i)`` is a subset of
``T_called``): with ``legality="groups"`` a tool is legal when every one of its prerequisite
groups holds a called tool (a group of one edge is the paper's rule exactly); ``"all"`` needs
every hard-edge source called (the paper's formula over every edge found).
"""

from __future__ import annotations

import json
from collections import Counter, deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from aworld_rl_core.atomic import write_atomic

Method = Literal["name_type", "probe", "llm"]
Legality = Literal["groups", "all"]
METHODS: tuple[Method, ...] = ("name_type", "probe", "llm")
GRAPH_FORMAT = "funreason_mt.graph/1"


@dataclass(frozen=True)
class Edge:
    """``source -> target``: ``target`` needs ``source`` first (see the module docstring)."""

    source: str
    target: str
    method: Method
    group: str
    hard: bool = True
    detail: str = ""


@dataclass(frozen=True)
class Constraint:
    """What the graph knows about one input parameter (P in the paper).

    ``sources`` lists where values come from, in order of preference (``output:<tool>.<field>``,
    ``state``, ``enum``, ``type``); ``internal`` parameters take only tool outputs (ids, tokens
    a user does not know). Execution feedback fills ``ok_values`` (values seen in successful
    calls while probing) and ``failed_sources`` (sources whose values never worked).
    """

    type: str
    required: bool
    enum: tuple[str, ...] = ()
    internal: bool = False
    sources: tuple[str, ...] = ()
    ok_values: tuple[Any, ...] = ()
    failed_sources: tuple[str, ...] = ()


@dataclass
class ToolGraph:
    """Nodes (tool -> class), edges and constraints; see the module docstring."""

    tools: dict[str, str]
    edges: list[Edge] = field(default_factory=list)
    constraints: dict[str, dict[str, Constraint]] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = {n for e in self.edges for n in (e.source, e.target)} - set(self.tools)
        if unknown:
            raise ValueError(f"edges name tools that are not in the graph: {sorted(unknown)}")
        self._index()

    def _index(self) -> None:
        self._groups: dict[str, dict[str, frozenset[str]]] = {}
        self._succ: dict[str, set[str]] = {t: set() for t in self.tools}
        self._pred: dict[str, set[str]] = {t: set() for t in self.tools}
        grouped: dict[str, dict[str, set[str]]] = {}
        for edge in self.edges:
            if edge.source == edge.target:
                continue
            self._succ[edge.source].add(edge.target)
            self._pred[edge.target].add(edge.source)
            if edge.hard:
                grouped.setdefault(edge.target, {}).setdefault(edge.group, set()).add(edge.source)
        self._groups = {t: {g: frozenset(s) for g, s in gs.items()} for t, gs in grouped.items()}
        self._distances: dict[str, dict[str, int]] = {}
        self._depths: dict[str, dict[str, int]] = {}

    # -- structure ---------------------------------------------------------------------------

    def prerequisites(self, tool: str) -> dict[str, frozenset[str]]:
        """The hard prerequisite groups of ``tool`` (group name -> alternative tools)."""
        return dict(self._groups.get(tool, {}))

    def is_legal(self, tool: str, called: Iterable[str], legality: Legality = "groups") -> bool:
        """Whether ``tool`` may be called once the tools in ``called`` have run."""
        done = set(called)
        groups = self._groups.get(tool, {})
        if legality == "all":
            return all(g <= done for g in groups.values())
        if legality != "groups":
            raise ValueError(f"legality must be 'groups' or 'all', got {legality!r}")
        return all(g & done for g in groups.values())

    def legal(
        self,
        called: Iterable[str],
        *,
        among: Iterable[str] | None = None,
        legality: Legality = "groups",
    ) -> list[str]:
        """Legal tools (sorted), optionally only ``among`` some tools."""
        done = set(called)
        pool = self.tools if among is None else [t for t in among if t in self.tools]
        return sorted(t for t in pool if self.is_legal(t, done, legality))

    def depth(self, tool: str, legality: Legality = "groups") -> int:
        """Prerequisite depth: 0 for a tool with no hard prerequisite, else 1 + the deepest of
        its groups (a group as deep as its shallowest alternative; ``all``: its deepest);
        cycles count as depth 0 where they close."""
        memo: dict[str, int] = getattr(self, "_depths", {}).setdefault(legality, {})

        def walk(name: str, open_: frozenset[str]) -> int:
            if name in memo:
                return memo[name]
            groups = self._groups.get(name, {})
            best = 0
            for group in groups.values():
                inner = [walk(s, open_ | {name}) for s in sorted(group) if s not in open_]
                if inner:
                    best = max(best, 1 + (max(inner) if legality == "all" else min(inner)))
            if not open_:
                memo[name] = best
            return best

        if tool not in self.tools:
            raise KeyError(f"no tool {tool!r} in the graph")
        return walk(tool, frozenset())

    def complexity(self, tool: str, legality: Legality = "groups") -> float:
        """How complex a target is (MT-v2 4.1 aims at complex tools): 1 + its prerequisite
        depth + its number of input parameters."""
        return 1.0 + self.depth(tool, legality) + len(self.constraints.get(tool, {}))

    def flows_from(self, sources: Iterable[str]) -> set[str]:
        """Tools that take an input from an output of one of ``sources`` (data-flow edges:
        those in a ``param:`` group)."""
        done = set(sources)
        return {e.target for e in self.edges if e.source in done and e.group.startswith("param:")}

    def distances_to(self, target: str) -> dict[str, int]:
        """Shortest directed path length from each tool to ``target`` over all edges (hard and
        soft); tools that cannot reach it are absent."""
        if target not in self.tools:
            raise KeyError(f"no tool {target!r} in the graph")
        cached = self._distances.get(target)
        if cached is None:
            cached = {target: 0}
            queue = deque([target])
            while queue:
                node = queue.popleft()
                for prev in sorted(self._pred[node]):
                    if prev not in cached:
                        cached[prev] = cached[node] + 1
                        queue.append(prev)
            self._distances[target] = cached
        return dict(cached)

    def reachable(
        self, legality: Legality = "groups", among: Iterable[str] | None = None
    ) -> set[str]:
        """Tools that can become legal starting from nothing called (a fixpoint)."""
        pool = set(self.tools if among is None else among)
        done: set[str] = set()
        changed = True
        while changed:
            new = {t for t in pool - done if self.is_legal(t, done, legality)}
            changed = bool(new)
            done |= new
        return done

    def restricted(self, tools: Iterable[str]) -> ToolGraph:
        """The subgraph on ``tools`` (edges leaving the set are dropped)."""
        keep = set(tools)
        return ToolGraph(
            {t: c for t, c in self.tools.items() if t in keep},
            [e for e in self.edges if e.source in keep and e.target in keep],
            {t: dict(c) for t, c in self.constraints.items() if t in keep},
            dict(self.meta),
        )

    def merged(self, edges: Iterable[Edge]) -> ToolGraph:
        """A copy with more edges (duplicates of an existing (source, target, method, group)
        are ignored)."""
        seen = {(e.source, e.target, e.method, e.group) for e in self.edges}
        extra = [e for e in edges if (e.source, e.target, e.method, e.group) not in seen]
        return ToolGraph(
            dict(self.tools), [*self.edges, *extra], dict(self.constraints), dict(self.meta)
        )

    # -- figures -----------------------------------------------------------------------------

    def coverage(self) -> dict[str, Any]:
        """Tools, edges by method (and confirmed by more than one), reachable tools."""
        pairs: dict[tuple[str, str], set[str]] = {}
        for e in self.edges:
            pairs.setdefault((e.source, e.target), set()).add(e.method)
        by_method = Counter(m for methods in pairs.values() for m in methods)
        hard_pairs = {(e.source, e.target) for e in self.edges if e.hard}
        figures: dict[str, Any] = {
            "tools": len(self.tools),
            "classes": len(set(self.tools.values())),
            "edges": len(pairs),
            "hard_edges": len(hard_pairs),
            "tools_with_prerequisites": len(self._groups),
            "reachable_groups": len(self.reachable("groups")),
            "reachable_all": len(self.reachable("all")),
        }
        for method in METHODS:
            figures[f"edges_{method}"] = by_method.get(method, 0)
        figures["edges_confirmed"] = sum(len(m) > 1 for m in pairs.values())
        return figures

    # -- files -------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": GRAPH_FORMAT,
            "tools": dict(self.tools),
            "edges": [asdict(e) for e in self.edges],
            "constraints": {
                t: {p: _constraint_dict(c) for p, c in params.items()}
                for t, params in self.constraints.items()
            },
            "meta": dict(self.meta),
            "coverage": self.coverage(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolGraph:
        if data.get("format") != GRAPH_FORMAT:
            raise ValueError(
                f"not a FunReason-MT graph file (format {data.get('format')!r}, expected "
                f"{GRAPH_FORMAT!r}); build one with `aworld-run funreason_mt.graph`"
            )
        constraints = {
            t: {p: _constraint(c) for p, c in params.items()}
            for t, params in data.get("constraints", {}).items()
        }
        return cls(
            dict(data["tools"]),
            [Edge(**e) for e in data.get("edges", [])],
            constraints,
            dict(data.get("meta", {})),
        )

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(self.to_dict(), indent=1, ensure_ascii=False))
        return path

    @classmethod
    def load(cls, path: str | Path) -> ToolGraph:
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(
                f"no graph file at {path}; build one with `aworld-run funreason_mt.graph`"
            )
        return cls.from_dict(json.loads(path.read_text(encoding="utf-8")))


def _constraint_dict(c: Constraint) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(c).items()}


def _constraint(data: Mapping[str, Any]) -> Constraint:
    tuples = {"enum", "sources", "ok_values", "failed_sources"}
    fields: dict[str, Any] = {k: tuple(v) if k in tuples else v for k, v in data.items()}
    return Constraint(**fields)


def nearest_first(
    graph: ToolGraph,
    candidates: Sequence[str],
    target: str,
    tiebreak: Sequence[str],
    penalty: Mapping[str, float] | None = None,
) -> list[str]:
    """``candidates`` ordered by distance to ``target`` (plus ``penalty``; unreachable last);
    equal distances keep the order of ``tiebreak`` (a seeded shuffle)."""
    dist = graph.distances_to(target)
    rank = {t: i for i, t in enumerate(tiebreak)}
    inf = len(graph.tools) + 1
    extra = penalty or {}

    def key(tool: str) -> tuple[float, int, str]:
        return (dist.get(tool, inf) + extra.get(tool, 0.0), rank.get(tool, inf), tool)

    return sorted(candidates, key=key)
