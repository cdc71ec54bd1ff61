"""``run_jobs``: map a function over items into a :class:`JsonlSink`, resumably."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from aworld_rl_core.llm.jsonl_sink import JsonlSink

Item = Any
Result = dict[str, Any]


@dataclass
class JobReport:
    """What one ``run_jobs`` call did."""

    seen: int = 0
    skipped: int = 0
    written: int = 0
    failed: dict[str, str] = field(default_factory=dict)


def _item_key_fn(key: str | Callable[[Item], Any] | None, sink: JsonlSink) -> Callable[[Item], str]:
    if key is None:
        return sink.key_of
    if callable(key):
        return lambda item: str(key(item))

    def by_field(item: Item) -> str:
        if not isinstance(item, dict) or key not in item:
            raise KeyError(f"item has no key field {key!r}: {str(item)[:200]}")
        return str(item[key])

    return by_field


async def run_jobs(
    items: Iterable[Item],
    fn: Callable[[Item], Awaitable[Result] | Result],
    sink: JsonlSink,
    *,
    concurrency: int = 32,
    key: str | Callable[[Item], Any] | None = None,
    on_error: Literal["raise", "skip"] = "raise",
    on_result: Callable[[str, Result], None] | None = None,
) -> JobReport:
    """Compute ``fn(item)`` for every item whose key is not yet in ``sink`` and append each
    result the moment it is ready, with at most ``concurrency`` calls in flight.

    A job killed at any point restarts where it stopped: finished results are on disk, and
    their keys are skipped on the next run; an item seen twice is computed once. ``key`` gives
    an item's key (default: the sink's key applied to the item); a result that lacks the sink's
    key field gets the item's key; one whose key differs is an error. ``fn`` may be sync (run
    in a thread) or async. ``on_error="skip"`` records failures in the report and goes on
    (a rerun retries them); ``"raise"`` stops at the first one.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
    item_key = _item_key_fn(key, sink)
    report = JobReport()
    claimed: set[str] = set()
    is_async = inspect.iscoroutinefunction(fn)
    source = iter(items)

    def next_item() -> tuple[str, Item] | None:
        for item in source:
            report.seen += 1
            k = item_key(item)
            if k in sink or k in claimed:
                report.skipped += 1
                continue
            claimed.add(k)
            return k, item
        return None

    async def compute(k: str, item: Item) -> Result:
        result: Any = await asyncio.to_thread(fn, item) if not is_async else fn(item)
        if inspect.isawaitable(result):
            result = await result
        if not isinstance(result, dict):
            raise TypeError(f"job function must return a dict, got {type(result).__name__}")
        if isinstance(sink.key, str) and sink.key not in result:
            result = {
                sink.key: item[sink.key] if isinstance(item, dict) and sink.key in item else k,
                **result,
            }
        if sink.key_of(result) != k:
            raise ValueError(f"job result key {sink.key_of(result)!r} differs from item key {k!r}")
        return result

    async def worker() -> None:
        while (job := next_item()) is not None:
            k, item = job
            try:
                result = await compute(k, item)
            except Exception as err:
                if on_error == "raise":
                    raise
                report.failed[k] = f"{type(err).__name__}: {err}"
                continue
            if await asyncio.to_thread(sink.write, result):
                report.written += 1
                if on_result is not None:
                    on_result(k, result)

    workers = [asyncio.ensure_future(worker()) for _ in range(concurrency)]
    try:
        await asyncio.gather(*workers)
    finally:
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
    return report


def run_jobs_sync(*args: Any, **kwargs: Any) -> JobReport:
    """Blocking :func:`run_jobs` (starts its own event loop)."""
    return asyncio.run(run_jobs(*args, **kwargs))
