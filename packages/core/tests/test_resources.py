"""``resources.shared``: one build per process and spec, thread-safe, failures not cached."""

from __future__ import annotations

import threading
import time

import pytest

from aworld_rl_core import resources


@pytest.fixture(autouse=True)
def _clean():
    yield
    resources.clear("test")


def test_one_build_per_spec_whatever_the_key_order():
    builds = []

    def build():
        builds.append(1)
        return object()

    a = resources.shared("test", {"path": "x", "dim": 8}, build)
    b = resources.shared("test", {"dim": 8, "path": "x"}, build)
    c = resources.shared("test", {"dim": 16, "path": "x"}, build)
    assert a is b and a is not c and len(builds) == 2
    assert resources.shared("other-kind", {"dim": 8, "path": "x"}, build) is not a
    resources.clear("other-kind")


def test_concurrent_callers_wait_for_a_single_build():
    builds, results = [], []

    def build():
        builds.append(threading.get_ident())
        time.sleep(0.05)  # a slow load: the other threads must wait, not build again
        return "index"

    threads = [
        threading.Thread(target=lambda: results.append(resources.shared("test", "s", build)))
        for _ in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == ["index"] * 8 and len(builds) == 1


def test_a_failed_build_is_retried_and_specs_must_be_json():
    calls = []

    def flaky():
        calls.append(1)
        if len(calls) == 1:
            raise OSError("index file missing")
        return "ok"

    with pytest.raises(OSError, match="missing"):
        resources.shared("test", "flaky", flaky)
    assert resources.shared("test", "flaky", flaky) == "ok" and len(calls) == 2
    with pytest.raises(TypeError, match="JSON-like"):
        resources.shared("test", {"bad": float("nan"), 1: {1, 2}}, flaky)
