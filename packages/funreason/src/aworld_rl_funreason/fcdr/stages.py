"""One sample through FCDR: classify -> (CoT generation) -> query/tools -> CoT -> function and
parameters -> format.

Deterministic checks decide where they can (``settings.deterministic``): a reference that
parses as a call list is a function call; a schema violation fails the parameter check without
asking; a parseable but non-canonical list (``[ f(...)]``) is rewritten canonically. Every
regenerated call list is re-validated by the parser and the schema before it replaces the
reference.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from aworld_rl_core.tooluse.calls import ToolCallParseError, format_python_calls, parse_python_calls
from aworld_rl_funreason.data import FcSample, split_response
from aworld_rl_funreason.fcdr.prompts import cot_messages, judge_messages
from aworld_rl_funreason.fcdr.verdict import parse_judge, parse_new_fc
from aworld_rl_funreason.schema import check_calls

STAGES = ("classify", "query_tools", "cot", "function_params", "format")
Status = Literal["kept", "statement", "hard", "dropped"]


@dataclass(frozen=True, kw_only=True)
class FcdrSettings:
    """What the pipeline does at each decision (the recipe config maps onto this)."""

    stages: tuple[str, ...] = STAGES
    deterministic: bool = True
    generate_cot: bool = True
    cot_sees_reference: bool = False
    answer_fail: Literal["regenerate", "hard_pool"] = "regenerate"
    judge_retries: int = 1
    judge_sampling: Mapping[str, Any] = field(default_factory=dict)
    teacher_sampling: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = [s for s in self.stages if s not in STAGES]
        if unknown:
            raise ValueError(f"unknown FCDR stages {unknown}; choose from {list(STAGES)}")
        if self.answer_fail not in ("regenerate", "hard_pool"):
            raise ValueError(
                f"answer_fail must be 'regenerate' or 'hard_pool', got {self.answer_fail!r}"
            )


@dataclass(frozen=True)
class StageRecord:
    """What one stage decided: ``verdict`` is pass, fail, regenerated or skipped; ``by`` is
    rule (deterministic), judge or teacher."""

    stage: str
    verdict: str
    by: str
    reason: str = ""


@dataclass(frozen=True)
class Outcome:
    """The fate of one sample: its (possibly corrected) form, status and stage trail."""

    sample: FcSample
    status: Status
    trail: tuple[StageRecord, ...]
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.sample.id,
            "status": self.status,
            "reason": self.reason,
            "sample": self.sample.to_dict(),
            "trail": [asdict(r) for r in self.trail],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Outcome:
        return cls(
            sample=FcSample.from_dict(data["sample"]),
            status=data["status"],
            trail=tuple(StageRecord(**r) for r in data["trail"]),
            reason=data.get("reason", ""),
        )


def _parse(answer: str) -> tuple[list | None, str]:
    try:
        calls = parse_python_calls(answer)
    except ToolCallParseError as exc:
        return None, str(exc)
    return calls, ""


def validate_call_list(text: str, tools: list[dict]) -> tuple[str | None, str]:
    """Canonical call-list text when ``text`` parses and fits the schema, else (None, why)."""
    calls, err = _parse(text)
    if calls is None:
        return None, f"not a python call list ({err})"
    if not calls:
        return None, "empty call list"
    problems = check_calls(calls, tools)
    if problems:
        return None, "; ".join(problems)
    return format_python_calls(calls), ""


class _Run:
    """State of one sample while it moves through the stages."""

    def __init__(self, sample: FcSample, judge: Any, teacher: Any, settings: FcdrSettings):
        self.sample = sample
        self.judge = judge
        self.teacher = teacher
        self.settings = settings
        self.trail: list[StageRecord] = []

    def note(self, stage: str, verdict: str, by: str, reason: str = "") -> None:
        self.trail.append(StageRecord(stage, verdict, by, reason))

    def outcome(self, status: Status, reason: str = "") -> Outcome:
        return Outcome(self.sample, status, tuple(self.trail), reason)

    async def ask(self, stage: str, hints: list[str] | None = None) -> tuple[bool | None, str]:
        """Ask the judge (re-asking up to ``judge_retries`` times when no verdict is readable)."""
        messages = judge_messages(stage, self.sample, hints)
        text = ""
        for _ in range(1 + max(0, self.settings.judge_retries)):
            reply = await self.judge.chat(messages, **dict(self.settings.judge_sampling))
            text = reply.text
            verdict = parse_judge(text)
            if verdict is not None:
                return verdict, text
        return None, text


async def _generate_cot(run: _Run) -> str | None:
    """Teacher reasoning for a sample without it; None when the teacher gave none."""
    if run.teacher is None:
        return None
    messages = cot_messages(run.sample, show_reference=run.settings.cot_sees_reference)
    reply = await run.teacher.chat(messages, **dict(run.settings.teacher_sampling))
    reasoning = (reply.reasoning or "").strip()
    if not reasoning:
        reasoning = (split_response(reply.text)[0] or "").strip()
    return reasoning or None


async def _answer_check(run: _Run, stage: str) -> Outcome | None:
    """Stages 4 and 5: pass, regenerate (``<NewFC>``, re-validated) or send to the hard pool."""
    settings = run.settings
    calls, parse_err = _parse(run.sample.answer)
    rules = settings.deterministic or run.judge is None
    if rules and stage == "format" and calls:
        canonical = format_python_calls(calls)
        if run.sample.answer == canonical:
            run.note(stage, "pass", "rule")
            return None
        run.sample = run.sample.with_(answer=canonical)
        run.note(stage, "regenerated", "rule", "rewritten in canonical call-list form")
        return None
    hints: list[str] = []
    if rules and stage == "function_params":
        hints = check_calls(calls, run.sample.tools) if calls is not None else [parse_err]
    if stage == "format" and run.judge is None:
        hints = [parse_err]
    if run.judge is None:
        if not hints:
            run.note(stage, "pass", "rule", "schema check only (no judge)")
            return None
        run.note(stage, "fail", "rule", "; ".join(hints))
        return run.outcome("hard", f"{stage}: {'; '.join(hints)} (no judge to regenerate)")
    if hints:  # the schema already failed the answer; the judge only writes the correction
        by, why = "rule", "; ".join(hints)
        text = "" if settings.answer_fail == "hard_pool" else (await run.ask(stage, hints))[1]
    else:
        verdict, text = await run.ask(stage)
        by, why = "judge", "" if verdict is not None else "the judge gave no verdict"
        if verdict:
            run.note(stage, "pass", "judge")
            return None
    if settings.answer_fail == "hard_pool":
        run.note(stage, "fail", by, why or "answer check failed")
        return run.outcome("hard", f"{stage}: {why or 'answer check failed'}")
    new_fc = parse_new_fc(text)
    if new_fc is None:
        run.note(stage, "fail", by, (why + "; " if why else "") + "no <NewFC> given")
        return run.outcome("hard", f"{stage}: no corrected call")
    fixed, invalid = validate_call_list(new_fc, run.sample.tools)
    if fixed is None:
        run.note(stage, "fail", by, f"regenerated call rejected: {invalid}")
        return run.outcome("hard", f"{stage}: regenerated call rejected: {invalid}")
    meta = {**run.sample.meta, f"{stage}_previous_answer": run.sample.answer}
    run.sample = run.sample.with_(answer=fixed, meta=meta)
    run.note(stage, "regenerated", "judge", why)
    return None


async def refine_sample(
    sample: FcSample, judge: Any, settings: FcdrSettings, teacher: Any = None
) -> Outcome:
    """Run ``sample`` through the enabled FCDR stages; ``judge`` / ``teacher`` are core LLM
    clients (anything with ``async chat(messages, **sampling) -> Completion``). The teacher
    defaults to the judge; ``judge=None`` runs the deterministic checks only."""
    run = _Run(sample, judge, teacher or judge, settings)
    stages = set(settings.stages)

    if "classify" in stages:
        calls, _ = _parse(sample.answer)
        if (settings.deterministic or judge is None) and calls:
            run.note("classify", "pass", "rule", f"parses as {len(calls)} call(s)")
        elif judge is None and sample.answer.lstrip().startswith("["):
            run.note("classify", "pass", "rule", "a malformed call list")
        elif judge is None:
            run.note("classify", "fail", "rule", "not a call list")
            return run.outcome("statement", "kept as a statement sample")
        else:
            verdict, _ = await run.ask("classify")
            if verdict is None:
                run.note("classify", "fail", "judge", "the judge gave no verdict")
                return run.outcome("dropped", "classify: the judge gave no verdict")
            if not verdict:
                run.note("classify", "fail", "judge", "not a function call")
                if not run.sample.reasoning and settings.generate_cot:
                    run.sample = run.sample.with_(reasoning=await _generate_cot(run))
                return run.outcome("statement", "kept as a statement sample")
            run.note("classify", "pass", "judge")

    if not run.sample.reasoning and settings.generate_cot:
        reasoning = await _generate_cot(run)
        if reasoning is None:
            why = "the teacher wrote no reasoning" if run.teacher else "no teacher configured"
            run.note("cot_generation", "fail", "teacher", why)
            return run.outcome("dropped", "cot_generation: no reasoning")
        run.sample = run.sample.with_(reasoning=reasoning)
        run.note("cot_generation", "pass", "teacher")

    for stage in ("query_tools", "cot"):
        if stage not in stages:
            continue
        if stage == "cot" and not run.sample.reasoning:
            run.note(stage, "skipped", "rule", "no reasoning to check")
            continue
        if judge is None:
            run.note(stage, "skipped", "rule", "no judge")
            continue
        verdict, _ = await run.ask(stage)
        if not verdict:
            why = "the judge gave no verdict" if verdict is None else "judged False"
            run.note(stage, "fail", "judge", why)
            return run.outcome("dropped", f"{stage}: {why}")
        run.note(stage, "pass", "judge")

    for stage in ("function_params", "format"):
        if stage in stages:
            ended = await _answer_check(run, stage)
            if ended is not None:
                return ended
    return run.outcome("kept")


def count_outcomes(outcomes: Iterable[Outcome]) -> dict[str, Any]:
    """Counts per status and per (stage, verdict, by) for the report."""
    status: Counter[str] = Counter()
    stages: Counter[tuple[str, str, str]] = Counter()
    for out in outcomes:
        status[out.status] += 1
        for rec in out.trail:
            stages[(rec.stage, rec.verdict, rec.by)] += 1
    return {
        "status": dict(status),
        "stages": {f"{s}/{v}/{b}": n for (s, v, b), n in sorted(stages.items())},
    }
