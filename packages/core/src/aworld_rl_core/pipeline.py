"""A staged pipeline for data synthesis and refinement over ``run_jobs`` + ``JsonlSink``.

Each record goes through its stages in one job (so the item stays in memory between stages,
live sessions included); a stage is ``async def stage(item, ctx) -> Outcome``:

- ``Passed(item)`` hands the (possibly new) item to the next stage; ``Passed(item, stop=True,
  status="statement")`` finishes the record early under its own status;
- ``Failed(reason, status="dropped")`` ends the record (``status`` names the pool: dropped, hard);
- ``Regenerate(feedback)`` runs the stage again with ``ctx.feedback`` set, up to the stage's
  ``attempts`` (then the record fails; a stage can also decide itself on ``ctx.last_attempt``).

``ctx`` gives the LLM clients by role (``ctx.client("judge")``: every call and its tokens are
counted for the record and stage; the client can be handed to ``engine.play``), the record key,
the attempt and a seed per attempt. Only finished records are written, one JSON line each with
its status, item, trail (stage, attempt, outcome, reason) and usage; a run killed at any point
(kill -9) restarts where it stopped, and the per-stage yields (:func:`pipeline_stats`) are
computed from the file, so nothing is lost or counted twice.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, is_dataclass
from pathlib import Path
from typing import Any

from aworld_rl_core.llm.jobs import JobReport, run_jobs
from aworld_rl_core.llm.jsonl_sink import JsonlSink


@dataclass(frozen=True)
class Passed:
    """The stage passed: ``item`` goes on (or, with ``stop``, the record ends as ``status``)."""

    item: Any
    stop: bool = False
    status: str = "kept"


@dataclass(frozen=True)
class Failed:
    """The stage failed the record: it ends as ``status`` (``item``: what to write, default the
    item the stage received)."""

    reason: str
    status: str = "dropped"
    item: Any = None


@dataclass(frozen=True)
class Regenerate:
    """Run the stage again, telling it ``feedback``."""

    feedback: str


Outcome = Passed | Failed | Regenerate
StageFn = Callable[[Any, "StageContext"], Awaitable[Outcome]]


@dataclass(frozen=True)
class Stage:
    """One named stage: ``fn(item, ctx)`` tried at most ``attempts`` times."""

    name: str
    fn: StageFn
    attempts: int = 1

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"stage {self.name!r}: attempts must be >= 1, got {self.attempts}")


Stages = Sequence[Stage] | Callable[[Any], Sequence[Stage]]
"""The stages of every record, or a function giving each record its own (built at run time)."""


class CountingClient:
    """An LLM client view that counts each call and its tokens for one record and stage.

    With ``seeds`` (a function of the call's index in the attempt), a call that names no
    ``seed`` gets one: the same record, stage, attempt and call sample the same reply in every
    run and process, whatever else is in flight (a resumed run redoes a record exactly)."""

    def __init__(
        self,
        client: Any,
        usage: dict[str, int],
        seeds: Callable[[], int] | None = None,
    ) -> None:
        self.client = client
        self.usage = usage
        self.seeds = seeds
        self.model = getattr(client, "model", "")

    async def chat(self, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
        configured = "seed" in (getattr(self.client, "defaults", None) or {})
        if self.seeds is not None and kwargs.get("seed") is None and not configured:
            kwargs["seed"] = self.seeds()  # (a seed the client's config sets stays)
        completion = await self.client.chat(messages, **kwargs)
        self.usage["calls"] += 1
        usage = getattr(completion, "usage", None) or {}
        tokens = usage.get("total_tokens")
        if tokens is None:
            tokens = usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)
        self.usage["tokens"] += int(tokens)
        return completion

    def request_key(self, *args: Any) -> str:
        return self.client.request_key(*args)

    async def aclose(self) -> None:  # the pipeline's owner closes the real client
        return None


@dataclass
class StageContext:
    """What a stage sees besides the item (see the module docstring)."""

    key: str
    stage: str
    attempt: int
    attempts: int
    feedback: str | None
    seed: int
    clients: Mapping[str, Any]
    usage: dict[str, int]
    seed_calls: bool = False
    calls_seeded: int = 0

    @property
    def last_attempt(self) -> bool:
        return self.attempt >= self.attempts

    def client(self, role: str = "default") -> CountingClient:
        """The LLM client for ``role``; its calls count towards this record and stage (and,
        when the pipeline seeds calls, each gets the seed of its place in the attempt)."""
        if role not in self.clients:
            known = ", ".join(sorted(self.clients)) or "none"
            raise KeyError(f"stage {self.stage!r} asked for LLM client {role!r} (known: {known})")
        return CountingClient(
            self.clients[role], self.usage, self._next_seed if self.seed_calls else None
        )

    def _next_seed(self) -> int:
        self.calls_seeded += 1
        return attempt_seed(self.seed, self.key, self.stage, self.calls_seeded)


def attempt_seed(base: int, key: str, stage: str, attempt: int) -> int:
    """A seed per (record, stage, attempt): stable across runs and processes."""
    digest = hashlib.sha256(f"{base}\x00{key}\x00{stage}\x00{attempt}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


@dataclass
class RecordResult:
    """One finished record: how it ended, its final item, trail and LLM usage per stage."""

    key: str
    status: str
    passed: bool
    reason: str
    item: Any
    trail: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, dict[str, int]] = field(default_factory=dict)


def to_jsonable(item: Any) -> Any:
    """The default item serialisation: ``to_dict()``, a dataclass, or the value itself."""
    if callable(getattr(item, "to_dict", None)):
        return item.to_dict()
    if is_dataclass(item) and not isinstance(item, type):
        return asdict(item)
    return item


class Pipeline:
    """Stages run per record; ``run`` maps them over items into a resumable JSONL file.

    ``key`` is a field name of the items or a function of an item (records are skipped by it on
    a rerun); ``serialize`` turns the final item into JSON (default :func:`to_jsonable`).
    ``seed_calls`` gives every LLM call of a stage that names no ``seed`` its own, from the
    record, stage, attempt and call: a sampled reply no longer depends on which records were
    in flight with it, so a killed run redoes its records as an uninterrupted one did.
    """

    def __init__(
        self,
        stages: Stages,
        *,
        clients: Mapping[str, Any] | None = None,
        key: str | Callable[[Any], Any] = "id",
        seed: int = 0,
        serialize: Callable[[Any], Any] = to_jsonable,
        seed_calls: bool = False,
    ) -> None:
        self.stages = stages
        self.seed_calls = seed_calls
        self.clients = dict(clients or {})
        self.key = key
        self.seed = seed
        self.serialize = serialize

    def key_of(self, item: Any) -> str:
        if callable(self.key):
            return str(self.key(item))
        value = item.get(self.key) if isinstance(item, Mapping) else getattr(item, self.key, None)
        if value is None:
            raise KeyError(f"item has no key {self.key!r}: {str(item)[:200]}")
        return str(value)

    def stages_of(self, item: Any) -> list[Stage]:
        stages = list(self.stages(item) if callable(self.stages) else self.stages)
        names = [s.name for s in stages]
        if len(set(names)) != len(names):
            raise ValueError(f"stage names must be unique per record, got {names}")
        return stages

    async def run_one(self, item: Any) -> RecordResult:
        """Take one item through its stages (nothing is written)."""
        key = self.key_of(item)
        result = RecordResult(key, "kept", True, "", item)
        for stage in self.stages_of(item):
            usage = result.usage.setdefault(stage.name, {"calls": 0, "tokens": 0})
            feedback = None
            for attempt in range(1, stage.attempts + 1):
                ctx = StageContext(
                    key=key,
                    stage=stage.name,
                    attempt=attempt,
                    attempts=stage.attempts,
                    feedback=feedback,
                    seed=attempt_seed(self.seed, key, stage.name, attempt),
                    clients=self.clients,
                    usage=usage,
                    seed_calls=self.seed_calls,
                )
                outcome = await stage.fn(result.item, ctx)
                note = {"stage": stage.name, "attempt": attempt}
                if isinstance(outcome, Regenerate):
                    result.trail.append(
                        {**note, "outcome": "regenerate", "reason": outcome.feedback}
                    )
                    feedback = outcome.feedback
                    continue
                if isinstance(outcome, Failed):
                    result.trail.append({**note, "outcome": "failed", "reason": outcome.reason})
                    result.status, result.passed, result.reason = (
                        outcome.status,
                        False,
                        outcome.reason,
                    )
                    if outcome.item is not None:
                        result.item = outcome.item
                    return result
                if not isinstance(outcome, Passed):
                    raise TypeError(
                        f"stage {stage.name!r} returned {outcome!r}: return Passed, Failed or "
                        "Regenerate"
                    )
                result.item = outcome.item
                if outcome.stop:
                    result.trail.append({**note, "outcome": "stopped", "reason": outcome.status})
                    result.status = outcome.status
                    return result
                result.trail.append({**note, "outcome": "passed", "reason": ""})
                break
            else:
                reason = f"{stage.name}: no pass in {stage.attempts} attempts ({feedback})"
                note = {"stage": stage.name, "attempt": stage.attempts}
                result.trail.append({**note, "outcome": "failed", "reason": reason})
                result.status, result.passed, result.reason = "dropped", False, reason
                return result
        return result

    def record(self, result: RecordResult) -> dict[str, Any]:
        """The JSON line of a finished record."""
        return {
            "key": result.key,
            "status": result.status,
            "passed": result.passed,
            "reason": result.reason,
            "item": self.serialize(result.item),
            "trail": result.trail,
            "usage": result.usage,
        }

    async def run(
        self,
        items: Iterable[Any],
        path: str | Path,
        *,
        concurrency: int = 8,
        fsync: str = "close",
    ) -> PipelineReport:
        """Run every item not yet in ``path``; the report covers every record in the file."""

        async def job(item: Any) -> dict[str, Any]:
            return self.record(await self.run_one(item))

        with JsonlSink(path, key="key", fsync=fsync) as sink:  # type: ignore[arg-type]
            jobs = await run_jobs(items, job, sink, concurrency=concurrency, key=self.key_of)
            records = list(sink.records())
        return PipelineReport(jobs, records, pipeline_stats(records))


@dataclass
class PipelineReport:
    """What a run did (``jobs``), every finished record in the file and its yields."""

    jobs: JobReport
    records: list[dict[str, Any]]
    stats: PipelineStats


@dataclass
class StageYield:
    """One stage's yield: records in, passed at attempt k, failed by status and reason,
    regenerations, LLM calls and tokens."""

    entered: int = 0
    passed_at: Counter[int] = field(default_factory=Counter)
    failed: Counter[str] = field(default_factory=Counter)
    stopped: Counter[str] = field(default_factory=Counter)
    regenerated: int = 0
    calls: int = 0
    tokens: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "in": self.entered,
            "passed_at": {str(k): v for k, v in sorted(self.passed_at.items())},
            "failed": dict(sorted(self.failed.items())),
            "stopped": dict(sorted(self.stopped.items())),
            "regenerated": self.regenerated,
            "calls": self.calls,
            "tokens": self.tokens,
        }


@dataclass
class PipelineStats:
    """Yields per stage and per status, and LLM cost per kept record."""

    records: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    stages: dict[str, StageYield] = field(default_factory=dict)
    kept: int = 0
    kept_calls: int = 0
    kept_tokens: int = 0

    def to_dict(self) -> dict[str, Any]:
        per_kept = max(self.kept, 1)
        return {
            "records": self.records,
            "statuses": dict(sorted(self.statuses.items())),
            "stages": {name: y.to_dict() for name, y in self.stages.items()},
            "calls_per_kept": self.kept_calls / per_kept if self.kept else 0.0,
            "tokens_per_kept": self.kept_tokens / per_kept if self.kept else 0.0,
        }

    def table(self) -> str:
        """A markdown table of the per-stage yields (for a run report)."""
        lines = [
            "| stage | in | passed (at attempt) | failed | regenerated | LLM calls | tokens |",
            "|---|---|---|---|---|---|---|",
        ]
        for name, y in self.stages.items():
            passed = ", ".join(f"{n} (#{k})" for k, n in sorted(y.passed_at.items())) or "0"
            failed = ", ".join(f"{n} {r}" for r, n in y.failed.most_common()) or "0"
            lines.append(
                f"| {name} | {y.entered} | {passed} | {failed} | {y.regenerated} | {y.calls} "
                f"| {y.tokens} |"
            )
        return "\n".join(lines)


def pipeline_stats(records: Iterable[Mapping[str, Any]]) -> PipelineStats:
    """Yields computed from finished records (the pipeline's JSONL lines)."""
    stats = PipelineStats()
    for record in records:
        stats.records += 1
        stats.statuses[record["status"]] += 1
        seen: set[str] = set()
        for step in record["trail"]:
            y = stats.stages.setdefault(step["stage"], StageYield())
            if step["stage"] not in seen:
                seen.add(step["stage"])
                y.entered += 1
            if step["outcome"] in ("passed", "stopped"):
                y.passed_at[int(step["attempt"])] += 1
                if step["outcome"] == "stopped":
                    y.stopped[step["reason"]] += 1
            elif step["outcome"] == "regenerate":
                y.regenerated += 1
            elif step["outcome"] == "failed":
                y.failed[f"{record['status']}: {step['reason']}"] += 1
        for name, usage in record.get("usage", {}).items():
            y = stats.stages.setdefault(name, StageYield())
            y.calls += int(usage.get("calls", 0))
            y.tokens += int(usage.get("tokens", 0))
        if record["passed"]:
            stats.kept += 1
            stats.kept_calls += sum(int(u.get("calls", 0)) for u in record["usage"].values())
            stats.kept_tokens += sum(int(u.get("tokens", 0)) for u in record["usage"].values())
    return stats
