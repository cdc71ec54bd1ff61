"""Test doubles shared by this package's tests (its default session and ``nox -s tests_verl``,
which installs the package too)."""

from __future__ import annotations

from typing import Any


class CountingRetriever:
    """A test double around a real retriever: forwards every search and records each request's
    queries in ``calls`` (one list per request, in order)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[list[str]] = []
        self.manifest_hash = inner.manifest_hash

    def search(self, queries: Any, topk: int, gold: Any = None) -> Any:
        self.calls.append(list(queries))
        return self.inner.search(queries, topk, gold)
