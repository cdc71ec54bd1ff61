"""The paper's semi-automatic hint workflow (App. B), over any chat function.

1. Failures mined from trajectories are grouped by (API class, method, error pattern); a group
   recurring at least ``min_count`` times is a candidate.
2. An *augmentation generator* LLM proposes a hint as JSON ``{reasoning, need_augmentation,
   error_category, augmentation_type, augmented_feedback}``; its prompt carries hand-written
   examples for the failing call's API class (``hint_examples.yaml``, 3 per domain).
3. A *constitutional judge* LLM, shown the ground-truth calls for judgment only, answers
   ``{reasoning, solution_leakage, exploration_constraint, actionability, hint_quality,
   overall_approved, suggestions}``; a hint passes with no leakage, no over-constraint, an
   actionable hint of good quality, and overall approval. Before the judge is asked, a hint
   that names a ground-truth function with one of its argument values
   (``augmentation.revealed_calls``) is rejected whatever the judge would say.
4. A rejected hint is regenerated with the judge's suggestions, up to ``max_attempts`` times.
Approved hints become a :class:`HintPack` whose ``match`` is the group's error pattern.
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from aworld_rl_envtuning.augmentation import (
    AUGMENTATION_TYPES,
    ERROR_CATEGORIES,
    Hint,
    HintPack,
    revealed_calls,
)

Chat = Callable[[list[dict[str, str]]], str]
"""``chat(messages) -> reply text`` (e.g. a core ``SyncClient`` wrapped in a lambda)."""

GENERATOR_ROLE = "You are an Augmentation Generator for a tool-use training environment."
JUDGE_ROLE = "You are a Constitutional Judge of environment hints."
GOOD_QUALITY = ("good", "excellent")

_QUOTED = re.compile(r"'[^']*'")
_BARE_VALUE = re.compile(r"(?<=: )[^\s:']+(?=:)")  # "cd: a/b: Unsupported path" -> a/b
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def error_message(error: str) -> str:
    """The message inside BFCL's ``{"error": "..."}`` rendering (else the text itself)."""
    try:
        value = json.loads(error)
    except (json.JSONDecodeError, TypeError):
        return error
    if isinstance(value, dict) and isinstance(value.get("error"), str):
        return value["error"]
    return error


def error_pattern(error: str) -> str:
    """A regular expression matching ``error``'s message with its values (quoted, bare between
    colons, numbers) left open."""
    error = error_message(error)
    pieces, pos = [], 0
    for m in re.finditer(f"{_QUOTED.pattern}|{_BARE_VALUE.pattern}|{_NUMBER.pattern}", error):
        pieces.append(re.escape(error[pos : m.start()]))
        pieces.append(".*?")
        pos = m.end()
    pieces.append(re.escape(error[pos:]))
    return "".join(pieces).strip()


@dataclass
class FailureGroup:
    """Failures of one (class, method, error pattern), with a few examples."""

    api_class: str | None
    method: str
    pattern: str
    count: int = 0
    examples: list[dict[str, Any]] = field(default_factory=list)

    @property
    def key(self) -> tuple[str | None, str, str]:
        return (self.api_class, self.method, self.pattern)


def group_failures(
    failures: Iterable[Mapping[str, Any]], *, min_count: int = 2, max_examples: int = 3
) -> list[FailureGroup]:
    """Groups recurring at least ``min_count`` times, most frequent first."""
    groups: dict[tuple[Any, str, str], FailureGroup] = {}
    for failure in failures:
        group = FailureGroup(
            failure.get("class"), str(failure.get("method", "")), error_pattern(failure["error"])
        )
        group = groups.setdefault(group.key, group)
        group.count += 1
        if len(group.examples) < max_examples:
            group.examples.append(dict(failure))
    ranked = sorted(groups.values(), key=lambda g: (-g.count, str(g.key)))
    return [g for g in ranked if g.count >= min_count]


@functools.lru_cache(maxsize=1)
def hint_examples() -> dict[str, list[dict[str, str]]]:
    """The hand-written examples per API class (``hint_examples.yaml``)."""
    import yaml

    text = (resources.files("aworld_rl_envtuning") / "hint_examples.yaml").read_text("utf-8")
    return yaml.safe_load(text)


def examples_for(api_class: str | None) -> list[dict[str, str]]:
    """The class's examples; for an unknown class, the first example of every class."""
    examples = hint_examples()
    if api_class in examples:
        return examples[api_class]
    return [dict(items[0], api_class=name) for name, items in examples.items()]


def generator_messages(group: FailureGroup, feedback: str = "") -> list[dict[str, str]]:
    failures = json.dumps(
        [{k: e.get(k) for k in ("question", "arguments", "error")} for e in group.examples],
        ensure_ascii=False,
    )
    shots = "\n".join(
        f"- {e['function']}: error {e['error']!r} -> feedback {e['hint']!r}"
        for e in examples_for(group.api_class)
    )
    user = (
        f"API class: {group.api_class}\nFunction: {group.method}\n"
        f"The agent repeatedly got this error ({group.count} times). Examples: {failures}\n\n"
        "Write feedback the environment will append to this error so that the agent can find "
        "the root cause and a direction by itself. Do not give the solution, the exact call or "
        "argument values of a task; do not forbid exploring other approaches.\n"
        f"Good feedback for errors of this kind of API:\n{shots}\n"
        f"error_category is one of {', '.join(ERROR_CATEGORIES)}; augmentation_type is one of "
        f"{', '.join(AUGMENTATION_TYPES)}.\n"
        'Answer with one JSON object: {"reasoning": str, "need_augmentation": bool, '
        '"error_category": str, "augmentation_type": str, "augmented_feedback": str}'
    )
    if feedback:
        user += f"\n\nA judge rejected your previous hint: {feedback}\nWrite a better one."
    return [{"role": "system", "content": GENERATOR_ROLE}, {"role": "user", "content": user}]


def judge_messages(
    group: FailureGroup, hint: str, ground_truth: Sequence[str]
) -> list[dict[str, str]]:
    user = (
        f"API class: {group.api_class}\nFunction: {group.method}\n"
        f"Error: {group.examples[0]['error']}\nProposed hint: {hint}\n"
        f"Ground-truth calls (for your judgment only, never to be revealed): "
        f"{json.dumps(list(ground_truth))}\n\n"
        "Check: does the hint leak the solution? It does when it states a ground-truth call, "
        "or names a ground-truth function together with any of its argument values. Does it "
        "constrain "
        "exploration (forbid valid approaches)? Is it actionable? Is its quality poor, fair, "
        "good or excellent?\n"
        'Answer with one JSON object: {"reasoning": str, "solution_leakage": bool, '
        '"exploration_constraint": bool, "actionability": bool, "hint_quality": str, '
        '"overall_approved": bool, "suggestions": str}'
    )
    return [{"role": "system", "content": JUDGE_ROLE}, {"role": "user", "content": user}]


def parse_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in an LLM reply (fenced or bare), or None."""
    start = text.find("{")
    while start != -1:
        depth, in_string, escaped = 0, False, False
        for i in range(start, len(text)):
            ch = text[i]
            if in_string:
                escaped = not escaped and ch == "\\"
                if ch == '"' and not escaped:
                    in_string = False
                continue
            if ch == '"':
                in_string = True
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    try:
                        value = json.loads(text[start : i + 1])
                    except json.JSONDecodeError:
                        break
                    return value if isinstance(value, dict) else None
        start = text.find("{", start + 1)
    return None


def approved(verdict: Mapping[str, Any]) -> bool:
    """The judge's constitution: no leakage, no over-constraint, actionable, good, approved."""
    return (
        verdict.get("solution_leakage") is False
        and verdict.get("exploration_constraint") is False
        and verdict.get("actionability") is True
        and str(verdict.get("hint_quality", "")).lower() in GOOD_QUALITY
        and verdict.get("overall_approved") is True
    )


@dataclass
class HintAttempt:
    """One generator proposal and the judge's verdict on it."""

    proposal: dict[str, Any] | None
    verdict: dict[str, Any] | None
    approved: bool


@dataclass
class HintOutcome:
    group: FailureGroup
    attempts: list[HintAttempt]
    hint: Hint | None


def make_hint(
    group: FailureGroup,
    generator: Chat,
    judge: Chat,
    ground_truth: Sequence[str],
    *,
    max_attempts: int = 3,
    hint_id: str,
) -> HintOutcome:
    """Generate, judge and retry (see the module docstring)."""
    attempts: list[HintAttempt] = []
    feedback = ""
    for _ in range(max_attempts):
        proposal = parse_json_object(generator(generator_messages(group, feedback)))
        problem = _proposal_problem(proposal)
        if problem or proposal is None:
            attempts.append(HintAttempt(proposal, None, False))
            feedback = problem
            continue
        if proposal.get("need_augmentation") is False:
            attempts.append(HintAttempt(proposal, None, False))
            return HintOutcome(group, attempts, None)
        text = str(proposal["augmented_feedback"]).strip()
        leaked = revealed_calls(text, ground_truth)
        if leaked:  # the constitution's first rule, checked without asking the judge
            reason = f"the hint gives away {', '.join(leaked)}: name no argument values"
            rejected = {"solution_leakage": True, "overall_approved": False, "suggestions": reason}
            attempts.append(HintAttempt(proposal, rejected, False))
            feedback = reason
            continue
        verdict = parse_json_object(judge(judge_messages(group, text, ground_truth)))
        ok = verdict is not None and approved(verdict)
        attempts.append(HintAttempt(proposal, verdict, ok))
        if ok:
            hint = Hint(
                id=hint_id,
                hint=text,
                match=group.pattern,
                api_class=group.api_class or "*",
                methods=(group.method,) if group.method else ("*",),
                category=proposal["error_category"],
                type=proposal["augmentation_type"],
            )
            return HintOutcome(group, attempts, hint)
        feedback = (
            str(verdict.get("suggestions") or verdict.get("reasoning") or "rejected")
            if verdict
            else "the judge's answer was not a JSON object"
        )
    return HintOutcome(group, attempts, None)


def _proposal_problem(proposal: dict[str, Any] | None) -> str:
    if proposal is None:
        return "your answer was not a JSON object"
    if proposal.get("need_augmentation") is False:
        return ""
    if not str(proposal.get("augmented_feedback", "")).strip():
        return "augmented_feedback was empty"
    if proposal.get("error_category") not in ERROR_CATEGORIES:
        return f"error_category must be one of {', '.join(ERROR_CATEGORIES)}"
    if proposal.get("augmentation_type") not in AUGMENTATION_TYPES:
        return f"augmentation_type must be one of {', '.join(AUGMENTATION_TYPES)}"
    return ""


def build_pack(name: str, outcomes: Sequence[HintOutcome]) -> HintPack:
    return HintPack(name, tuple(o.hint for o in outcomes if o.hint is not None))


def attempt_counts(outcomes: Sequence[HintOutcome]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for o in outcomes:
        counts["groups"] += 1
        counts["attempts"] += len(o.attempts)
        counts["approved"] += o.hint is not None
    return counts
