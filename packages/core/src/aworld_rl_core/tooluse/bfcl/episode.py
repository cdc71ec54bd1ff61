"""One BFCL multi-turn episode: per-episode API instances, safe execution, per-turn judging.

Unlike BFCL's executor, nothing here evaluates text (calls are parsed with ``ast`` and dispatched
to public methods) and no episode state lives in module globals: the instances belong to the
episode and go away with it. The only shared state is a bounded cache of immutable parse results.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from functools import lru_cache
from types import MappingProxyType
from typing import Any, NamedTuple

from aworld_rl_core.tooluse.bfcl.apis import build_instances, state_differences
from aworld_rl_core.tooluse.bfcl.loader import BfclEntry
from aworld_rl_core.tooluse.bfcl.prompts import missed_function_message
from aworld_rl_core.tooluse.bfcl.schemas import to_openai_tools
from aworld_rl_core.tooluse.bfcl.verdict import NO_DETAILS
from aworld_rl_core.tooluse.calls import Call, ToolCallParseError, parse_python_calls
from aworld_rl_core.tooluse.dispatch import BFCL_DENIED_NAMES, CallLimits, Dispatcher, ToolResult

_CACHEABLE_CHARS = 512

BFCL_CALL_LIMITS = CallLimits(
    max_int_digits=100,
    numbers={"precision": (0, 1000), "power.exponent": (-1000, 1000)},
    time_s=10.0,
)
"""Bounds on every call of a BFCL episode (ground truths stay far inside them: precision <= 10,
small exponents). Without them ``power(base=10, exponent=30000000)`` or ``square_root(number=2,
precision=10**7)`` stall an episode for many seconds in C code that no timer can interrupt."""


def _immutable(value: Any) -> bool:
    if isinstance(value, tuple):
        return all(_immutable(v) for v in value)
    return value is None or isinstance(value, (str, int, float, bool))


@lru_cache(maxsize=4096)
def _parse_short_call(text: str) -> Call | None:
    """The single call in ``text`` when every argument is immutable, else None.

    Ground-truth and model call strings repeat a lot across rollouts and entries (712 distinct
    strings among the 4,625 of BFCL's 800 multi-turn ground truths); a bounded cache of
    immutable parse results spares re-parsing them. Calls with list/dict arguments are never
    shared (a tool could mutate them), and failures are left to the dispatcher to report.
    """
    try:
        calls = parse_python_calls(text)
    except ToolCallParseError:
        return None
    if len(calls) != 1:
        return None
    call = calls[0]
    if not (_immutable(call.positional) and all(_immutable(v) for v in call.arguments.values())):
        return None
    return call


def _pre_parsed(item: str | Call) -> str | Call:
    if isinstance(item, str) and len(item) <= _CACHEABLE_CHARS:
        return _parse_short_call(item) or item
    return item


def clear_parse_cache() -> None:
    """Forget cached parse results (benchmarks measure cold parsing with it)."""
    _parse_short_call.cache_clear()


class TurnResult(NamedTuple):
    """How one turn compares with the ground truth.

    For a turn with ground-truth calls, ``score`` is 1.0 when the model made calls, the API states
    match (BFCL's state checker) and every ground-truth result appears among the model's results
    so far (BFCL's unordered response checker). For a turn whose ground truth is empty (the model
    should abstain), ``score`` is 1.0 when the model made no call (BFCL's irrelevance checker) or,
    with ``irrelevance_check=False``, always. ``state_match``/``response_match`` are None where
    BFCL does not check them. Immutable (a named tuple, cheap to build on every turn).
    """

    turn: int
    score: float
    made_calls: bool
    expected_calls: bool
    state_match: bool | None = None
    response_match: bool | None = None
    missing_results: tuple[str, ...] = ()
    state_differences: Mapping[str, Any] = NO_DETAILS
    error_type: str = ""
    reason: str = ""
    ground_truth_errors: tuple[str, ...] = ()
    """Ground-truth results that report an error or a failure (core's one classifier,
    :mod:`aworld_rl_core.tooluse.errors`): BFCL judges them like any result; a data generator
    reads them to refuse ground truth that fails."""

    @property
    def passed(self) -> bool:
        return self.score == 1.0


class MultiTurnEpisode:
    """Run one BFCL multi-turn entry turn by turn.

    ``execute(calls)`` runs call strings (or :class:`Call` objects) against this episode's API
    instances and returns BFCL-rendered result strings; ``end_turn()`` replays the turn's ground
    truth on a twin set of instances and compares. ``judge=False`` skips the twin (execution only).
    Every call is bounded by ``call_limits`` (:data:`BFCL_CALL_LIMITS`): one over a limit gives an
    error result (kind ``over_limit``) and the episode goes on.
    """

    def __init__(
        self,
        entry: BfclEntry,
        *,
        judge: bool = True,
        irrelevance_check: bool = True,
        call_limits: CallLimits = BFCL_CALL_LIMITS,
    ) -> None:
        if not (entry.is_multi_turn or entry.is_agentic):
            raise ValueError(f"{entry.id} is a {entry.category} entry, not a multi-turn one")
        if judge and entry.ground_truth is None:
            raise ValueError(f"{entry.id} has no ground truth; pass judge=False to only execute")
        self.entry = entry
        self.irrelevance_check = irrelevance_check
        self._num_turns = len(entry.turns)
        self.turn = 0
        self.turn_results: list[TurnResult] = []
        self._instances = self._new_instances()
        self._dispatcher: Dispatcher | None = Dispatcher(
            self._instances, deny=BFCL_DENIED_NAMES, call_limits=call_limits
        )
        self._twin: dict[str, object] | None = None
        self._twin_dispatcher: Dispatcher | None = None
        if judge:
            self._twin = self._new_instances()
            self._twin_dispatcher = Dispatcher(
                self._twin, deny=BFCL_DENIED_NAMES, call_limits=call_limits
            )
        self._all_results: Counter[str] = Counter()
        self._turn_calls = 0
        self._closed = False

    def _new_instances(self) -> dict[str, object]:
        entry = self.entry
        return build_instances(
            entry.involved_classes, entry.initial_config_json, long_context=entry.long_context
        )

    # -- what the model sees -----------------------------------------------------------------

    @property
    def num_turns(self) -> int:
        return self._num_turns

    @property
    def done(self) -> bool:
        return self.turn >= self._num_turns

    def _turn_index(self, turn: int | None) -> int:
        index = self.turn if turn is None else turn
        if not 0 <= index < self.num_turns:
            raise IndexError(f"{self.entry.id} has turns 0..{self.num_turns - 1}, not {index}")
        return index

    def function_docs(self, turn: int | None = None) -> list[dict[str, Any]]:
        """BFCL docs of the tools available at ``turn`` (held-out ones from their turn on)."""
        index = self._turn_index(turn)
        docs = list(self.entry.functions)
        for reveal_turn, revealed in sorted(self.entry.missed_functions.items()):
            if reveal_turn <= index:
                docs.extend(revealed)
        return docs

    def tools(self, turn: int | None = None) -> list[dict[str, Any]]:
        """The available tools as OpenAI tool definitions (JSON Schema parameters)."""
        return to_openai_tools(self.function_docs(turn))

    def user_messages(self, turn: int | None = None) -> list[dict[str, Any]]:
        """The user messages opening ``turn``; BFCL's "new functions" message on a reveal turn."""
        index = self._turn_index(turn)
        revealed = self.entry.missed_functions.get(index)
        if revealed and not self.entry.turns[index]:
            return [missed_function_message(revealed)]
        return [dict(m) for m in self.entry.turns[index]]

    @property
    def instances(self) -> MappingProxyType[str, object]:
        """This episode's API instances by class name (read-only view)."""
        return MappingProxyType(self._instances)

    # -- acting ------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"episode {self.entry.id} is closed")
        if self.done:
            raise RuntimeError(f"episode {self.entry.id} has no turn left ({self.num_turns} done)")

    def dispatch(self, calls: Sequence[str | Call]) -> list[ToolResult]:
        """Run calls in this turn; structured results (kind, text). Never raises on bad calls."""
        self._check_open()
        assert self._dispatcher is not None  # _check_open: not closed
        results = self._dispatcher.execute([_pre_parsed(item) for item in calls])
        self._turn_calls += len(results)
        self._all_results.update(r.text for r in results)
        return results

    def execute(self, calls: Sequence[str | Call]) -> list[str]:
        """Run calls in this turn; the result strings as BFCL's executor renders them."""
        return [r.text for r in self.dispatch(calls)]

    def end_turn(self) -> TurnResult:
        """Close the current turn: replay its ground truth on the twin and compare."""
        self._check_open()
        index = self.turn
        made_calls = self._turn_calls > 0
        if self._twin_dispatcher is None or self.entry.ground_truth is None:
            result = TurnResult(index, 0.0, made_calls, False, reason="not judged (judge=False)")
        else:
            expected = list(self.entry.ground_truth[index])
            executed = self._twin_dispatcher.execute([_pre_parsed(c) for c in expected])
            gt_results = [r.text for r in executed]
            result = self._judge_turn(index, expected, gt_results, made_calls)
            errors = tuple(r.text for r in executed if r.failed)
            if errors:
                result = result._replace(ground_truth_errors=errors)
        self.turn_results.append(result)
        self.turn += 1
        self._turn_calls = 0
        return result

    def _judge_turn(
        self, index: int, expected: list[str], gt_results: list[str], made_calls: bool
    ) -> TurnResult:
        if not expected:
            if made_calls and self.irrelevance_check:
                return TurnResult(
                    index,
                    0.0,
                    True,
                    False,
                    error_type="multi_turn:irrelevance_error:decoder_success",
                    reason=f"turn {index}: the model called functions where it should not",
                )
            return TurnResult(index, 1.0, made_calls, False)
        if not made_calls:
            return TurnResult(
                index,
                0.0,
                False,
                True,
                error_type="multi_turn:empty_turn_model_response",
                reason=f"turn {index}: the model made no call",
            )
        differences = {}
        for name, gt_instance in (self._twin or {}).items():
            diff = state_differences(self._instances[name], gt_instance)
            if diff:
                differences[name] = diff
        missing = Counter(gt_results) - self._all_results
        missing_items = tuple(missing.elements())
        state_ok, response_ok = not differences, not missing_items
        error_type, reason = "", ""
        if not state_ok:
            error_type = "multi_turn:instance_state_mismatch"
            reason = f"turn {index}: state of {', '.join(differences)} differs from ground truth"
        elif not response_ok:
            error_type = "multi_turn:execution_response_mismatch"
            reason = f"turn {index}: ground-truth results missing: {list(missing_items)[:3]}"
        return TurnResult(
            index,
            float(state_ok and response_ok),
            True,
            True,
            state_ok,
            response_ok,
            missing_items,
            differences,
            error_type,
            reason,
        )

    # -- lifetime ----------------------------------------------------------------------------

    def close(self) -> None:
        """Drop the API instances (idempotent)."""
        self._closed = True
        self._instances = {}
        self._twin = None
        self._dispatcher = self._twin_dispatcher = None
        self._all_results = Counter()

    def __enter__(self) -> MultiTurnEpisode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
