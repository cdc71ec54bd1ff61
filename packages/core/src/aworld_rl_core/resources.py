"""A per-process cache of heavy resources (an index, an encoder, a tool graph, a hint pack).

Environments are built once per episode, also inside verl's Ray workers; what they load goes
through :func:`shared`, so each process loads a resource once per spec::

    index = shared("rag_r1.faiss", {"path": path, "metric": "ip"}, lambda: load_index(path))
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

T = TypeVar("T")

_values: dict[tuple[str, str], Any] = {}
_locks: dict[tuple[str, str], threading.Lock] = {}
_guard = threading.Lock()


def resource_key(kind: str, spec: Mapping[str, Any] | str) -> tuple[str, str]:
    """The cache key: the kind and the canonical JSON of the spec (key order does not matter)."""
    try:
        text = spec if isinstance(spec, str) else json.dumps(spec, sort_keys=True, default=str)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"resource spec for {kind!r} must be JSON-like: {exc}") from None
    return kind, text


def shared(kind: str, spec: Mapping[str, Any] | str, build: Callable[[], T]) -> T:
    """The resource ``(kind, spec)``: built by ``build()`` on first use in this process.

    Thread-safe: concurrent callers with the same key wait for one build; different keys build
    in parallel. A build that raises caches nothing (the next call tries again).
    """
    key = resource_key(kind, spec)
    if key in _values:
        return _values[key]
    with _guard:
        lock = _locks.setdefault(key, threading.Lock())
    with lock:
        if key not in _values:
            _values[key] = build()
        return _values[key]


def clear(kind: str | None = None) -> None:
    """Forget cached resources (of one kind, or all): the next :func:`shared` call rebuilds."""
    with _guard:
        for key in [k for k in _values if kind is None or k[0] == kind]:
            del _values[key]
