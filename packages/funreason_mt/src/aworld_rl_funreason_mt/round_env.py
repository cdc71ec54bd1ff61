"""The environment the reasoning agent plays one round in (core's Environment protocol).

The agent sees the system prompt (the FunReason-MT output format and the primitive tools), the
earlier rounds and the round's user message (the hard query, plus hints while it is being
synthesized). Each response is read with core's ``funreason_mt`` parser: ``<think>`` then
``<tool_call>[f(a=1), ...]</tool_call>`` (executed in a fork of the trajectory's session; the
results come back as one ``tool`` message) or ``<answer>...</answer>`` (ends the round). A
response that breaks the format gets a corrective user message.

With ``inject_error_at=k`` the first call from the agent's k-th on that leaves every API state as
it was (tried on a fork first; with ``error_kind="auth"`` together with the earlier login call
of its class) gets a constructed error response (the dataset's ``error_tool_response``), so the
round shows a recovery. The call is executed all the same: the recorded execution holds it, so a
replay of the conversation (where it runs and returns its real result) reaches the same states.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from aworld_rl_core.environment import Message
from aworld_rl_core.tooluse import Call, ToolResult, signatures_from_tools
from aworld_rl_core.tooluse.bfcl.turns import (
    BfclTurnEnv,
    Feedback,
    ParserProtocol,
    Reply,
    TurnPolicy,
)
from aworld_rl_core.tooluse.bfcl.turns import Reward as RewardPart
from aworld_rl_funreason_mt.space import Session

SYSTEM_TEMPLATE = """\
You are an assistant that solves the user's requests with the tools below, over several turns.
In every response, first think inside <think>...</think>. Then either call tools, writing a \
python list of calls with keyword arguments inside <tool_call>...</tool_call>, for example \
<tool_call>[get_weather(city='Paris'), get_time()]</tool_call>, or, when the request is done, \
reply to the user inside <answer>...</answer>. Tool results come back in the next message.

Available tools:
{tools}"""

ADVANCED_HINT = (
    "Hint: this request amounts to one composite tool, {name}: {description} It is a chain of "
    "the tools you have; call those."
)
REVIEW_MARK = "Hint from a reviewer of an earlier attempt:"


def round_prompt(query: str, tool: Any = None, hints: Sequence[str] = ()) -> str:
    """The reasoning agent's user message while synthesizing: the hard query, the advanced
    tool's description (``Prompt^(1)`` holds ``Des(T_adv)``) and every critic hint so far
    (``Prompt^(k+1) = Prompt^(k) + Error^(k)``)."""
    parts = [query]
    if tool is not None:
        parts.append(ADVANCED_HINT.format(name=tool.name, description=tool.description))
    parts += [f"{REVIEW_MARK} {hint}" for hint in hints]
    return "\n\n".join(parts)


TRANSIENT_ERRORS = (
    "Error during execution: the service timed out before answering; retry the call.",
    "Error during execution: 503 Service Unavailable (temporary); please try again.",
    "Error during execution: connection reset by peer; the request was not processed.",
)
AUTH_ERROR = (
    "Error: User not authenticated (the session expired). Please log in again with {login}, "
    "then retry the call."
)
NOT_FOUND_ERROR = (
    "Error: {param} {value} not found (the record may be stale). Please look it up again with "
    "{lookup}, then retry the call."
)
MISSING_ARGUMENT_ERROR = (
    "Error during execution: {tool}() missing 1 required argument: '{param}' (the request "
    "arrived truncated). Send the call again with every argument."
)
ErrorKind = Literal["transient", "auth", "not_found", "missing_argument"]
ERROR_KINDS: tuple[ErrorKind, ...] = ("transient", "auth", "not_found", "missing_argument")
"""Constructed error responses and their remedies: ``transient`` (a timeout, a 503: retry the
call), ``auth`` (the session expired: log in again with the earlier login call, then retry),
``not_found`` (an id an earlier call returned is not found: repeat that lookup, then retry),
``missing_argument`` (a required argument did not arrive: send the whole call again)."""


ToolDocs = Literal["json", "compact"]


def system_prompt(function_docs: Sequence[Mapping[str, Any]], tool_docs: ToolDocs = "json") -> str:
    """The FunReason-MT system prompt with the tools' BFCL docs as JSON (``compact``: one line
    per tool, its parameters and the first sentence of its description: small models on CPU)."""
    if tool_docs == "compact":
        tools = "\n".join(_compact(doc) for doc in function_docs)
    elif tool_docs == "json":
        tools = json.dumps(list(function_docs), indent=1, ensure_ascii=False)
    else:
        raise ValueError(f"tool_docs must be 'json' or 'compact', got {tool_docs!r}")
    return SYSTEM_TEMPLATE.format(tools=tools)


def _compact(doc: Mapping[str, Any]) -> str:
    params = (doc.get("parameters") or {}).get("properties") or {}
    args = ", ".join(f"{name}: {spec.get('type', 'any')}" for name, spec in params.items())
    text = str(doc.get("description", "")).split("Tool description:", 1)[-1].strip()
    return f"- {doc['name']}({args}): {text.split('. ')[0].rstrip('.')}"


@dataclass(frozen=True)
class ExecutedCall:
    """A call the agent made in the round: its string, the result text, whether it ran
    cleanly, and whether its response was an injected error (then it did not run)."""

    call: str
    result: str
    ok: bool
    injected: bool = False
    kind: str = ""
    """The injected error's kind (``transient``, ``auth``)."""
    remedy: bool = False
    """The login call an ``auth`` error asked for (not part of the trace's calls)."""


@dataclass(frozen=True)
class _RoundEntry:
    """What core's environment reads of an entry: a round is not judged turn by turn."""

    id: str
    ground_truth: None = None


class _RoundEpisode:
    """One round (one user turn) over the trajectory's session, as core's environment drives an
    episode: calls go through the round's :meth:`RoundEnv.execute` (error injection), and the
    round ends once (no verdict here: the synthesizer matches the round afterwards)."""

    num_turns = 1

    def __init__(self, env: RoundEnv) -> None:
        self.env = env
        self.turn = 0

    @property
    def done(self) -> bool:
        return self.turn >= 1

    def dispatch(self, calls: Sequence[Call]) -> list[ToolResult]:
        return [ToolResult(self.env.execute(call), "ok", call) for call in calls]

    def end_turn(self) -> Any:
        from aworld_rl_core.tooluse.bfcl.episode import TurnResult

        self.turn = 1
        return TurnResult(0, 0.0, bool(self.env.calls), False, reason="not judged (a round)")

    def close(self) -> None:
        """The session belongs to the caller (it compares states after)."""


@dataclass(frozen=True)
class RoundProtocol(ParserProtocol):
    """``think_tool_python`` replies (calls or an answer, not both); the opening is the system
    prompt, the earlier rounds and the round's user message; results as one ``tool`` message."""

    messages: tuple[Message, ...] = ()

    def opening(self, env: BfclTurnEnv) -> list[Message]:
        return [dict(m) for m in self.messages]


class RoundFeedback(Feedback):
    """FunReason-MT's format reminder."""

    def format_error(self, env: BfclTurnEnv, reply: Reply) -> list[Message]:
        text = (
            "Your response does not follow the format ("
            + "; ".join(reply.errors[:3])
            + "). Think inside <think>...</think>, then write either <tool_call>[...]"
            "</tool_call> or <answer>...</answer>."
        )
        return [{"role": "user", "content": text}]


class RoundReward(RewardPart):
    """-0.1 per broken reply, paid on the reply; the round's info (steps, format errors, whether
    it answered, the calls that ran cleanly, whether an error was injected)."""

    running = True

    def total(self, env: BfclTurnEnv) -> float:
        return -0.1 * env.state.format_errors

    def info(self, env: BfclTurnEnv, **extra: Any) -> dict[str, Any]:
        return env.info()  # type: ignore[attr-defined]

    def final_info(self, env: BfclTurnEnv) -> dict[str, Any]:
        if env.state.forced_turn_ends:
            return env.info(truncated=True)  # type: ignore[attr-defined]
        return env.info()  # type: ignore[attr-defined]


class RoundEnv(BfclTurnEnv):
    """One round of one trajectory (see the module docstring): core's BFCL multi-turn
    environment over one user turn, with the round's opening, FunReason-MT's format reminder and
    -0.1 per broken reply, and calls executed through the error injection."""

    def __init__(
        self,
        session: Session,
        *,
        system: str,
        history: Sequence[Message],
        user: str,
        function_docs: Sequence[Mapping[str, Any]],
        max_steps_per_turn: int = 8,
        inject_error_at: int | None = None,
        error_text: str = TRANSIENT_ERRORS[0],
        error_kind: ErrorKind = "transient",
        login_tools: Mapping[str, str] | None = None,
        producers: Mapping[str, Mapping[str, Sequence[str]]] | None = None,
    ) -> None:
        policy = TurnPolicy(max_steps_per_turn=max_steps_per_turn)
        self.session = session
        self.system = system
        self.history = [dict(m) for m in history]
        self.user = user
        self.inject_error_at = inject_error_at
        self.error_text = error_text
        if error_kind not in ERROR_KINDS:
            raise ValueError(
                f"error_kind must be one of {', '.join(ERROR_KINDS)}, got {error_kind!r}"
            )
        self.error_kind = error_kind
        self._remedy: Call | None = None
        self.login_tools = dict(login_tools or {})
        """tool -> the login tool of its class (``auth`` errors)."""
        self.producers = {t: dict(p) for t, p in (producers or {}).items()}
        """tool -> parameter -> tools whose output fills it (``not_found`` errors)."""
        signatures = signatures_from_tools([dict(d) for d in function_docs])
        self.required = {
            d["name"]: tuple((d.get("parameters") or {}).get("required") or ())
            for d in function_docs
        }
        opening = (
            {"role": "system", "content": system},
            *self.history,
            {"role": "user", "content": user},
        )
        protocol = RoundProtocol(
            "think_tool_python", {"allow_both": False, "signatures": signatures}, opening
        )
        super().__init__(
            _RoundEntry(session.entry_id),
            protocol=protocol,
            policy=policy,
            feedback=RoundFeedback(),
            reward=RoundReward(),
            new_episode=lambda _entry: _RoundEpisode(self),  # type: ignore[arg-type, return-value]
        )
        self.max_steps_per_turn = max_steps_per_turn
        self.calls: list[ExecutedCall] = []

    def reset(self) -> list[Message]:
        self.calls = []
        self._remedy = None
        return super().reset()

    @property
    def steps(self) -> int:
        return len(self.state.kinds)

    @property
    def answered(self) -> bool:
        return bool(self.state.kinds) and self.state.kinds[-1] == "answer"

    def execute(self, call: Call) -> str:
        """Run one call of the round (an injected error's text in place of its result when one
        is due; the call runs all the same)."""
        due = self.inject_error_at is not None and len(self.calls) >= self.inject_error_at
        error = self._error_for(call) if due and not self.injected else None
        result = self.session.run(call)
        if error is not None and result.ok and not result.failed:
            text, self._remedy = error
            self.calls.append(ExecutedCall(call.to_python(), text, False, True, self.error_kind))
            return text
        remedy = self._remedy is not None and call.to_python() == self._remedy.to_python()
        if remedy:
            self._remedy = None
        self.calls.append(ExecutedCall(call.to_python(), result.text, result.ok, remedy=remedy))
        return result.text

    def _error_for(self, call: Call) -> tuple[str, Call | None] | None:
        """The constructed error for ``call`` and the call its remedy repeats, when the call
        (after that remedy) leaves every state unchanged; else None (the injection waits for a
        later call)."""
        remedy: Call | None = None
        text = self.error_text
        if self.error_kind == "auth":
            remedy = self._earlier_login(call.name)
            if remedy is None:
                return None
            text = AUTH_ERROR.format(login=remedy.name)
        elif self.error_kind == "not_found":
            found = self._earlier_lookup(call)
            if found is None:
                return None
            param, remedy = found
            value = call.arguments[param]
            text = NOT_FOUND_ERROR.format(param=param, value=repr(value), lookup=remedy.name)
        elif self.error_kind == "missing_argument":
            required = [p for p in self.required.get(call.name, ()) if p in call.arguments]
            if not required:
                return None
            text = MISSING_ARGUMENT_ERROR.format(tool=call.name, param=required[0])
        calls = [call] if remedy is None else [remedy, call]
        return (text, remedy) if self._neutral(calls) else None

    def _earlier_login(self, tool: str) -> Call | None:
        login = self.login_tools.get(tool)
        if login is None or login == tool:
            return None
        for item in reversed(self.session.history):
            if item.call.name == login and item.ok:
                return item.call
        return None

    def _earlier_lookup(self, call: Call) -> tuple[str, Call] | None:
        """(parameter, the earlier call whose result holds its value) for an input of ``call``
        that an earlier call produced."""
        for param, producers in sorted(self.producers.get(call.name, {}).items()):
            value = call.arguments.get(param)
            if value is None or isinstance(value, (bool, list, dict)):
                continue
            for item in reversed(self.session.history):
                if item.call.name in producers and item.ok and str(value) in item.text:
                    return param, item.call
        return None

    def _neutral(self, calls: Sequence[Call]) -> bool:
        from aworld_rl_core.tooluse.bfcl.apis import state_differences

        with self.session.fork(f"{self.session.entry_id}-probe") as fork:
            for call in calls:
                if fork.run(call).failed:
                    return False
            return not any(
                state_differences(fork.instances[name], instance)
                for name, instance in self.session.instances.items()
            )

    @property
    def injected(self) -> bool:
        return any(c.injected for c in self.calls)

    def info(self, **extra: Any) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "format_errors": self.format_errors,
            "answered": self.answered,
            "calls": [c.call for c in self.calls if c.ok and not c.remedy],
            "injected": self.injected,
            **extra,
        }
