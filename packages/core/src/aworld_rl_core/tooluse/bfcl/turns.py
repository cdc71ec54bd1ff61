"""One BFCL multi-turn environment, built from four small parts.

Every BFCL-shaped multi-turn environment runs the same skeleton: read a reply, give feedback on a
broken format, end the user turn on a reply without calls, execute the calls, render their
results, cap the replies of a turn, judge each turn, and pay a reward. What differs between
papers is only the parts:

- **protocol** (:class:`Protocol`): how a reply is read (a registered parser, or BFCL's
  prompting decoder), how the opening looks and how executed calls come back (one ``tool``
  message of ``{call: result}``, one ``tool`` message per call, a user message of results);
- **turn policy** (:class:`TurnPolicy`): what a broken reply does (feedback, or it ends the turn
  as BFCL's prompting runner ends it), how many replies a turn may take
  (``max_steps_per_turn``) and what the cap does (end the turn; quit the episode, BFCL's force
  quit), and whether calls in an *abstain* turn (empty ground truth) are executed or blocked;
- **feedback** (:class:`Feedback`): the corrective message after a broken reply, each tool
  result's text (hints on failures), a warning prepended to the next turn's user message;
- **reward** (:class:`Reward`): the episode's reward from its state, paid at the end or as the
  increments of a running total (so the rewards of any prefix add up to that prefix's reward),
  and the ``info`` each step carries.

:class:`BfclTurnEnv` is the skeleton; a paper's environment is a configuration of it (core's
``core.bfcl-multi-turn`` and BFCL's prompting protocol are two, in this module's callers). Parts
are registered by name through ``register_episode_parts`` (:func:`episode_part`), so a package
adds its own without touching core. The episode engine drives the result like any environment.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from aworld_rl_core.environment import Message, Step
from aworld_rl_core.tooluse.calls import Call, format_python_call, format_python_calls

if TYPE_CHECKING:
    from aworld_rl_core.tooluse.bfcl.episode import MultiTurnEpisode
    from aworld_rl_core.tooluse.bfcl.loader import BfclEntry
    from aworld_rl_core.tooluse.dispatch import ToolResult

StepKind = Literal["format_error", "answer", "tool_ok", "tool_error", "blocked_call"]


@dataclass(frozen=True)
class Reply:
    """One reply as the protocol read it: whether it followed the format, its calls (in order),
    the format errors, and the parser's own result (for feedback that quotes it)."""

    ok: bool
    calls: tuple[Call, ...] = ()
    errors: tuple[str, ...] = ()
    parsed: Any = None


@dataclass
class EpisodeState:
    """What an episode did so far; the parts read it (and only the skeleton writes it)."""

    turn_scores: list[float] = field(default_factory=list)
    """BFCL's verdict per finished user turn (0 for a blocked or unclean abstain turn)."""
    kinds: list[StepKind] = field(default_factory=list)
    """Every reply's kind, in order."""
    calls_per_turn: list[list[list[str]]] = field(default_factory=lambda: [[]])
    """Per turn, per reply with calls, the calls as python strings (what BFCL judges)."""
    result: list[list[str]] = field(default_factory=lambda: [[]])
    """Per turn, per reply, what BFCL's scorer decodes (the calls as a call list, else the text)."""
    steps_in_turn: int = 0
    forced_turn_ends: int = 0
    force_quit: bool = False
    tool_calls: int = 0
    tool_errors: int = 0
    failures: list[dict[str, Any]] = field(default_factory=list)
    warn_next: bool = False
    valid: bool | None = None
    """The whole-episode verdict, when a reward part asks for it at the end."""
    done: bool = False

    @property
    def format_errors(self) -> int:
        return self.kinds.count("format_error")


def tool_message(pairs: Sequence[tuple[str, str]]) -> Message:
    """The results of one step: a ``tool`` message holding a JSON list of ``{call: result}``."""
    content = json.dumps([{call: result} for call, result in pairs], ensure_ascii=False)
    return {"role": "tool", "content": content}


class Protocol:
    """How replies are read and results come back (subclass or configure; see module doc)."""

    def read(self, text: str) -> Reply:
        raise NotImplementedError

    def opening(self, env: BfclTurnEnv) -> list[Message]:
        from aworld_rl_core.tooluse.bfcl.prompts import with_system_prompt

        episode = env.episode
        return with_system_prompt(episode.user_messages(0), episode.function_docs(0))

    def render(self, env: BfclTurnEnv, calls: Sequence[str], texts: Sequence[str]) -> list[Message]:
        """The observation of one executed reply: one ``tool`` message holding a JSON list of
        ``{call: result}`` (core's default)."""
        return [tool_message(list(zip(calls, texts, strict=True)))]


@dataclass(frozen=True)
class ParserProtocol(Protocol):
    """A registered parser (``think_tool_python``, ``think_json``, ...) with its options."""

    parser: str
    options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from aworld_rl_core.tooluse.parsers import get_parser

        object.__setattr__(self, "_parse", get_parser(self.parser, **self.options))

    def read(self, text: str) -> Reply:
        parsed = self._parse(text)  # type: ignore[attr-defined]
        return Reply(parsed.ok, tuple(parsed.calls), tuple(parsed.errors), parsed)


@dataclass(frozen=True)
class TurnPolicy:
    """What ends a turn (module docstring)."""

    max_steps_per_turn: int = 20
    """Replies a turn may take; what happens after is ``on_cap``."""
    on_cap: Literal["end_turn", "quit"] = "end_turn"
    """``end_turn``: the turn ends at its ``max_steps_per_turn``-th reply (and is judged);
    ``quit``: BFCL's prompting runner, which lets ``max_steps_per_turn`` replies with calls pass
    and force-quits the episode at the next one (the remaining turns are never played)."""
    broken_reply: Literal["feedback", "end_turn"] = "feedback"
    """``feedback``: a reply that breaks the format gets the feedback part's corrective message
    and the turn goes on; ``end_turn``: it ends the turn like an answer (BFCL's runner, where a
    reply that does not decode holds no call)."""
    abstain: Literal["execute", "block"] = "execute"
    """Calls in a turn whose ground truth is empty: ``execute`` (BFCL: judged on state only) or
    ``block`` (nothing runs, the turn ends scoring 0 and the next user message warns)."""
    abstain_credit: Literal["clean", "no_call"] = "no_call"
    """With ``block``: ``clean`` also scores 0 an abstain turn that never got a well-formed reply
    (it ran into the cap); ``no_call``: any turn end without a call earns it, as BFCL's checker."""

    def __post_init__(self) -> None:
        if self.max_steps_per_turn < 1:
            raise ValueError(f"max_steps_per_turn must be >= 1, got {self.max_steps_per_turn}")
        for name, allowed in (
            ("on_cap", ("end_turn", "quit")),
            ("broken_reply", ("feedback", "end_turn")),
            ("abstain", ("execute", "block")),
            ("abstain_credit", ("clean", "no_call")),
        ):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")

    def capped(self, state: EpisodeState) -> bool:
        limit = self.max_steps_per_turn + (1 if self.on_cap == "quit" else 0)
        return state.steps_in_turn >= limit


class Feedback:
    """Core's feedback: a short corrective message, results as they are, no warnings."""

    def format_error(self, env: BfclTurnEnv, reply: Reply) -> list[Message]:
        problems = "; ".join(reply.errors[:3])
        note = (
            f"Your response does not follow the required format ({problems}). Reason first, "
            "then either call tools or give the answer."
        )
        return [{"role": "user", "content": note}]

    def result_text(self, env: BfclTurnEnv, result: ToolResult) -> str:
        return result.text

    def failed(self, result: ToolResult) -> bool:
        """Whether a result counts as a failed call (``tool_error`` step, ``tool_errors``)."""
        return result.kind != "ok"

    def failure(self, env: BfclTurnEnv, result: ToolResult) -> dict[str, Any]:
        """The record of a failed call (``state.failures``: what a hint miner reads)."""
        return {
            "turn": env.episode.turn,
            "method": result.call.name if result.call else "",
            "arguments": dict(result.call.arguments) if result.call else {},
            "error": result.text,
        }

    def next_turn(self, env: BfclTurnEnv, messages: list[Message]) -> list[Message]:
        return messages


class Reward:
    """The episode's reward and every step's ``info`` (core's: reward only at the end)."""

    running: bool = False
    """Pay the increments of :meth:`total` at every step (a truncated rollout's rewards add up
    to its prefix's reward); else :meth:`total` once, at the end."""
    needs_verdict: bool = False
    """Judge the whole episode at its end (``state.valid``)."""

    def total(self, env: BfclTurnEnv) -> float:
        return 0.0

    def info(self, env: BfclTurnEnv, **extra: Any) -> dict[str, Any]:
        return {"turn": env.episode.turn, **extra}

    def final_info(self, env: BfclTurnEnv) -> dict[str, Any]:
        return {"entry_id": env.entry.id, "turn_scores": list(env.state.turn_scores)}


class BfclTurnEnv:
    """One episode of one BFCL multi-turn entry, from parts (module docstring).

    The skeleton reads only the entry's ``id`` and ``ground_truth`` (None: not judged turn by
    turn); ``new_episode(entry)`` gives what it plays in (default: a judged
    :class:`MultiTurnEpisode`), ``on_finish(env)`` runs when the episode ends.
    """

    def __init__(
        self,
        entry: BfclEntry | Any,
        *,
        protocol: Protocol,
        policy: TurnPolicy,
        feedback: Feedback | None = None,
        reward: Reward | None = None,
        new_episode: Callable[[BfclEntry], MultiTurnEpisode] | None = None,
        on_finish: Callable[[BfclTurnEnv], None] | None = None,
    ) -> None:
        self.entry = entry
        self.protocol = protocol
        self.policy = policy
        self.feedback = feedback or Feedback()
        self.reward_part = reward or Reward()
        self._new_episode = new_episode
        self._on_finish = on_finish
        self._episode: MultiTurnEpisode | None = None
        self.state = EpisodeState()
        self._paid = 0.0

    # -- protocol ------------------------------------------------------------------------------

    @property
    def episode(self) -> MultiTurnEpisode:
        if self._episode is None:
            raise RuntimeError("call reset() before step()")
        return self._episode

    def reset(self) -> list[Message]:
        """Fresh API instances and state; the protocol's opening messages."""
        from aworld_rl_core.tooluse.bfcl.episode import MultiTurnEpisode

        self.close()
        make = self._new_episode or MultiTurnEpisode
        self._episode = make(self.entry)
        self.state = EpisodeState()
        self._paid = 0.0
        return self.protocol.opening(self)

    def step(self, model_text: str) -> Step:
        """Consume one reply; never raises on model text."""
        state = self.state
        if self._episode is None:
            raise RuntimeError("call reset() before step()")
        if state.done:
            raise RuntimeError(f"episode {self.entry.id} is over; start a new environment")
        text = model_text if isinstance(model_text, str) else ""
        reply = self.protocol.read(model_text)
        state.steps_in_turn += 1
        calls = list(reply.calls) if reply.ok else []
        state.result[-1].append(format_python_calls(calls) if calls else text)
        if not reply.ok and self.policy.broken_reply == "feedback":
            state.kinds.append("format_error")
            return self._continue(self.feedback.format_error(self, reply))
        if not calls:
            state.kinds.append("format_error" if not reply.ok else "answer")
            return self._end_turn()
        rendered = [format_python_call(c) for c in calls]
        if self.policy.abstain == "block" and self._abstain_turn():
            state.kinds.append("blocked_call")
            state.calls_per_turn[-1].append(rendered)
            state.warn_next = True
            return self._end_turn(blocked=True)
        return self._continue(self._execute(calls, rendered))

    def close(self) -> None:
        if self._episode is not None:
            self._episode.close()
            self._episode = None

    # -- the skeleton --------------------------------------------------------------------------

    def _abstain_turn(self) -> bool:
        """Whether the current turn's ground truth is empty (the model should not act)."""
        truth = self.entry.ground_truth
        return truth is not None and not truth[self.episode.turn]

    def _execute(self, calls: list[Call], rendered: list[str]) -> list[Message]:
        episode, state = self.episode, self.state
        results = episode.dispatch(calls)
        texts = []
        failed_any = False
        for result in results:
            failed = self.feedback.failed(result)
            failed_any |= failed
            state.tool_errors += failed
            if result.is_error:
                state.failures.append(self.feedback.failure(self, result))
            texts.append(self.feedback.result_text(self, result))
        state.tool_calls += len(results)
        state.calls_per_turn[-1].append(rendered)
        state.kinds.append("tool_error" if failed_any else "tool_ok")
        return self.protocol.render(self, rendered, texts)

    def _continue(self, observation: list[Message]) -> Step:
        if self.policy.capped(self.state):
            if self.policy.on_cap == "quit":
                self.state.force_quit = True
                return self._finish()
            self.state.forced_turn_ends += 1
            return self._end_turn(forced=True)
        return Step(observation=observation, reward=self._pay(), info=self.reward_part.info(self))

    def _end_turn(self, *, blocked: bool = False, forced: bool = False) -> Step:
        episode, state = self.episode, self.state
        abstain = self._abstain_turn()
        unclean = forced and abstain and self.policy.abstain_credit == "clean"
        score = episode.end_turn().score
        state.turn_scores.append(0.0 if blocked or unclean else score)
        state.steps_in_turn = 0
        if episode.done:
            return self._finish()
        state.calls_per_turn.append([])
        state.result.append([])
        messages = [dict(m) for m in episode.user_messages()]
        if state.warn_next:
            messages = self.feedback.next_turn(self, messages)
            state.warn_next = False
        extra = {"turn_ended": True, "forced": forced}
        return Step(
            observation=messages, reward=self._pay(), info=self.reward_part.info(self, **extra)
        )

    def _finish(self) -> Step:
        state = self.state
        state.done = True
        if self.reward_part.needs_verdict:
            from aworld_rl_core.tooluse.bfcl.judges import judge_multi_turn

            state.valid = judge_multi_turn(self.entry, state.calls_per_turn).valid
        if self._on_finish is not None:
            self._on_finish(self)
        reward = self._pay(final=True)
        return Step(
            observation=[], reward=reward, done=True, info=self.reward_part.final_info(self)
        )

    def _pay(self, *, final: bool = False) -> float:
        if not (self.reward_part.running or final):
            return 0.0
        total = float(self.reward_part.total(self))
        increment, self._paid = total - self._paid, total
        return float(increment)

    # -- views ---------------------------------------------------------------------------------

    @property
    def paid(self) -> float:
        """The rewards paid so far, summed."""
        return self._paid

    @property
    def live_episode(self) -> MultiTurnEpisode | None:
        """The episode's API instances and judge, None before ``reset`` or after ``close``."""
        return self._episode

    @property
    def calls_per_turn(self) -> list[list[list[str]]]:
        return self.state.calls_per_turn

    @property
    def turn_scores(self) -> list[float]:
        return self.state.turn_scores

    @property
    def format_errors(self) -> int:
        return self.state.format_errors


def turn_policy(entry: Any, **options: Any) -> TurnPolicy:
    """``core.turns``: a :class:`TurnPolicy` from its options."""
    return TurnPolicy(**options)


def feedback(entry: Any) -> Feedback:
    """``core.feedback``: core's :class:`Feedback`."""
    return Feedback()


def build_part(spec: Any, entry: Any, role: str) -> Any:
    """The registered part ``spec`` names (a name, or ``{"name": ..., **options}``) built for
    ``entry``; a part registered with another role is an error naming both."""
    from aworld_rl_core.registry import get_episode_part

    if isinstance(spec, str):
        name, options = spec, {}
    elif isinstance(spec, dict) and isinstance(spec.get("name"), str):
        options = dict(spec)
        name = options.pop("name")
    else:
        raise ValueError(f"{role}: a part's name or {{name: ..., options}}, got {spec!r}")
    registered = get_episode_part(name)
    if registered.meta.get("role") != role:
        raise ValueError(
            f"{role}={name!r} is a registered {registered.meta.get('role')} part, not a {role}"
        )
    return registered.load()(entry, **options)
