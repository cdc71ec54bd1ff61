"""Judge model outputs on BFCL entries with BFCL's verdicts.

``judge_single_turn`` decodes the output with our literal-only parser (never BFCL's python
decoder, which evaluates operators and accepts bare names; Java and JavaScript answers go through
BFCL's own tree-sitter decoders, which only read text) and applies the native AST checker;
``judge_multi_turn`` replays the calls through :class:`MultiTurnEpisode`.

Where verdicts can differ from bfcl-eval 2026.3.23 (none of these occur in BFCL's ground truth or
in the cross-checked corruptions): an argument that is not a literal (a bare name such as
``city=London``, an expression such as ``2*3``, a nested call) fails decoding here, while BFCL's
decoder turns names into strings and evaluates expressions; ``+5`` is 5 here and -5 in BFCL's
decoder; a parameter of a type BFCL's checker does not know fails here instead of raising. In
multi-turn, a turn holding only empty steps (``[[], []]``) counts as no call here, as in BFCL's
eval runner (which drops empty steps) but not in its bare checker.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from aworld_rl_core.tooluse.bfcl.ast_checker import ast_check
from aworld_rl_core.tooluse.bfcl.episode import MultiTurnEpisode
from aworld_rl_core.tooluse.bfcl.framing import decode_single_turn
from aworld_rl_core.tooluse.bfcl.loader import (
    RELEVANCE_CATEGORIES,
    SINGLE_TURN_CATEGORIES,
    BfclEntry,
    language_of,
)
from aworld_rl_core.tooluse.bfcl.verdict import NO_DETAILS, Verdict
from aworld_rl_core.tooluse.calls import (
    Call,
    ToolCallParseError,
    bind_positional,
    signatures_from_tools,
)

Positional = Literal["drop", "bind", "reject"]
_JUDGED = frozenset(SINGLE_TURN_CATEGORIES + RELEVANCE_CATEGORIES)


def _as_decoded(
    calls: Sequence[Call], functions: list[dict[str, Any]], positional: Positional
) -> list[dict[str, dict[str, Any]]]:
    """``[{name: {param: value}}]``; positional arguments handled per ``positional``."""
    if positional == "drop" or not any(call.positional for call in calls):
        return [{call.name: call.arguments} for call in calls]  # the checker never mutates them
    if positional == "reject":
        raise ToolCallParseError("positional arguments are not accepted")
    signatures = signatures_from_tools(functions)
    return [
        {
            c.name: bind_positional(c, signatures[c.name]).arguments
            if c.name in signatures
            else c.arguments
        }
        for c in calls
    ]


def judge_single_turn(
    entry: BfclEntry, output: str | Sequence[Call], *, positional: Positional = "drop"
) -> Verdict:
    """BFCL's verdict for one single-turn output (AST categories and (ir)relevance).

    ``output`` is the model's call-list text (reasoning already stripped) or, for python
    categories, parsed calls. ``positional="drop"`` ignores python positional arguments as BFCL's
    decoder does; ``"bind"`` maps them to the doc's parameter order; ``"reject"`` fails the
    output. An unnamed Java / JavaScript argument fails as an unexpected parameter, as in BFCL.
    """
    category = entry.category
    if category not in _JUDGED:
        raise ValueError(
            f"judge_single_turn handles {', '.join(SINGLE_TURN_CATEGORIES + RELEVANCE_CATEGORIES)}"
            f"; {entry.id} is {category} (use judge_multi_turn for multi-turn entries)"
        )
    language = language_of(category)
    try:
        if language != "python":
            decoded = _decode_java_js(output, language)
        else:
            calls = decode_single_turn(output) if isinstance(output, str) else list(output)
            decoded = _as_decoded(calls, entry.functions, positional)
    except ToolCallParseError as exc:
        decoded, error = None, str(exc)
    if category in RELEVANCE_CATEGORIES:
        has_call = bool(decoded)
        valid = has_call if category == "live_relevance" else not has_call
        reason = "" if valid else ("made a call" if has_call else "made no valid call")
        error_type = "" if valid else "relevance_error" if has_call else "relevance_error:no_call"
        return Verdict(valid, (float(valid),), reason, error_type)
    if decoded is None:
        reason = f"cannot decode the output: {error}"
        return Verdict(False, (0.0,), reason, "ast_decoder:decoder_failed")
    valid, error_type, reason = ast_check(
        entry.functions, decoded, entry.ground_truth or [], category, language
    )
    return Verdict(valid, (float(valid),), reason, error_type)


def _decode_java_js(output: Any, language: str) -> list[dict[str, dict[Any, Any]]]:
    from aworld_rl_core.tooluse.bfcl.java_js import decode

    if not isinstance(output, str):
        raise ToolCallParseError(f"{language} answers are judged from their text")
    return decode(output, language)


def _flatten_turn(turn: Sequence[Any]) -> list[str | Call]:
    """A turn as a flat call list; BFCL's step-nested form ``[[calls], [calls]]`` is accepted."""
    flat: list[str | Call] = []
    for item in turn:
        if isinstance(item, (list, tuple)):
            flat.extend(item)
        else:
            flat.append(item)
    return flat


def judge_multi_turn(
    entry: BfclEntry,
    calls_per_turn: Sequence[Sequence[Any]],
    *,
    irrelevance_check: bool = True,
) -> Verdict:
    """BFCL's multi-turn verdict for the calls a model made in each turn.

    ``details["ground_truth_errors"]`` (turn -> results) lists ground-truth results that report
    an error (core's one classifier), which BFCL judges like any other result.

    Valid when every turn passes (state checker + unordered response checker after each turn with
    ground-truth calls; no call in turns whose ground truth is empty, unless
    ``irrelevance_check=False``, which mirrors bfcl-eval 2026.3.23's eval runner). A turn count
    different from the ground truth's is BFCL's ``force_terminated``.
    """
    expected = entry.ground_truth or []
    if len(calls_per_turn) != len(expected) or len(entry.turns) != len(expected):
        # A model answers once per question turn; BFCL's eval runner force-terminates a result
        # whose turn count differs from the ground truth's (some v3 entries have one turn more
        # in the ground truth than in the question, so nothing can pass them).
        return Verdict(
            False,
            (),
            f"{len(calls_per_turn)} turns of calls, {len(entry.turns)} question turns, "
            f"{len(expected)} ground-truth turns",
            "multi_turn:force_terminated",
        )
    scores: list[float] = []
    first_failure = None
    gt_errors: dict[int, tuple[str, ...]] = {}
    with MultiTurnEpisode(entry, irrelevance_check=irrelevance_check) as episode:
        for turn in calls_per_turn:
            episode.execute(_flatten_turn(turn))
            result = episode.end_turn()
            scores.append(result.score)
            if result.ground_truth_errors:
                gt_errors[result.turn] = result.ground_truth_errors
            if first_failure is None and not result.passed:
                first_failure = result
    extra = {"ground_truth_errors": gt_errors} if gt_errors else {}
    if first_failure is None:
        return Verdict(True, tuple(scores), details=extra or NO_DETAILS)
    return Verdict(
        False,
        tuple(scores),
        first_failure.reason,
        first_failure.error_type,
        {"turn": first_failure.turn, "missing_results": first_failure.missing_results, **extra},
    )
