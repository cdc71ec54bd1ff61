"""Phases I-III for one trajectory, step by step (each step is one pipeline stage).

A :class:`Draft` is one trajectory being made: its API classes and initial state (fixed by its
seed), the live session every round continues, and the round in progress. For each of the N
rounds (MT-v2 4.4):

1. :meth:`Synthesizer.sample` - a target and the directed sampler's trace in the live state;
2. :meth:`Synthesizer.make_tool` - the tooling agent's advanced tool (checked);
3. :meth:`Synthesizer.make_query` - the querying agent's hard query (checked);
4. :meth:`Synthesizer.guard` - the contamination guard;
5. :meth:`Synthesizer.reason` - one attempt of the reasoning agent, playing the round from its
   starting state with the primitive tools; its calls are matched against the trace, then the
   conversation gate replays the kept conversation's calls (every round so far, from the
   initial state) through BFCL's state and response checks; on a failure the critiquing
   agent's hint is the feedback of the next attempt (up to K_max). A kept round moves the live
   session to the state the conversation left, where the next round is sampled.

Then :meth:`Synthesizer.finish` writes the BFCL-shaped entry and applies the replay gate. A
step returns ``None`` when it passed, or raises :class:`Drop` (the record is discarded, with the
reason) or :class:`Retry` (the step runs again with the feedback).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from aworld_rl_core.config import option
from aworld_rl_funreason_mt.contamination import ContaminationIndex
from aworld_rl_funreason_mt.critiquing import critic_messages, parse_hint
from aworld_rl_funreason_mt.graph import ToolGraph
from aworld_rl_funreason_mt.matching import Match, MatchRule, match_round
from aworld_rl_funreason_mt.querying import choose_noise, parse_query, querying_messages
from aworld_rl_funreason_mt.replies import ReplyError
from aworld_rl_funreason_mt.round_env import (
    ERROR_KINDS,
    TRANSIENT_ERRORS,
    ErrorKind,
    RoundEnv,
    round_prompt,
    system_prompt,
)
from aworld_rl_funreason_mt.sampler import (
    DirectedSampler,
    SamplerConfig,
    Trace,
    Walk,
    choose_classes,
    choose_target,
)
from aworld_rl_funreason_mt.space import Session, ToolSpace
from aworld_rl_funreason_mt.tooling import AdvancedTool, parse_advanced_tool, tooling_messages
from aworld_rl_funreason_mt.trajectory import (
    Round,
    Trajectory,
    check_conversation,
    conversation_session,
    replay,
)


def login_tools(graph: ToolGraph) -> dict[str, str]:
    """tool -> the login tool that enables it (a ``state:`` prerequisite whose name says it
    logs in or authenticates): the remedy of an ``auth`` error."""
    from aworld_rl_funreason_mt.grounding import tokens

    out: dict[str, str] = {}
    for tool in sorted(graph.tools):
        for group, sources in sorted(graph.prerequisites(tool).items()):
            if not group.startswith("state"):
                continue
            for source in sorted(sources):
                words = set(tokens(source))
                if words & {"login", "authenticate"}:
                    out.setdefault(tool, source)
    return out


def producers(graph: ToolGraph) -> dict[str, dict[str, tuple[str, ...]]]:
    """tool -> input -> the tools whose output fills it (hard ``param:`` prerequisite groups):
    the lookups a ``not_found`` error's remedy repeats."""
    out: dict[str, dict[str, tuple[str, ...]]] = {}
    for tool in sorted(graph.tools):
        for group, sources in graph.prerequisites(tool).items():
            if group.startswith("param:"):
                out.setdefault(tool, {})[group.split(":", 1)[1]] = tuple(sorted(sources))
    return out


def ground_truth_errors(trace: Trace) -> list[str]:
    """The trace's results that report an error or a failure (core's one classifier)."""
    from aworld_rl_core.tooluse import text_error

    return [c.result for c in trace.calls if text_error(c.result) is not None]


class Drop(Exception):
    """The record is discarded; ``reason`` is the yield counter's key."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason, self.detail = reason, detail


class Retry(Exception):
    """The step runs again with ``feedback`` (the pipeline's Regenerate)."""

    def __init__(self, feedback: str, reason: str) -> None:
        super().__init__(feedback)
        self.feedback, self.reason = feedback, reason


@dataclass(frozen=True, kw_only=True)
class SynthesisConfig:
    """How trajectories are made (the paper gives N, M, K_max and the matcher only partly)."""

    __moved_keys__ = {
        "max_steps": "it is now max_steps_per_turn (a round is one user turn; one cap name in "
        "every environment)"
    }

    rounds: int = option(3, help="N: rounds (user turns) per trajectory (paper: unknown)", ge=1)
    classes_per_trajectory: tuple[int, ...] = option(
        (1, 2),
        help="how many API classes a trajectory may involve (one is drawn per trajectory)",
        ge=1,
    )
    k_max: int = option(
        3, help="K_max: reasoning attempts per round before a discard (HardGen: 3)", ge=1
    )
    match: MatchRule = option(
        "call_set", help="call_set (AST set match), state (BFCL state+response) or both"
    )
    max_steps_per_turn: int = option(
        8, help="reasoning agent's responses per round (user turn) before it is cut", ge=1
    )
    advanced_hint: bool = option(
        True, help="the first prompt holds the advanced tool's description (paper: Des(T_adv))"
    )
    keep_hints: bool = option(
        False, help="keep the synthesis hints in the kept user messages (paper: scaffolding only)"
    )
    require_values_in_query: bool = option(
        True, help="a hard query must carry every input value of the advanced tool"
    )
    error_rate: float = option(
        0.1,
        help="share of rounds where an agent call gets a constructed error response "
        "(dataset's error_tool_response; the paper's rate is unknown; 0 = none)",
        ge=0.0,
        le=1.0,
    )
    error_kinds: tuple[ErrorKind, ...] = option(
        ERROR_KINDS,
        help="kinds of constructed errors, one drawn per error round: transient (retry), auth "
        "(log in again with the earlier login call, then retry), not_found (repeat the "
        "lookup that gave the id, then retry) and missing_argument (send the whole call again)",
    )
    conversation_gate: bool = option(
        True,
        help="keep a round only if the kept conversation's calls, replayed from the "
        "trajectory's start, pass BFCL's state and response checks against the ground truth; "
        "the next round starts from the state they leave (false: the match rule alone, the "
        "next round from the trace's state)",
    )
    allow_format_errors: bool = option(
        False, help="keep a round whose attempt broke the output format once"
    )
    sampler: SamplerConfig = option(factory=SamplerConfig, help="the directed sampler (phase I)")


@dataclass
class Draft:
    """One trajectory in the making (see the module docstring)."""

    key: str
    seed: str
    rng: random.Random
    session: Session
    trajectory: Trajectory
    walk: Walk = field(default_factory=Walk)
    start: Session | None = None
    trace: Trace | None = None
    tool: AdvancedTool | None = None
    query: str = ""
    noise: str = ""
    hints: list[str] = field(default_factory=list)
    attempt: int = 0
    inject_at: int | None = None
    error_kind: ErrorKind = "transient"
    flags: list[dict[str, Any]] = field(default_factory=list)
    detail: str = ""
    """Why the record was dropped, in full (the pipeline counts the short reason)."""
    kept: Trajectory | None = None
    """The finished trajectory, once it passed the replay gate."""

    def summary(self) -> dict[str, Any]:
        """What a finished record keeps: the trajectory, or where and why it stopped."""
        if self.kept is not None:
            return {"trajectory": self.kept.to_dict()}
        return {
            "seed": self.seed,
            "classes": list(self.trajectory.classes),
            "round": self.round,
            "trace": self.trace.to_dict() if self.trace is not None else None,
            "query": self.query,
            "detail": self.detail,
        }

    def need_trace(self) -> Trace:
        if self.trace is None:
            raise RuntimeError("no trace for this round: the sample step must run first")
        return self.trace

    def need_tool(self) -> AdvancedTool:
        if self.tool is None:
            raise RuntimeError("no advanced tool for this round: the tool step must run first")
        return self.tool

    def need_start(self) -> Session:
        if self.start is None:
            raise RuntimeError("no starting state for this round: the sample step must run first")
        return self.start

    @property
    def round(self) -> int:
        """The index of the round in progress."""
        return len(self.trajectory.rounds)

    def close(self) -> None:
        for session in (self.session, self.start):
            if session is not None:
                session.close()


class Synthesizer:
    """The steps of phases I-III over one tool space and graph."""

    def __init__(
        self,
        space: ToolSpace,
        graph: ToolGraph,
        config: SynthesisConfig | None = None,
        *,
        guard: ContaminationIndex | None = None,
        guard_action: Literal["drop", "flag"] = "drop",
        targets: Sequence[str] | None = None,
        seed: int = 0,
    ) -> None:
        self.space = space
        self.graph = graph.restricted(space.tools)
        self.config = config or SynthesisConfig()
        self.sampler = DirectedSampler(self.graph, space, self.config.sampler)
        self.guard_index = guard
        self.guard_action = guard_action
        self.targets = None if targets is None else sorted(set(targets) & set(space.tools))
        self.seed = seed
        self.login_tools = login_tools(self.graph)
        self.producers = producers(self.graph)

    # -- phase I -------------------------------------------------------------------------------

    def draft(self, key: str) -> Draft:
        """A new trajectory: classes and initial state drawn from the record's own seed."""
        seed = f"{self.seed}:{key}"
        rng = random.Random(seed)
        classes = self._classes(rng)
        choice = {c: rng.randrange(len(self.space.scenarios[c])) for c in classes}
        config = self.space.initial_config(classes, choice)
        ident = hashlib.sha256(seed.encode()).hexdigest()[:12]
        session = Session(classes, config, entry_id=f"funreason_mt_{ident}")
        trajectory = Trajectory(ident, classes, config, self.space.docs_of(classes), seed=seed)
        return Draft(key, seed, rng, session, trajectory)

    def _classes(self, rng: random.Random) -> list[str]:
        classes = list(self.space.classes)
        if self.targets is not None:  # HardGen: a trajectory involves a class of a failure tool
            anchor = self.space.owner(rng.choice(self.targets)) if self.targets else classes[0]
            others = [c for c in classes if c != anchor]
            extra = choose_classes(others, [k - 1 for k in self.config.classes_per_trajectory], rng)
            return [c for c in classes if c == anchor or c in extra]
        return choose_classes(classes, self.config.classes_per_trajectory, rng)

    def sample(self, draft: Draft) -> None:
        """Phase I of the round: a target and its trace, executed in the live session."""
        allowed = self.space.tools_of(draft.trajectory.classes)
        pool = None if self.targets is None else [t for t in self.targets if t in allowed]
        target = choose_target(
            self.graph,
            allowed,
            draft.rng,
            pool=pool,
            legality=self.config.sampler.legality,
            weighting=self.config.sampler.target_choice,
        )
        if target is None:
            raise Drop("no_target", f"no reachable target among {draft.trajectory.classes}")
        draft.start = draft.session.fork(f"{draft.session.entry_id}-round{draft.round}")
        draft.trace = self.sampler.sample(
            draft.session, target, draft.rng, allowed=allowed, walk=draft.walk
        )
        if not draft.trace.reached:
            raise Drop("target_unreached", f"{target} after {draft.trace.tools}")
        errors = ground_truth_errors(draft.trace)
        if errors:  # the sampler refuses failed calls; this holds whatever made the trace
            raise Drop("ground_truth_error", errors[0][:160])
        draft.noise = choose_noise(draft.rng)
        draft.hints, draft.attempt, draft.tool, draft.query, draft.flags = [], 0, None, "", []
        draft.inject_at = None
        if draft.rng.random() < self.config.error_rate:
            # the position among the agent's calls, then the kind (each with its remedy)
            draft.inject_at = draft.rng.randrange(len(draft.trace.calls))
            draft.error_kind = draft.rng.choice(list(self.config.error_kinds))

    # -- phase II ------------------------------------------------------------------------------

    async def make_tool(self, draft: Draft, client: Any, feedback: str = "") -> None:
        """The tooling agent: one advanced tool for the round's trace (Retry on a bad reply)."""
        trace = draft.need_trace()
        completion = await client.chat(tooling_messages(trace, self.space, feedback))
        try:
            draft.tool = parse_advanced_tool(completion.text, trace, list(self.space.tools))
        except ReplyError as exc:
            raise Retry(str(exc), "bad_tool") from None

    async def make_query(self, draft: Draft, client: Any, feedback: str = "") -> None:
        """The querying agent: the hard query against the advanced tool (Retry on a bad one)."""
        tool = draft.need_tool()
        completion = await client.chat(querying_messages(tool, draft.noise, feedback))
        intermediate = sorted(set(draft.need_trace().tools[:-1]))
        try:
            draft.query = parse_query(
                completion.text,
                tool,
                intermediate,
                require_values=self.config.require_values_in_query,
            )
        except ReplyError as exc:
            raise Retry(str(exc), "bad_query") from None

    def guard(self, draft: Draft) -> None:
        """Drop (or, with ``guard_action="flag"``, mark) a round that copies BFCL's test set."""
        if self.guard_index is None:
            return
        flags = self.guard_index.check(draft.query, draft.need_trace().call_strings)
        if flags and self.guard_action == "drop":
            flag = flags[0]
            raise Drop(f"contaminated:{flag.kind}", f"{flag.bfcl_id} ({flag.score})")
        draft.flags = [{"kind": f.kind, "bfcl_id": f.bfcl_id, "score": f.score} for f in flags]

    # -- phase III -----------------------------------------------------------------------------

    def round_env(self, draft: Draft) -> RoundEnv:
        """The environment of the next attempt: the round's starting state, the earlier rounds,
        the hard query with the advanced tool's description and the hints so far."""
        start = draft.need_start()
        history = [m for r in draft.trajectory.rounds for m in r.messages]
        tool = draft.tool if self.config.advanced_hint else None
        error = TRANSIENT_ERRORS[draft.rng.randrange(len(TRANSIENT_ERRORS))]
        return RoundEnv(
            start.fork(f"{start.entry_id}-attempt{draft.attempt}"),
            system=system_prompt(draft.trajectory.function_docs),
            history=history,
            user=round_prompt(draft.query, tool, draft.hints),
            function_docs=draft.trajectory.function_docs,
            max_steps_per_turn=self.config.max_steps_per_turn,
            inject_error_at=draft.inject_at,
            error_text=error,
            error_kind=draft.error_kind,
            login_tools=self.login_tools,
            producers=self.producers,
        )

    async def reason(
        self, draft: Draft, reasoner: Any, critic: Any, *, sampling: Mapping[str, Any] | None = None
    ) -> None:
        """One reasoning attempt, played with core's ``engine.play``; Retry with the critic's
        hint while attempts remain, Drop after ``k_max``."""
        from aworld_rl_core.engine import play

        draft.attempt += 1
        env = self.round_env(draft)
        try:
            episode = await play(reasoner, env, sampling=sampling)
            problem = self._judge(draft, env, episode)
            if problem is None:
                self._keep(draft, env, episode)
                return
        finally:
            env.session.close()
        if draft.attempt >= self.config.k_max:
            raise Drop("reasoning_failed", problem)
        hint = await self._hint(draft, critic, env, problem)
        draft.hints.append(hint)
        raise Retry(hint, "mismatch")

    def _judge(self, draft: Draft, env: RoundEnv, episode: Any) -> str | None:
        if getattr(episode, "error", None):
            return f"the agent's call failed: {episode.error}"
        if env.format_errors and not self.config.allow_format_errors:
            return "the response broke the output format"
        if not env.answered:
            return "the round ended without an answer"
        made = [c.call for c in env.calls if c.ok and not c.remedy]
        verdict = match_round(
            self.config.match,
            made=made,
            expected=draft.need_trace().call_strings,
            function_docs=draft.trajectory.function_docs,
            agent=env.session,
            trace_session=draft.session,
            expected_results=[c.result for c in draft.need_trace().calls],
            agent_results=[c.result for c in env.calls if c.ok and not c.remedy],
        )
        if not verdict.ok:
            return verdict.reason
        if self.config.conversation_gate:
            draft.trajectory.rounds.append(self._round(draft, env, episode))
            try:
                gate = check_conversation(draft.trajectory)
            finally:
                draft.trajectory.rounds.pop()
            if not gate:
                return gate.reason
        return None

    async def _hint(self, draft: Draft, critic: Any, env: RoundEnv, problem: str) -> str:
        made = [(c.call, c.result) for c in env.calls]
        messages = critic_messages(
            draft.query, made, draft.need_trace().call_strings, Match(False, problem)
        )
        last = ""
        for _ in range(2):  # one regeneration when the hint gives the answer away
            completion = await critic.chat(messages)
            try:
                return parse_hint(completion.text, draft.need_trace().call_strings)
            except ReplyError as exc:
                last = str(exc)
                messages = [
                    *messages,
                    {"role": "user", "content": f"Rejected: {last}. Write a new hint."},
                ]
        raise Drop("bad_hint", last)

    def _round(self, draft: Draft, env: RoundEnv, episode: Any) -> Round:
        """The round as it would be kept: the bare query, then the attempt's messages."""
        opening = len(env.protocol.opening(env))  # not reset(): that clears the round's calls
        user = draft.query if not self.config.keep_hints else env.user
        messages = [{"role": "user", "content": user}, *episode.messages[opening:]]
        return Round(
            draft.need_trace(),
            draft.need_tool(),
            draft.query,
            messages,
            attempts=draft.attempt,
            hints=list(draft.hints),
            noise=draft.noise,
            error_injected=env.injected,
            flags=list(draft.flags),
        )

    def _keep(self, draft: Draft, env: RoundEnv, episode: Any) -> None:
        draft.trajectory.rounds.append(self._round(draft, env, episode))
        draft.need_start().close()
        draft.start = None
        if self.config.conversation_gate:
            # the next round starts where the kept conversation left the environment
            draft.session.close()
            draft.session = conversation_session(draft.trajectory, entry_id=draft.session.entry_id)

    # -- the end -------------------------------------------------------------------------------

    def finish(self, draft: Draft) -> Trajectory:
        """The trajectory, once its BFCL-shaped entry replays (Drop when it does not)."""
        for n, round_ in enumerate(draft.trajectory.rounds):
            errors = ground_truth_errors(round_.trace)
            if errors and not round_.error_injected:
                raise Drop("ground_truth_error", f"round {n + 1}: {errors[0][:160]}")
        verdict = replay(draft.trajectory.bfcl_entry())
        if not verdict:
            raise Drop("replay_mismatch", verdict.reason)
        if self.config.conversation_gate:
            gate = check_conversation(draft.trajectory)
            if not gate:
                raise Drop("conversation_mismatch", gate.reason)
        return draft.trajectory


Stage = Literal["sample", "tool", "query", "guard", "reason"]
ROUND_STAGES: tuple[Stage, ...] = ("sample", "tool", "query", "guard", "reason")


def stage_names(rounds: int) -> list[str]:
    """``round1/sample``, ..., ``roundN/reason``, ``replay``: a record's stages in order."""
    return [f"round{r + 1}/{s}" for r in range(rounds) for s in ROUND_STAGES] + ["replay"]
