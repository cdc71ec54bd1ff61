"""Backoff arithmetic and Retry-After parsing."""

from __future__ import annotations

import asyncio
import email.utils
import math

import pytest

from aworld_rl_core.llm.retry import RetryableError, RetryPolicy, parse_retry_after, retry_async


def waits(policy, retry_after=None, failures=5):
    """The waits ``retry_async`` takes before each retry of a call that fails ``failures`` times."""
    recorded, calls = [], []

    async def sleep(seconds):
        recorded.append(seconds)

    async def flaky():
        calls.append(1)
        if len(calls) <= failures:
            raise RetryableError(ValueError("busy"), retry_after=retry_after)
        return "ok"

    assert asyncio.run(retry_async(flaky, policy, sleep=sleep)) == "ok"
    return recorded


def test_full_jitter_bounds_double_until_the_cap():
    policy = RetryPolicy(max_retries=5, base_delay_s=1.0, max_delay_s=5.0)
    runs = [waits(policy) for _ in range(200)]
    for attempt, cap in enumerate([1.0, 2.0, 4.0, 5.0, 5.0]):
        draws = [run[attempt] for run in runs]
        assert min(draws) >= 0.0 and max(draws) <= cap
        assert max(draws) > 0.8 * cap  # the jitter spans the range


def test_a_usable_retry_after_wins():
    policy = RetryPolicy(max_retries=3, base_delay_s=1.0, max_retry_after_s=60.0)
    assert waits(policy, retry_after=12.0, failures=2) == [12.0, 12.0]
    assert waits(policy, retry_after=0.0, failures=1) == [0.0]


@pytest.mark.parametrize("after", [float("nan"), float("inf"), -4.0, 3600.0, 1e300])
def test_unusable_retry_after_falls_back_to_backoff(after):
    policy = RetryPolicy(max_retries=3, base_delay_s=1.0, max_delay_s=5.0, max_retry_after_s=60)
    recorded = waits(policy, retry_after=after, failures=3)
    assert len(recorded) == 3
    assert all(0.0 <= w <= cap for w, cap in zip(recorded, [1.0, 2.0, 4.0], strict=True))
    assert policy.usable_retry_after(after) is None


def test_parse_retry_after():
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after(" 1.5 ") == 1.5
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    assert parse_retry_after("-3") == -3.0  # read as sent; the policy refuses it
    assert math.isnan(parse_retry_after("nan"))
    date = email.utils.formatdate(1_000_030.0, usegmt=True)
    assert parse_retry_after(date, now=1_000_000.0) == pytest.approx(30.0)
    assert parse_retry_after(date, now=2_000_000.0) == 0.0


def test_retry_async_counts_attempts_and_raises_final():
    calls, waits = [], []

    async def sleep(seconds):
        waits.append(seconds)

    async def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise RetryableError(ValueError(f"fail {len(calls)}"), retry_after=0.25)
        return "ok"

    assert asyncio.run(retry_async(flaky, RetryPolicy(max_retries=5), sleep=sleep)) == "ok"
    assert waits == [0.25, 0.25]

    calls.clear()

    async def always():
        calls.append(1)
        raise RetryableError(ValueError(f"fail {len(calls)}"))

    with pytest.raises(ValueError, match="fail 3"):
        asyncio.run(retry_async(always, RetryPolicy(max_retries=2), sleep=sleep))
    assert len(calls) == 3


def test_other_errors_are_not_retried():
    calls = []

    async def broken():
        calls.append(1)
        raise KeyError("x")

    with pytest.raises(KeyError):
        asyncio.run(retry_async(broken, RetryPolicy(max_retries=5)))
    assert calls == [1]
