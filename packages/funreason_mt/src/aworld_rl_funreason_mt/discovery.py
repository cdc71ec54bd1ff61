"""Finding the graph's edges and constraints: doc matching, execution probing, LLM judgment.

- **name/type** (:func:`name_type_edges`): an output field of ``T_i`` (from its documented
  ``response``) can fill an input of ``T_j`` of the same class (same name, a qualified name such
  as ``ticket_id`` for ``create_ticket``'s ``id``, or the field named in the input's description),
  or, in any class, an input that takes values a user passes on (text into a message or a tweet,
  a quantity into a calculator: :func:`~aworld_rl_funreason_mt.grounding.flow_feeds`).
- **probing** (:func:`probe`): in fresh instances of each scenario, ``T_j`` is tried alone and
  after each ``T_i``; when it fails (or cannot be filled) alone but succeeds after ``T_i``, the
  edge ``T_i -> T_j`` is kept, in the group of the input ``T_i``'s output filled, else ``state``.
  Every try also records which value sources worked: a source that never did is ruled out, and a
  required input that only tool outputs could fill is *internal*. That is how the schema's
  constraints are refined by execution feedback.
- **LLM judgment** (:func:`llm_edges`): an LLM reads a class's docs and lists prerequisite pairs.

A name/type edge is hard (a prerequisite) when the input it fills is required and internal.
"""

from __future__ import annotations

import random
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aworld_rl_core.tooluse import Call
from aworld_rl_funreason_mt.graph import Constraint, Edge, ToolGraph
from aworld_rl_funreason_mt.grounding import (
    Grounder,
    Output,
    feeds,
    schema_leaves,
    state_source,
    succeeded,
    tokens,
)
from aworld_rl_funreason_mt.replies import ReplyError, extract_json
from aworld_rl_funreason_mt.sampler import unreached_targets
from aworld_rl_funreason_mt.space import Session, Tool, ToolSpace

ID_WORDS = ("id", "token")


def name_type_edges(space: ToolSpace) -> list[Edge]:
    """Soft edges for every output field that can fill another tool's input (see module)."""
    edges: dict[tuple[str, str, str], Edge] = {}
    for source in space.tools.values():
        for leaf in schema_leaves(source):
            for target in space.tools.values():
                if target.name == source.name:
                    continue
                cross = target.cls != source.cls
                for param in target.params.values():
                    how = feeds(leaf, param)
                    if cross and how != "flow":
                        continue  # across classes only values a user passes on (flow_feeds)
                    key = (source.name, target.name, param.name)
                    if how and key not in edges:
                        detail = f"output {leaf.names[-1]} -> input {param.name} ({how})"
                        edges[key] = Edge(
                            source.name,
                            target.name,
                            "name_type",
                            f"param:{param.name}",
                            False,
                            detail,
                        )
    return list(edges.values())


@dataclass
class SourceStats:
    """Tries and successes of each value source, per (tool, param)."""

    tries: dict[tuple[str, str, str], int] = field(default_factory=lambda: defaultdict(int))
    wins: dict[tuple[str, str, str], int] = field(default_factory=lambda: defaultdict(int))
    ok_values: dict[tuple[str, str], list[Any]] = field(default_factory=lambda: defaultdict(list))
    tool_wins: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def record(self, tool: str, sources: Mapping[str, str], arguments: Mapping[str, Any], ok: bool):
        self.tool_wins[tool] += ok
        for param, source in sources.items():
            kind = source.split(":", 1)[0]
            self.tries[tool, param, kind] += 1
            if ok:
                self.wins[tool, param, kind] += 1
                examples = self.ok_values[tool, param]
                value = arguments[param]
                if len(examples) < 5 and value not in examples:
                    examples.append(value)

    def failed(self, tool: str, param: str, min_tries: int) -> tuple[str, ...]:
        """Sources tried ``min_tries`` times without a success, for a tool that did succeed
        (when a tool never ran, no source can be blamed)."""
        if not self.tool_wins.get(tool):
            return ()
        kinds = ("output", "state", "enum", "type")
        return tuple(
            k
            for k in kinds
            if self.tries.get((tool, param, k), 0) >= min_tries
            and not self.wins.get((tool, param, k))
        )

    def worked(self, tool: str, param: str, kind: str) -> bool:
        return bool(self.wins.get((tool, param, kind)))


@dataclass(frozen=True)
class Attempt:
    status: str  # "ok" | "failed" | "ungroundable"
    sources: Mapping[str, str] = field(default_factory=dict)
    output: Output | None = None
    errors: tuple[str, ...] = ()


def _try(
    session: Session,
    tool: Tool,
    outputs: list[Output],
    grounder: Grounder,
    stats: SourceStats,
    seed: str,
    trials: int,
) -> Attempt:
    """Up to ``trials`` grounded calls of ``tool``; failed calls are undone. The values are
    drawn from a generator seeded with ``seed`` and the tool's name, so a tool tried alone and
    after another tool gets the same draws: only the state differs."""
    rng = random.Random(f"{seed}:{tool.name}")
    status = "ungroundable"
    errors: list[str] = []
    for _ in range(trials):
        grounded = grounder.ground(tool, session.instances, outputs, rng)
        if grounded is None:
            continue
        call = Call(tool.name, grounded.arguments)
        result = session.run(call, keep_failures=False, succeeded=succeeded)
        ok = succeeded(result)
        stats.record(tool.name, grounded.sources, grounded.arguments, ok)
        if ok:
            return Attempt("ok", grounded.sources, Output(tool.name, result.value))
        status = "failed"
        errors.append(result.text)
    return Attempt(status, errors=tuple(errors))


_LOGIN = re.compile(r"\blog(?:ged|ging)? ?in\b|\blogin\b")
_AUTH = re.compile(r"\bauthenticat\w*")
_READ_ONLY = frozenset({"get", "status", "check", "display", "view", "list", "find", "search"})


def _stems(text: str) -> list[str]:
    text = " ".join(tokens(text))  # camelCase and snake_case apart, lower-cased
    text = _AUTH.sub(" authenticate ", _LOGIN.sub(" login ", text))
    out = []
    for word in text.split():
        for suffix in ("ing", "ed", "es", "s"):
            if word.endswith("ss") and suffix == "s":
                break
            if word.endswith(suffix) and len(word) - len(suffix) >= 3:
                word = word[: -len(suffix)]
                break
        out.append(word)
    return out


def error_edges(space: ToolSpace, tool: str, errors: Iterable[str]) -> list[Edge]:
    """Prerequisites a tool's error messages name: a tool of the same class whose verb and
    another name word appear in the message ("All doors must be locked" -> ``lockDoors``), or a
    login tool when the message asks to log in. Each is its own group: all are needed."""
    cls = space.owner(tool)
    edges: dict[str, Edge] = {}
    for error in errors:
        said = set(_stems(error))
        asks_login = bool(said & {"login", "authenticate"})
        for other in space.tools_of([cls]):
            words = _stems(other)
            if other == tool or other in edges or _READ_ONLY & set(words):
                continue
            login = asks_login and bool({"login", "authenticate"} & set(words))
            named = (
                not asks_login
                and len(words) >= 2
                and words[0] in said
                and len(said & set(words)) >= 2
            )
            if login or named:
                detail = f"{tool} said: {error[:100]}"
                edges[other] = Edge(other, tool, "probe", f"state:{other}", True, detail)
    return list(edges.values())


@dataclass
class ProbeReport:
    """What probing found: edges and the per-source statistics."""

    edges: list[Edge]
    stats: SourceStats
    alone_ok: set[str]
    calls: int = 0


def _after(
    session: Session,
    space: ToolSpace,
    first: str,
    name: str,
    output: Output,
    grounder: Grounder,
    stats: SourceStats,
    seed: str,
    trials: int,
) -> Attempt:
    """``name`` tried after ``first`` ran once, then (if that failed) after a second ``first``
    call: ``estimate_distance`` needs two different zipcodes."""
    with session.fork() as forked:
        then = _try(forked, space.tools[name], [output], grounder, stats, seed, trials)
        if then.status == "ok":
            return then
        again = _try(forked, space.tools[first], [], grounder, stats, f"{seed}:again", trials)
        if again.status != "ok" or again.output is None:
            return then
        outputs = [output, again.output]
        return _try(forked, space.tools[name], outputs, grounder, stats, seed, trials)


def probe(
    space: ToolSpace,
    *,
    scenarios_per_class: int = 2,
    trials: int = 3,
    seed: int = 0,
) -> ProbeReport:
    """Probe every ordered pair of tools of each class (see the module docstring)."""
    grounder = Grounder(optional_rate=0.0)
    stats = SourceStats()
    edges: dict[tuple[str, str], Edge] = {}
    alone_ok: set[str] = set()
    calls = 0
    for cls in space.classes:
        names = space.tools_of([cls])
        for index in range(min(scenarios_per_class, len(space.scenarios[cls]))):
            config = space.initial_config([cls], {cls: index})
            draws = f"{seed}:{cls}:{index}"
            blocked = []
            for name in names:
                with Session([cls], config, entry_id=f"probe-{cls}") as session:
                    attempt = _try(session, space.tools[name], [], grounder, stats, draws, trials)
                    calls += len(session.history) + trials
                if attempt.status == "ok":
                    alone_ok.add(name)
                else:
                    blocked.append(name)
                    for edge in error_edges(space, name, attempt.errors):
                        edges.setdefault((edge.source, name), edge)
            for first in names:
                with Session([cls], config, entry_id=f"probe-{cls}") as session:
                    done = _try(session, space.tools[first], [], grounder, stats, draws, trials)
                    if done.status != "ok" or done.output is None:
                        continue
                    for name in blocked:
                        if name == first or (first, name) in edges:
                            continue
                        then = _after(
                            session, space, first, name, done.output, grounder, stats, draws, trials
                        )
                        calls += 2 * trials
                        if then.status != "ok":
                            continue
                        fed = [p for p, s in then.sources.items() if s == f"output:{first}"]
                        group = f"param:{fed[0]}" if fed else "state"
                        detail = f"{name} failed alone ({cls} scenario {index}), ran after {first}"
                        edges[first, name] = Edge(first, name, "probe", group, True, detail)
    return ProbeReport(list(edges.values()), stats, alone_ok, calls)


def constraints_from(
    space: ToolSpace, stats: SourceStats | None, *, min_tries: int = 3
) -> dict[str, dict[str, Constraint]]:
    """Each input's constraint (module docstring); without probing, internal comes from the
    schema alone (id/token names and inputs no user-facing source fills)."""
    out: dict[str, dict[str, Constraint]] = {}
    for tool in space.tools.values():
        params = {}
        for param in tool.params.values():
            has_state = state_source(tool, param.name) is not None
            sources = (
                ["output"] + (["state"] if has_state else []) + (["enum"] if param.enum else [])
            )
            if not has_state and not param.enum:
                sources.append("type")
            failed: tuple[str, ...] = ()
            examples: tuple[Any, ...] = ()
            id_like = any(w in param.name.lower() for w in ID_WORDS)
            internal = param.required and id_like and not has_state
            if stats is not None:
                failed = stats.failed(tool.name, param.name, min_tries)
                examples = tuple(stats.ok_values.get((tool.name, param.name), ()))
                user_facing = [s for s in sources if s != "output" and s not in failed]
                internal = param.required and (not user_facing or (id_like and not has_state))
            params[param.name] = Constraint(
                type=param.type,
                required=param.required,
                enum=param.enum,
                internal=internal,
                sources=tuple(s for s in sources if s not in failed),
                ok_values=examples,
                failed_sources=failed,
            )
        out[tool.name] = params
    return out


def harden(
    edges: Iterable[Edge], constraints: Mapping[str, Mapping[str, Constraint]]
) -> list[Edge]:
    """Name/type edges into required internal inputs become prerequisites."""
    out = []
    for edge in edges:
        if edge.method == "name_type" and edge.group.startswith("param:"):
            constraint = constraints.get(edge.target, {}).get(edge.group[6:])
            hard = bool(constraint and constraint.required and constraint.internal)
            edge = Edge(edge.source, edge.target, edge.method, edge.group, hard, edge.detail)
        out.append(edge)
    return out


# ---------------------------------------------------------------------------------------------
# LLM judgment
# ---------------------------------------------------------------------------------------------

LLM_EDGE_SYSTEM = (
    "You analyse the tools of one software API. A tool B depends on a tool A when B cannot "
    "work until A has been called in the same session (A logs in, creates the object B acts "
    "on, or returns a value B needs as input)."
)


def llm_edge_messages(space: ToolSpace, cls: str) -> list[dict[str, str]]:
    """The request asking an LLM for the prerequisite pairs of one class."""
    lines = []
    for name in space.tools_of([cls]):
        tool = space.tools[name]
        params = ", ".join(f"{p.name}: {p.type}" for p in tool.params.values())
        outputs = ", ".join(tool.outputs) or "-"
        lines.append(f"- {name}({params}) -> {outputs}: {tool.doc.get('description', '')[:200]}")
    user = (
        f"Tools of {cls}:\n" + "\n".join(lines) + "\n\nList every dependency as a JSON object "
        '{"edges": [{"before": "<tool A>", "after": "<tool B>", "reason": "<why>"}]}. '
        "Only use the tool names above. Reply with the JSON object only."
    )
    return [{"role": "system", "content": LLM_EDGE_SYSTEM}, {"role": "user", "content": user}]


def parse_llm_edges(text: str, space: ToolSpace, cls: str) -> list[Edge]:
    """Edges from an LLM's reply; pairs naming unknown or cross-class tools are left out."""
    data = extract_json(text)
    items = data.get("edges")
    if not isinstance(items, list):
        raise ReplyError("the reply has no 'edges' list")
    names = set(space.tools_of([cls]))
    edges: dict[tuple[str, str], Edge] = {}
    for item in items:
        if not isinstance(item, dict):
            continue
        before, after = item.get("before"), item.get("after")
        if before in names and after in names and before != after:
            reason = str(item.get("reason", ""))[:200]
            edges[before, after] = Edge(before, after, "llm", "state", True, reason)
    return list(edges.values())


async def llm_edges(space: ToolSpace, client: Any) -> tuple[list[Edge], dict[str, str]]:
    """Ask ``client`` about each class; (edges, class -> error) where a reply was unusable."""
    edges: list[Edge] = []
    errors: dict[str, str] = {}
    for cls in space.classes:
        completion = await client.chat(llm_edge_messages(space, cls))
        try:
            edges += parse_llm_edges(completion.text, space, cls)
        except ReplyError as exc:
            errors[cls] = str(exc)
    return edges, errors


# ---------------------------------------------------------------------------------------------
# The whole graph
# ---------------------------------------------------------------------------------------------


def build_graph(
    space: ToolSpace,
    *,
    probing: bool = True,
    scenarios_per_class: int = 2,
    trials: int = 3,
    seed: int = 0,
    sampling_seeds: int = 3,
    extra_edges: Iterable[Edge] = (),
) -> ToolGraph:
    """The environment-API graph of ``space`` (``extra_edges``: e.g. from :func:`llm_edges`).

    With probing, the directed sampler then aims at every tool from ``sampling_seeds`` seeds
    (scenarios in turn); tools it never reaches are listed in ``meta["unreached"]`` and are not
    chosen as targets (e.g. a tool that always fails in these scenarios)."""
    report = None
    edges = name_type_edges(space)
    if probing:
        report = probe(space, scenarios_per_class=scenarios_per_class, trials=trials, seed=seed)
    constraints = constraints_from(space, report.stats if report else None, min_tries=trials)
    edges = harden(edges, constraints) + (report.edges if report else []) + list(extra_edges)
    meta = {
        "classes": list(space.classes),
        "scenarios": space.scenario_source,
        "probing": probing,
        "scenarios_per_class": scenarios_per_class,
        "trials": trials,
        "seed": seed,
        "probe_calls": report.calls if report else 0,
    }
    tools = {name: tool.cls for name, tool in space.tools.items()}
    graph = ToolGraph(tools, edges, constraints, meta)
    if probing:
        graph.meta["unreached"] = unreached_targets(graph, space, seeds=sampling_seeds, seed=seed)
    return graph
