"""A resumable, append-only JSONL file of results keyed by a record field."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

from aworld_rl_core.llm.cache import utf8_safe

KeySpec = str | Callable[[dict[str, Any]], Any]
FsyncPolicy = Literal["always", "close", "never"]


class JsonlSink:
    """Append records to ``path``, one JSON object per line, skipping keys already written.

    On open it reads the existing file: every complete line's key counts as done; a torn last
    line (a writer killed mid-write) is cut off so appends continue cleanly. Each record goes
    out in one ``write`` followed by ``flush`` (it survives ``kill -9``) and, with
    ``fsync="always"``, ``os.fsync`` before ``write`` returns (it survives power loss;
    concurrent writer threads share fsyncs); ``"close"`` syncs once on close, ``"never"``
    leaves it to the OS. An exclusive ``flock`` stops a second writer on the file.

    ``key`` is a field name or a function of the record; keys are compared as strings. Text that
    is not valid UTF-8 (a lone surrogate) is written with JSON ``\\u`` escapes and reads back
    equal.
    """

    def __init__(self, path: str | Path, *, key: KeySpec = "id", fsync: FsyncPolicy = "always"):
        if fsync not in ("always", "close", "never"):
            raise ValueError(f"fsync must be 'always', 'close' or 'never', got {fsync!r}")
        self.path = Path(path)
        self.key = key
        self.fsync = fsync
        self._lock = threading.Lock()
        self._sync_lock = threading.Lock()
        self._written = self._synced = 0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "a+b")  # noqa: SIM115 - closed in close()
        try:
            self._lock_file()
            self._done: set[str] = set()
            self.repaired_bytes = self._load()
        except BaseException:
            self._file.close()
            raise

    def _lock_file(self) -> None:
        try:
            import fcntl
        except ImportError:  # not POSIX: no cross-process guard
            return
        try:
            fcntl.flock(self._file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RuntimeError(
                f"{self.path} is open for writing by another process; run one job per sink file"
            ) from None

    def key_of(self, record: dict[str, Any]) -> str:
        """The string key of ``record``; a clear error if it has none."""
        if callable(self.key):
            value = self.key(record)
        else:
            if not isinstance(record, dict) or self.key not in record:
                raise KeyError(f"record has no key field {self.key!r}: {str(record)[:200]}")
            value = record[self.key]
        if value is None:
            raise KeyError(f"record key is None: {str(record)[:200]}")
        return str(value)

    def _load(self) -> int:
        """Read done keys; cut a torn last line. Returns the number of bytes cut."""
        self._file.seek(0)
        data = self._file.read()
        good_end = 0
        for lineno, line in enumerate(data.splitlines(keepends=True), start=1):
            if not line.endswith(b"\n"):
                break  # torn tail, no newline
            text = line.strip()
            if text:
                try:
                    record = json.loads(text)
                except ValueError:
                    if good_end + len(line) == len(data):
                        break  # torn tail that happened to end in a newline byte
                    raise ValueError(
                        f"{self.path}:{lineno} is not valid JSON and is not the last line; "
                        "the file is corrupt: fix or remove that line"
                    ) from None
                self._done.add(self.key_of(record))
            good_end += len(line)
        cut = len(data) - good_end
        if cut:
            self._file.truncate(good_end)
            self._file.flush()
            os.fsync(self._file.fileno())
        self._file.seek(0, os.SEEK_END)
        return cut

    def __contains__(self, key: object) -> bool:
        return str(key) in self._done

    def __len__(self) -> int:
        return len(self._done)

    @property
    def done_keys(self) -> frozenset[str]:
        return frozenset(self._done)

    def write(self, record: dict[str, Any]) -> bool:
        """Append ``record`` unless its key is done; True if written."""
        key = self.key_of(record)
        text = json.dumps(record, ensure_ascii=False)
        if not utf8_safe(text):  # a lone surrogate (from a reply): escape it, lose nothing
            text = json.dumps(record)
        line = (text + "\n").encode("utf-8")
        with self._lock:
            if key in self._done:
                return False
            if self._file.closed:
                raise ValueError(f"JsonlSink {self.path} is closed")
            self._file.write(line)
            self._file.flush()
            self._done.add(key)
            self._written += 1
            seq = self._written
        if self.fsync == "always":
            self._sync_through(seq)
        return True

    def _sync_through(self, seq: int) -> None:
        """fsync until record ``seq`` is on disk; one fsync covers every record written before
        it started, so concurrent writers share syncs (group commit)."""
        with self._sync_lock:
            if self._synced >= seq:
                return
            with self._lock:
                if self._file.closed:
                    return  # close() synced it
                target = self._written
                fd = self._file.fileno()
            os.fsync(fd)
            self._synced = target

    def records(self) -> Iterator[dict[str, Any]]:
        """Every record written so far (read back from the file)."""
        with self._lock, open(self.path, "rb") as f:
            lines = f.read().splitlines()
        for line in lines:
            if line.strip():
                yield json.loads(line)

    def close(self) -> None:
        with self._lock:
            if self._file.closed:
                return
            self._file.flush()
            if self.fsync != "never":
                os.fsync(self._file.fileno())
            self._file.close()

    def __enter__(self) -> JsonlSink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
