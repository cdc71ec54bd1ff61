"""Hard-data re-sampling (v3 HDR) and self-refinement (v1) building blocks.

The current model answers training (v1) or hard-pool (v3) queries; v1 filters its answers with
FCDR, v3 with a panel of judges: judge m scores answer r in [0, 1], r passes judge m when the
score reaches the threshold tau, and r is kept when all judges pass it (the paper's equation;
``vote="majority"`` follows its prose instead).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from aworld_rl_funreason.data import FcSample, prompt_messages, split_response
from aworld_rl_funreason.fcdr.stages import validate_call_list
from aworld_rl_funreason.fcdr.verdict import parse_judge

Vote = Literal["unanimous", "majority"]
_SCORE = re.compile(r"<score>\s*([0-9]*\.?[0-9]+)\s*</score>", re.IGNORECASE)


def parse_score(text: str) -> float | None:
    """A score in [0, 1] from the last ``<score>`` tag, else 1/0 from a ``<judge>`` tag."""
    tail = (text or "").rpartition("</think>")[2] if "</think>" in (text or "") else text or ""
    found = _SCORE.findall(tail)
    if found:
        value = float(found[-1])
        return value if 0.0 <= value <= 1.0 else None
    verdict = parse_judge(tail)
    return None if verdict is None else float(verdict)


def vote(
    scores: Sequence[float | None], *, threshold: float = 0.5, rule: Vote = "unanimous"
) -> bool:
    """Score(r) = (1/k) sum_m 1[J_m(r) >= tau]; kept when it is 1 (unanimous) or > 1/2
    (majority). A judge without a readable score counts as a fail."""
    if not scores:
        raise ValueError("vote needs at least one judge score")
    passed = sum(1 for s in scores if s is not None and s >= threshold)
    if rule == "unanimous":
        return passed == len(scores)
    if rule == "majority":
        return passed > len(scores) / 2
    raise ValueError(f"vote rule must be 'unanimous' or 'majority', got {rule!r}")


def judge_messages(sample: FcSample, response: str) -> list[dict[str, Any]]:
    """Ask a judge to score a model's response to a function-calling request."""
    import json

    text = (
        "Score how well the assistant's response below answers the user's request with the "
        "given tools: the right functions, correct parameter names and values derived from "
        "the request, nothing missing or invented, and a valid call list [f(a=1), ...]. "
        "Think first, then end with <score>x</score>, x between 0 and 1 (1 = fully correct).\n\n"
        f"## Tools\n{json.dumps(sample.tools, ensure_ascii=False, indent=1)}\n\n"
        f"## User request\n{sample.query}\n\n## Assistant response\n{response}"
    )
    return [{"role": "user", "content": text}]


def sample_seed(k: int, n: int, base: int | None = None) -> dict[str, int]:
    """The sampling params of the ``k``-th of ``n`` samples: its own ``seed`` (``base + k``,
    base 0 when unset) so the n requests differ (a cache stores n replies, a server samples n
    times); nothing when one unseeded sample is asked for."""
    if n == 1 and base is None:
        return {}
    return {"seed": (base or 0) + k}


@dataclass(frozen=True)
class Candidate:
    """One sampled answer to a query."""

    source: FcSample
    index: int
    text: str

    def as_sample(self, tag: str) -> FcSample:
        """The answer as a training sample; a valid call list in canonical form."""
        reasoning, answer = split_response(self.text)
        canonical, _ = validate_call_list(answer, self.source.tools)
        answer = canonical or answer
        return self.source.with_(
            id=f"{self.source.id}#{tag}s{self.index}",
            answer=answer,
            reasoning=reasoning,
            meta={**self.source.meta, "sampled_from": self.source.id, "sample": self.index},
        )


async def run_resumable(
    items: Sequence[Any],
    key: Callable[[Any], str],
    fn: Callable[[Any], Awaitable[dict[str, Any]]],
    path: Path | None = None,
    concurrency: int = 32,
) -> list[dict[str, Any]]:
    """``fn(item)`` for every item, at most ``concurrency`` at a time, results in item order.
    With ``path`` each result is written to a JSONL sink as it finishes, under ``key(item)``,
    and an item already there is not computed again (a killed round resumes without asking a
    model or a judge twice)."""
    import asyncio

    if path is None:
        sem = asyncio.Semaphore(concurrency)

        async def bounded(item: Any) -> dict[str, Any]:
            async with sem:
                return await fn(item)

        return list(await asyncio.gather(*(bounded(i) for i in items)))
    from aworld_rl_core.llm.jobs import run_jobs
    from aworld_rl_core.llm.jsonl_sink import JsonlSink

    async def job(item: Any) -> dict[str, Any]:
        return {"key": key(item), **(await fn(item))}

    with JsonlSink(path, key="key", fsync="close") as sink:
        report = await run_jobs(items, job, sink, concurrency=concurrency, key=key)
        if report.failed:
            raise RuntimeError(f"{len(report.failed)} jobs failed: {report.failed}")
        done = {r["key"]: r for r in sink.records()}
    return [done[key(i)] for i in items]


async def sample_candidates(
    client: Any,
    samples: Sequence[FcSample],
    n: int,
    *,
    prompt: str = "bfcl",
    concurrency: int = 32,
    seed: int | None = None,
    path: Path | None = None,
    **sampling: Any,
) -> list[Candidate]:
    """``n`` answers of the model behind ``client`` to each sample's query, the k-th with seed
    ``seed + k`` (:func:`sample_seed`); with ``path``, kept in a resumable sink."""
    jobs = [(s, k) for s in samples for k in range(n)]

    async def one(job: tuple[FcSample, int]) -> dict[str, Any]:
        s, k = job
        messages = prompt_messages(s, prompt)
        reply = await client.chat(messages, **sampling, **sample_seed(k, n, seed))
        return {"text": reply.text or ""}

    records = await run_resumable(jobs, candidate_key, one, path, concurrency)
    return [Candidate(s, k, r["text"]) for (s, k), r in zip(jobs, records, strict=True)]


def candidate_key(job: tuple[FcSample, int]) -> str:
    """The sink key of the k-th answer to a sample: ``<id>#<k>``."""
    return f"{job[0].id}#{job[1]}"


async def judge_candidate(
    candidate: Candidate,
    judges: Sequence[Any],
    *,
    threshold: float = 0.5,
    rule: Vote = "unanimous",
    deterministic: bool = True,
    sampling: dict[str, Any] | None = None,
) -> tuple[bool, list[float | None], str]:
    """(kept, judge scores, why). With ``deterministic`` an answer that does not parse or
    breaks the tool schema is rejected without asking the judges."""
    _, answer = split_response(candidate.text)
    if deterministic:
        fixed, why = validate_call_list(answer, candidate.source.tools)
        if fixed is None:
            return False, [], f"rule: {why}"
    import asyncio

    messages = judge_messages(candidate.source, candidate.text)
    replies = await asyncio.gather(*(j.chat(messages, **(sampling or {})) for j in judges))
    scores = [parse_score(r.text) for r in replies]
    kept = vote(scores, threshold=threshold, rule=rule)
    return kept, scores, "" if kept else f"judges: {scores}"
