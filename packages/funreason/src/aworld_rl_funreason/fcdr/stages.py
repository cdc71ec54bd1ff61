"""FCDR's stages on core's pipeline: classify -> (CoT generation) -> query/tools -> CoT ->
function and parameters -> format, one ``aworld_rl_core.pipeline.Stage`` each.

Deterministic checks decide where they can (``settings.deterministic``): a reference that
parses as a call list is a function call; a schema violation fails the parameter check without
asking; a parseable but non-canonical list (``[ f(...)]``) is rewritten canonically. Every
regenerated call list is re-validated by the parser and the schema before it replaces the
reference. A judge reply without a readable verdict is a ``Regenerate`` (asked again while
the stage's attempts last). Each record keeps FCDR's own trail (verdict and who decided: rule,
judge or teacher) besides the pipeline's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from aworld_rl_core.pipeline import Failed, Passed, Pipeline, Regenerate, Stage, StageContext
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
    rules_decide: bool = False
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


@dataclass
class FcdrItem:
    """What flows between the FCDR stages: the (possibly corrected) sample, its FCDR trail and
    the reason a stage gave when it ended the record."""

    sample: FcSample
    trail: list[StageRecord] = field(default_factory=list)
    reason: str = ""

    def note(self, stage: str, verdict: str, by: str, reason: str = "") -> None:
        self.trail.append(StageRecord(stage, verdict, by, reason))

    def to_dict(self) -> dict[str, Any]:
        return {
            "sample": self.sample.to_dict(),
            "trail": [asdict(r) for r in self.trail],
            "reason": self.reason,
        }

    def stop(self, status: Status, reason: str) -> Passed:
        """End the record early as a kept ``status`` (a statement sample)."""
        self.reason = reason
        return Passed(self, stop=True, status=status)

    def fail(self, status: Status, reason: str) -> Failed:
        self.reason = reason
        return Failed(reason, status=status, item=self)


def outcome_of(status: str, item: FcdrItem, reason: str = "") -> Outcome:
    """The FCDR outcome of a finished pipeline record."""
    return Outcome(item.sample, status, tuple(item.trail), item.reason or reason)  # type: ignore[arg-type]


async def _ask(
    item: FcdrItem, ctx: StageContext, settings: FcdrSettings, hints=None, stage: str = ""
) -> Any:
    """One judge call (``stage``'s question, default the current stage's): ``(verdict or None,
    text)``; no verdict is a retry while attempts last. A retry carries the attempt's seed: a
    new request (a cache does not answer it with the reply that had no verdict)."""
    messages = judge_messages(stage or ctx.stage, item.sample, hints)
    sampling = dict(settings.judge_sampling)
    if ctx.attempt > 1:
        sampling["seed"] = ctx.seed
    reply = await ctx.client("judge").chat(messages, **sampling)
    return parse_judge(reply.text), reply.text


NO_VERDICT = "the judge gave no verdict"


async def _generate_cot(item: FcdrItem, ctx: StageContext, settings: FcdrSettings) -> str | None:
    """Teacher reasoning for a sample without it; None when there is no teacher or it wrote none."""
    if "teacher" not in ctx.clients:
        return None
    messages = cot_messages(item.sample, show_reference=settings.cot_sees_reference)
    reply = await ctx.client("teacher").chat(messages, **dict(settings.teacher_sampling))
    reasoning = (reply.reasoning or "").strip()
    if not reasoning:
        reasoning = (split_response(reply.text)[0] or "").strip()
    return reasoning or None


def fcdr_stages(settings: FcdrSettings, *, judge: bool) -> list[Stage]:
    """The enabled FCDR stages as pipeline stages (clients ``judge`` and ``teacher``); a judge
    reply without a readable verdict is asked again, ``settings.judge_retries`` times."""
    attempts = 1 + max(0, settings.judge_retries) if judge else 1
    enabled = set(settings.stages)

    async def classify(item: FcdrItem, ctx: StageContext) -> Any:
        calls, _ = _parse(item.sample.answer)
        if calls and (not judge or (settings.deterministic and settings.rules_decide)):
            item.note("classify", "pass", "rule", f"parses as {len(calls)} call(s)")
        elif not judge and item.sample.answer.lstrip().startswith("["):
            item.note("classify", "pass", "rule", "a malformed call list")
        elif not judge:
            item.note("classify", "fail", "rule", "not a call list")
            return item.stop("statement", "kept as a statement sample")
        else:
            verdict, _ = await _ask(item, ctx, settings)
            if verdict is None and not ctx.last_attempt:
                return Regenerate(NO_VERDICT)
            if verdict is None:
                item.note("classify", "fail", "judge", NO_VERDICT)
                return item.fail("dropped", f"classify: {NO_VERDICT}")
            if not verdict:
                item.note("classify", "fail", "judge", "not a function call")
                if not item.sample.reasoning and settings.generate_cot:
                    reasoning = await _generate_cot(item, ctx, settings)
                    item.sample = item.sample.with_(reasoning=reasoning)
                return item.stop("statement", "kept as a statement sample")
            item.note("classify", "pass", "judge")
        return Passed(item)

    async def cot_generation(item: FcdrItem, ctx: StageContext) -> Any:
        if item.sample.reasoning:
            return Passed(item)
        reasoning = await _generate_cot(item, ctx, settings)
        if reasoning is None:
            has = "teacher" in ctx.clients
            why = "the teacher wrote no reasoning" if has else "no teacher configured"
            item.note("cot_generation", "fail", "teacher", why)
            return item.fail("dropped", "cot_generation: no reasoning")
        item.sample = item.sample.with_(reasoning=reasoning)
        item.note("cot_generation", "pass", "teacher")
        return Passed(item)

    async def judged(item: FcdrItem, ctx: StageContext) -> Any:
        stage = ctx.stage
        if stage == "cot" and not item.sample.reasoning:
            item.note(stage, "skipped", "rule", "no reasoning to check")
            return Passed(item)
        if not judge:
            item.note(stage, "skipped", "rule", "no judge")
            return Passed(item)
        verdict, _ = await _ask(item, ctx, settings)
        if verdict is None and not ctx.last_attempt:
            return Regenerate(NO_VERDICT)
        if not verdict:
            why = NO_VERDICT if verdict is None else "judged False"
            item.note(stage, "fail", "judge", why)
            return item.fail("dropped", f"{stage}: {why}")
        item.note(stage, "pass", "judge")
        return Passed(item)

    async def answer_check(item: FcdrItem, ctx: StageContext) -> Any:
        return await _answer_check(item, ctx, settings, judge=judge)

    stages = []
    if "classify" in enabled:
        stages.append(Stage("classify", classify, attempts))
    if settings.generate_cot:
        stages.append(Stage("cot_generation", cot_generation))
    stages += [Stage(s, judged, attempts) for s in ("query_tools", "cot") if s in enabled]
    stages += [
        Stage(s, answer_check, attempts) for s in ("function_params", "format") if s in enabled
    ]
    return stages


async def _answer_check(
    item: FcdrItem, ctx: StageContext, settings: FcdrSettings, *, judge: bool
) -> Any:
    """Stages 4 and 5: pass, regenerate (``<NewFC>``, re-validated) or send to the hard pool."""
    stage = ctx.stage
    calls, parse_err = _parse(item.sample.answer)
    rules = settings.deterministic or not judge
    if rules and stage == "format" and calls:
        canonical = format_python_calls(calls)
        final = not judge or settings.rules_decide  # else the judge checks the format too
        if item.sample.answer != canonical:
            item.sample = item.sample.with_(answer=canonical)
            item.note(stage, "regenerated", "rule", "rewritten in canonical call-list form")
        elif final:
            item.note(stage, "pass", "rule")
        if final:
            return Passed(item)
    hints: list[str] = []
    if rules and stage == "function_params":
        hints = check_calls(calls, item.sample.tools) if calls is not None else [parse_err]
    if stage == "format" and not judge:
        hints = [parse_err]
    if not judge:
        if not hints:
            item.note(stage, "pass", "rule", "schema check only (no judge)")
            return Passed(item)
        item.note(stage, "fail", "rule", "; ".join(hints))
        return item.fail("hard", f"{stage}: {'; '.join(hints)} (no judge to regenerate)")
    if hints:  # the schema already failed the answer; the judge only writes the correction
        by, why, text = "rule", "; ".join(hints), ""
        if settings.answer_fail != "hard_pool":
            verdict, text = await _ask(item, ctx, settings, hints)
            if verdict is None and not ctx.last_attempt:
                return Regenerate(NO_VERDICT)
    else:
        verdict, text = await _ask(item, ctx, settings)
        if verdict is None and not ctx.last_attempt:
            return Regenerate(NO_VERDICT)
        by, why = "judge", "" if verdict is not None else NO_VERDICT
        if verdict:
            item.note(stage, "pass", "judge")
            return Passed(item)
    if settings.answer_fail == "hard_pool":
        item.note(stage, "fail", by, why or "answer check failed")
        return item.fail("hard", f"{stage}: {why or 'answer check failed'}")
    new_fc = parse_new_fc(text)
    if new_fc is None:
        item.note(stage, "fail", by, (why + "; " if why else "") + "no <NewFC> given")
        return item.fail("hard", f"{stage}: no corrected call")
    fixed, invalid = validate_call_list(new_fc, item.sample.tools)
    if fixed is None:
        item.note(stage, "fail", by, f"regenerated call rejected: {invalid}")
        return item.fail("hard", f"{stage}: regenerated call rejected: {invalid}")
    meta = {**item.sample.meta, f"{stage}_previous_answer": item.sample.answer}
    item.sample = item.sample.with_(answer=fixed, meta=meta)
    item.note(stage, "regenerated", "judge", why)
    if stage == "function_params" and item.sample.reasoning:
        return await _recheck_cot(item, ctx, settings)
    return Passed(item)


async def _recheck_cot(item: FcdrItem, ctx: StageContext, settings: FcdrSettings) -> Any:
    """Stage 4 changed the answer, so the CoT approved against the old one no longer leads to
    it: the teacher writes it again and the judge re-checks it (stage 3's question). Without a
    teacher (or ``generate_cot``) the old CoT is removed (the sample stays, without reasoning)."""
    reasoning = await _generate_cot(item, ctx, settings) if settings.generate_cot else None
    if reasoning is None:
        item.sample = item.sample.with_(reasoning=None)
        item.note("cot", "fail", "rule", "answer regenerated, no teacher: old CoT removed")
        return Passed(item)
    item.sample = item.sample.with_(reasoning=reasoning)
    verdict, _ = await _ask(item, ctx, settings, stage="cot")
    if not verdict:
        why = NO_VERDICT if verdict is None else "judged False"
        item.note("cot", "fail", "judge", f"regenerated CoT {why}")
        return item.fail("dropped", f"cot (after function_params): {why}")
    item.note("cot", "regenerated", "teacher", "the answer was regenerated")
    return Passed(item)


def fcdr_pipeline(settings: FcdrSettings, judge: Any, teacher: Any = None) -> Pipeline:
    """FCDR on core's pipeline: ``judge`` / ``teacher`` are core LLM clients (the teacher
    defaults to the judge; ``judge=None`` runs the deterministic checks only); records are
    keyed by sample id."""
    clients = {k: v for k, v in {"judge": judge, "teacher": teacher or judge}.items() if v}
    return Pipeline(
        fcdr_stages(settings, judge=judge is not None),
        clients=clients,
        key=lambda item: item.sample.id,
    )


async def refine_sample(
    sample: FcSample, judge: Any, settings: FcdrSettings, teacher: Any = None
) -> Outcome:
    """Run ``sample`` through the enabled FCDR stages (see :func:`fcdr_pipeline`)."""
    result = await fcdr_pipeline(settings, judge, teacher).run_one(FcdrItem(sample))
    return outcome_of(result.status, result.item, result.reason)


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
