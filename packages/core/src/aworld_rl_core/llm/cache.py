"""An on-disk response cache: sqlite in WAL mode, safe for many threads and processes."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

CACHE_FILE = "llm_cache.sqlite3"


def canonical_json(value: Any) -> str:
    """Deterministic JSON (sorted keys, no spaces), encodable as UTF-8: text that holds a lone
    surrogate (a reply can) is written with ``\\u`` escapes. Raises TypeError naming a bad value."""
    try:
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except TypeError as err:
        raise TypeError(f"LLM request is not JSON-serialisable: {err}") from None
    return text if utf8_safe(text) else json.dumps(value, sort_keys=True, separators=(",", ":"))


def utf8_safe(text: str) -> bool:
    """Whether ``text`` encodes as UTF-8 (no lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def cache_key(
    model: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    sampling: dict[str, Any],
) -> str:
    """SHA-256 over the canonical JSON of (model, messages, tools, sampling params).

    Sampled replies are cached too: pass a distinct ``seed`` to get (and cache) distinct samples
    of the same prompt.
    """
    payload = {"model": model, "messages": messages, "tools": tools or None, "sampling": sampling}
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


class ResponseCache:
    """Key -> JSON value store in ``<directory>/llm_cache.sqlite3``.

    One sqlite connection per thread; writers from several processes serialise on sqlite's lock
    (WAL mode, long busy timeout). A value that fails to decode counts as a miss.
    """

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory).expanduser()
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise OSError(f"cannot create the LLM cache directory {self.directory}: {err}") from err
        self.path = self.directory / CACHE_FILE
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        conn = self._conn()
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(
            "CREATE TABLE IF NOT EXISTS responses "
            "(key TEXT PRIMARY KEY, value TEXT NOT NULL, created REAL NOT NULL)"
        )
        conn.commit()

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=60.0, check_same_thread=False)
            conn.execute("PRAGMA busy_timeout=60000")
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    def get(self, key: str) -> Any | None:
        """The stored value, or None."""
        row = self._conn().execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            return json.loads(row[0])
        except json.JSONDecodeError:
            return None

    def put(self, key: str, value: Any) -> None:
        """Store (or replace) a value."""
        conn = self._conn()
        with conn:
            conn.execute(
                "INSERT OR REPLACE INTO responses (key, value, created) VALUES (?, ?, ?)",
                (key, canonical_json(value), time.time()),
            )

    def __len__(self) -> int:
        return self._conn().execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def __contains__(self, key: str) -> bool:
        row = self._conn().execute("SELECT 1 FROM responses WHERE key = ?", (key,)).fetchone()
        return row is not None

    def close(self) -> None:
        """Close every connection this cache opened."""
        with self._lock:
            for conn in self._connections:
                conn.close()
            self._connections.clear()
        self._local = threading.local()
