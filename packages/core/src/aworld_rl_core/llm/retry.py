"""Retries with exponential backoff, full jitter and ``Retry-After``."""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


class RetryableError(Exception):
    """Raised inside a retried call to ask for another attempt.

    ``final`` is the error to raise once the attempts are spent; ``retry_after`` is the server's
    requested wait in seconds, if it sent one.
    """

    def __init__(self, final: Exception, retry_after: float | None = None) -> None:
        super().__init__(str(final))
        self.final = final
        self.retry_after = retry_after


@dataclass(frozen=True)
class RetryPolicy:
    """``max_retries`` retries after the first attempt; the n-th wait is drawn uniformly from
    ``[0, min(max_delay_s, base_delay_s * 2**n)]`` (full jitter), or is the server's
    ``Retry-After`` (capped at ``max_retry_after_s``) when it sent one."""

    max_retries: int = 5
    base_delay_s: float = 1.0
    max_delay_s: float = 30.0
    max_retry_after_s: float = 120.0

    def delay(
        self, attempt: int, retry_after: float | None = None, rng: random.Random | None = None
    ) -> float:
        """Seconds to wait before retry number ``attempt`` (0-based)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after_s)
        cap = min(self.max_delay_s, self.base_delay_s * (2**attempt))
        return (rng or random).uniform(0.0, cap)


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds from a ``Retry-After`` header: delta-seconds or an HTTP date; None if absent/bad."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(when.timestamp() - (time.time() if now is None else now), 0.0)


async def retry_async(
    call: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> T:
    """Run ``call``; on :class:`RetryableError` wait and try again, up to ``policy.max_retries``
    times, then raise the error's ``final``. Any other exception propagates at once."""
    attempt = 0
    while True:
        try:
            return await call()
        except RetryableError as err:
            if attempt >= policy.max_retries:
                raise err.final from None
            await sleep(policy.delay(attempt, err.retry_after))
            attempt += 1
