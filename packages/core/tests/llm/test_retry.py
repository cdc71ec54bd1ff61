"""Backoff arithmetic and Retry-After parsing."""

from __future__ import annotations

import asyncio
import email.utils
import random

import pytest

from aworld_rl_core.llm.retry import RetryableError, RetryPolicy, parse_retry_after, retry_async


def test_full_jitter_bounds_double_until_the_cap():
    policy = RetryPolicy(base_delay_s=1.0, max_delay_s=5.0)
    rng = random.Random(0)
    for attempt, cap in enumerate([1.0, 2.0, 4.0, 5.0, 5.0]):
        draws = [policy.delay(attempt, rng=rng) for _ in range(200)]
        assert min(draws) >= 0.0 and max(draws) <= cap
        assert max(draws) > 0.8 * cap  # the jitter spans the range


def test_retry_after_wins_and_is_capped():
    policy = RetryPolicy(base_delay_s=1.0, max_retry_after_s=60.0)
    assert policy.delay(0, retry_after=12.0) == 12.0
    assert policy.delay(3, retry_after=3600.0) == 60.0
    assert policy.delay(0, retry_after=-4.0) == 0.0


def test_parse_retry_after():
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after(" 1.5 ") == 1.5
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
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
