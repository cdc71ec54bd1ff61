"""Phase I: the directed sampler (MT-v2 section 4.1).

Targets are drawn with weight toward complex tools (prerequisite depth and parameter count;
``target_choice=uniform`` draws alike). Legal tools are those whose prerequisites have been
called (:meth:`ToolGraph.is_legal`). Until the target ``T_a`` has been called, the sampler calls
``T_a`` if it is legal, else the legal tool nearest to ``T_a`` on the graph (ties broken by a
seeded shuffle); after ``T_a`` it goes on, up to ``M`` calls, only with tools that take an
output of the round's calls (data-flow edges, across classes too; ``after_target=random``: any
legal tool). Each call's arguments are
grounded in the live state and earlier outputs (:mod:`grounding`) and executed in the
trajectory's :class:`~aworld_rl_funreason_mt.space.Session`; a call that fails is undone and the
next candidate tried. Everything random comes from one ``random.Random``: a seed fixes the trace.
"""

from __future__ import annotations

import copy
import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from aworld_rl_core.config import option
from aworld_rl_core.tooluse import Call
from aworld_rl_funreason_mt.graph import Legality, ToolGraph, nearest_first
from aworld_rl_funreason_mt.grounding import Grounder, Output, succeeded
from aworld_rl_funreason_mt.space import Session, ToolSpace


@dataclass(frozen=True, kw_only=True)
class SamplerConfig:
    """The directed sampler's knobs (the paper gives no values for M)."""

    calls_per_round: int = option(
        3, help="M: calls per round (paper: unknown; HardGen traces average 3.21 calls)"
    )
    max_calls: int = option(
        8, help="most calls a round may take to reach its target (HardGen: 1-8 calls)"
    )
    continue_after_target: bool = option(
        True, help="after the target, go on up to M calls (paper); false stops at the target"
    )
    after_target: Literal["data_flow", "random"] = option(
        "data_flow",
        help="data_flow: each call after the target takes an input from an output of the "
        "round's calls (the round stays a chain; it ends where none can); random: any legal "
        "tool (the earlier reading)",
    )
    target_choice: Literal["complexity", "uniform"] = option(
        "complexity",
        help="complexity: targets drawn with weight 1 + prerequisite depth + parameter count "
        "(MT-v2 aims at complex tools); uniform: every reachable tool alike",
    )
    legality: Legality = option(
        "groups",
        help="groups: one called tool per prerequisite group; all: every prerequisite called",
    )
    tries_per_step: int = option(4, help="candidate tools executed per step before giving up")
    repeat_penalty: float = option(
        1.0,
        help=(
            "distance added per earlier call of a tool in the round before the target (0: the "
            "paper's strict nearest rule, which can loop on a lookup that returns nothing)"
        ),
    )
    optional_rate: float = option(0.3, help="chance an optional parameter is given")

    def __post_init__(self) -> None:
        if not 1 <= self.calls_per_round <= self.max_calls:
            raise ValueError(
                f"sampler: need 1 <= calls_per_round ({self.calls_per_round}) <= max_calls "
                f"({self.max_calls})"
            )


@dataclass(frozen=True)
class TraceCall:
    """One executed call of a trace: the BFCL call string, its tool, the result text the
    environment returned and where each argument came from."""

    call: str
    tool: str
    result: str
    sources: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Trace:
    """One round's executed calls ``(C_1, E_1, ..., C_M, E_M)``."""

    target: str
    calls: tuple[TraceCall, ...]
    reached: bool
    skipped: tuple[tuple[str, str], ...] = ()

    @property
    def call_strings(self) -> list[str]:
        return [c.call for c in self.calls]

    @property
    def tools(self) -> list[str]:
        return [c.tool for c in self.calls]

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "reached": self.reached,
            "calls": [
                {"call": c.call, "tool": c.tool, "result": c.result, "sources": c.sources}
                for c in self.calls
            ],
            "skipped": [list(s) for s in self.skipped],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trace:
        calls = tuple(
            TraceCall(c["call"], c["tool"], c["result"], dict(c.get("sources", {})))
            for c in data["calls"]
        )
        skipped = tuple((str(name), str(why)) for name, why in data.get("skipped", ()))
        return cls(data["target"], calls, bool(data["reached"]), skipped)


@dataclass
class Walk:
    """What a trajectory has called so far (it carries over between rounds)."""

    called: set[str] = field(default_factory=set)
    outputs: list[Output] = field(default_factory=list)


class DirectedSampler:
    """Samples one round's trace toward a target (see the module docstring)."""

    def __init__(
        self,
        graph: ToolGraph,
        space: ToolSpace,
        config: SamplerConfig | None = None,
        *,
        grounder: Grounder | None = None,
    ) -> None:
        self.graph = graph
        self.space = space
        self.config = config or SamplerConfig()
        self.grounder = grounder or grounder_for(graph, optional_rate=self.config.optional_rate)

    def legal(self, walk: Walk, allowed: Iterable[str]) -> list[str]:
        return self.graph.legal(walk.called, among=allowed, legality=self.config.legality)

    def candidates(
        self,
        legal: Sequence[str],
        target: str,
        reached: bool,
        rng: random.Random,
        repeats: Mapping[str, int] | None = None,
    ) -> list[str]:
        """The order in which this step tries tools (the paper's rule; ``repeats`` counts the
        round's earlier calls per tool, each adding ``repeat_penalty`` to its distance)."""
        order = sorted(legal)
        rng.shuffle(order)
        if reached:
            return order
        penalty = {t: self.config.repeat_penalty * n for t, n in (repeats or {}).items()}
        if target in legal:
            rest = [t for t in order if t != target]
            return [target, *nearest_first(self.graph, rest, target, order, penalty)]
        return nearest_first(self.graph, order, target, order, penalty)

    def sample(
        self,
        session: Session,
        target: str,
        rng: random.Random,
        *,
        allowed: Iterable[str],
        walk: Walk | None = None,
    ) -> Trace:
        """One round toward ``target`` among ``allowed`` tools, executed in ``session``.

        ``walk`` (updated in place) holds the tools called and outputs of earlier rounds.
        """
        cfg = self.config
        walk = walk if walk is not None else Walk()
        pool = sorted(set(allowed))
        if target not in pool:
            raise ValueError(f"target {target!r} is not among the allowed tools")
        calls: list[TraceCall] = []
        skipped: list[tuple[str, str]] = []
        reached = False
        start = len(walk.outputs)
        while True:
            if reached and (len(calls) >= cfg.calls_per_round or not cfg.continue_after_target):
                break
            if not reached and len(calls) >= cfg.max_calls:
                break
            repeats = Counter(c.tool for c in calls)
            flow = reached and cfg.after_target == "data_flow"
            step = self._step(
                session,
                target,
                reached,
                rng,
                pool,
                walk,
                skipped,
                repeats,
                flow_from=start if flow else None,
            )
            if step is None:
                break
            calls.append(step)
            reached = reached or step.tool == target
        return Trace(target, tuple(calls), reached, tuple(skipped))

    def _step(
        self,
        session: Session,
        target: str,
        reached: bool,
        rng: random.Random,
        pool: list[str],
        walk: Walk,
        skipped: list[tuple[str, str]],
        repeats: Mapping[str, int],
        *,
        flow_from: int | None = None,
    ) -> TraceCall | None:
        """One call; with ``flow_from`` (after the target, ``after_target=data_flow``) only a
        tool fed by an output of the round's calls (``walk.outputs[flow_from:]``)."""
        tried = 0
        done = {item.call.to_python() for item in session.history}
        legal = self.legal(walk, pool)
        outputs = walk.outputs
        if flow_from is not None and reached:
            outputs = walk.outputs[flow_from:]
            fed = self.graph.flows_from(o.tool for o in outputs)
            legal = [t for t in legal if t in fed]
        for name in self.candidates(legal, target, reached, rng, repeats):
            if tried >= self.config.tries_per_step:
                break
            tool = self.space.tools[name]
            grounded = self.grounder.ground(tool, session.instances, outputs, rng)
            if grounded is None:
                skipped.append((name, "no value for a required input"))
                continue
            if outputs is not walk.outputs and not any(
                src.startswith("output:") for src in grounded.sources.values()
            ):
                skipped.append((name, "takes no output of the round"))
                continue
            call = Call(name, grounded.arguments)
            if call.to_python() in done:  # the same call again adds nothing to the trace
                skipped.append((name, "repeats an earlier call"))
                continue
            tried += 1
            result = session.run(call, keep_failures=False, succeeded=succeeded)
            if not succeeded(result):
                skipped.append((name, result.text[:160]))
                continue
            walk.called.add(name)
            walk.outputs.append(Output(name, copy.deepcopy(result.value)))
            return TraceCall(call.to_python(), name, result.text, dict(grounded.sources))
        return None


def choose_classes(classes: Sequence[str], sizes: Sequence[int], rng: random.Random) -> list[str]:
    """The API classes of one trajectory: ``rng.choice(sizes)`` of them, in ``classes`` order."""
    k = min(rng.choice(list(sizes)), len(classes))
    picked = set(rng.sample(list(classes), k))
    return [c for c in classes if c in picked]


def choose_target(
    graph: ToolGraph,
    allowed: Iterable[str],
    rng: random.Random,
    *,
    pool: Iterable[str] | None = None,
    legality: Legality = "groups",
    weighting: Literal["complexity", "uniform"] = "complexity",
) -> str | None:
    """A target tool among the reachable ``allowed`` tools the graph's sampling check reached
    (restricted to ``pool``, e.g. HardGen's failure tools, when given), drawn with weight
    :meth:`ToolGraph.complexity` (``weighting="uniform"``: alike); None when none is."""
    allowed = sorted(set(allowed) - set(graph.meta.get("unreached", ())))
    reachable = graph.reachable(legality, among=allowed)
    options = sorted(t for t in allowed if t in reachable and (pool is None or t in set(pool)))
    if not options:
        return None
    if weighting == "uniform":
        return rng.choice(options)
    if weighting != "complexity":
        raise ValueError(f"target weighting must be 'complexity' or 'uniform', got {weighting!r}")
    weights = [graph.complexity(t, legality) for t in options]
    return rng.choices(options, weights=weights, k=1)[0]


def grounder_for(graph: ToolGraph, *, optional_rate: float = 0.3) -> Grounder:
    """The sampler's grounder: the graph's ruled-out sources and internal inputs."""
    skip = {
        (tool, param): c.failed_sources
        for tool, params in graph.constraints.items()
        for param, c in params.items()
        if c.failed_sources
    }
    internal = [
        (tool, param)
        for tool, params in graph.constraints.items()
        for param, c in params.items()
        if c.internal
    ]
    return Grounder(skip=skip, internal=internal, optional_rate=optional_rate)


def unreached_targets(
    graph: ToolGraph, space: ToolSpace, *, seeds: int = 3, seed: int = 0
) -> list[str]:
    """Tools the sampler never reaches when aiming at them alone in their class, over ``seeds``
    tries (one per scenario in turn)."""
    sampler = DirectedSampler(graph, space)
    missed = []
    for name in sorted(graph.tools):
        cls = graph.tools[name]
        allowed = space.tools_of([cls])
        for k in range(seeds):
            rng = random.Random(f"{seed}:check:{name}:{k}")
            with Session([cls], space.initial_config([cls], {cls: k})) as session:
                if sampler.sample(session, name, rng, allowed=allowed).reached:
                    break
        else:
            missed.append(name)
    return missed
