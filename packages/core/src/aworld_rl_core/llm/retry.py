"""Retries with exponential backoff, full jitter and ``Retry-After``, run by tenacity."""

from __future__ import annotations

import asyncio
import email.utils
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import tenacity

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
    ``Retry-After`` when it sent a usable one: a finite number of seconds from 0 to
    ``max_retry_after_s``. Anything else (NaN, negative, absurdly long) falls back to the
    backoff."""

    max_retries: int = 5
    base_delay_s: float = 1.0
    max_delay_s: float = 30.0
    max_retry_after_s: float = 120.0

    def usable_retry_after(self, retry_after: float | None) -> float | None:
        """``retry_after`` when it is a wait to honour, else None (use the backoff)."""
        if retry_after is None or not math.isfinite(retry_after):
            return None
        return retry_after if 0.0 <= retry_after <= self.max_retry_after_s else None

    def wait(self) -> tenacity.wait.wait_base:
        """The tenacity wait strategy of this policy."""
        return _RetryAfterOrBackoff(self)


class _RetryAfterOrBackoff(tenacity.wait.wait_base):
    def __init__(self, policy: RetryPolicy) -> None:
        self.policy = policy
        self.backoff = tenacity.wait_random_exponential(
            multiplier=policy.base_delay_s, max=policy.max_delay_s
        )

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        outcome = retry_state.outcome
        error = outcome.exception() if outcome is not None else None
        after = self.policy.usable_retry_after(getattr(error, "retry_after", None))
        return after if after is not None else self.backoff(retry_state)


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds from a ``Retry-After`` header: delta-seconds or an HTTP date (a past date is 0);
    None if absent or unreadable. The policy decides whether the number is usable."""
    if not value:
        return None
    value = value.strip()
    try:
        return float(value)
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
    retrying = tenacity.AsyncRetrying(
        stop=tenacity.stop_after_attempt(policy.max_retries + 1),
        wait=policy.wait(),
        retry=tenacity.retry_if_exception_type(RetryableError),
        sleep=sleep,
        reraise=True,
    )
    try:
        async for attempt in retrying:
            with attempt:
                result = await call()
    except RetryableError as err:
        raise err.final from None
    return result
