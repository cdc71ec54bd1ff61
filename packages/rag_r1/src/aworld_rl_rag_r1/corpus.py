"""Corpus files, the paper's 100-word passages, and an on-disk passage store.

Documents are JSONL lines ``{"id", "title", "text"}`` (``text`` may be a list of paragraphs, as
in KILT's knowledge source, whose ``wikipedia_id`` / ``wikipedia_title`` keys are read too, and
whose ``BULLET::::`` / ``Section::::`` markers are dropped). Lines that already hold passages,
``{"id", "contents"}`` (Search-R1's wiki-18), are taken as they are.

A passage's ``contents`` is ``title + three spaces + up to 100 words`` (RAG-R1's KILT split). The
store keeps passages as JSONL plus a byte-offset array, so a 21M-passage corpus is read by
memory map instead of being held as Python strings.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import re
import secrets
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from aworld_rl_core.atomic import write_atomic

WORDS_PER_PASSAGE = 100
TITLE_SEPARATOR = "   "
_MARKERS = re.compile(r"(BULLET::::|Section::::)\s*")
STORE_META = "store.json"
STORE_FILE = "passages.jsonl"
OFFSETS_FILE = "offsets.npy"


@dataclass(frozen=True)
class Passage:
    """One retrievable unit: ``id`` (row number as text), ``contents``, the source document's
    corpus id (``doc_id``) and its ``title``."""

    id: str
    contents: str
    doc_id: str = ""
    title: str = ""


def title_of(contents: str) -> str:
    """The title a passage's ``contents`` starts with: before the three spaces of RAG-R1's
    split, or the first line of Search-R1's ``"Title"\ntext`` passages ('' when neither)."""
    if TITLE_SEPARATOR in contents:
        return contents.split(TITLE_SEPARATOR, 1)[0]
    if "\n" in contents:
        return contents.split("\n", 1)[0].strip().strip('"')
    return ""


class CorpusError(ValueError):
    """A corpus line that cannot be read (names the file and line)."""


def read_documents(path: str | Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSONL corpus, one per non-empty line."""
    path = Path(path)
    if not path.is_file():
        raise CorpusError(f"corpus file '{path}' does not exist")
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise CorpusError(f"{path}:{number}: not JSON ({exc.msg})") from None
            if not isinstance(record, dict):
                raise CorpusError(f"{path}:{number}: expected a JSON object per line")
            yield record


def _text(record: Mapping[str, Any]) -> str:
    text = record.get("text", "")
    if isinstance(text, list):
        text = " ".join(str(t) for t in text)
    return _MARKERS.sub("", str(text))


def chunk(title: str, text: str, words: int = WORDS_PER_PASSAGE) -> list[str]:
    """``title + "   " + words`` for each window of ``words`` words (RAG-R1's split)."""
    if words < 1:
        raise ValueError(f"words per passage must be >= 1, got {words}")
    tokens = text.split()
    return [
        f"{title}{TITLE_SEPARATOR}{' '.join(tokens[i : i + words])}"
        for i in range(0, len(tokens), words)
    ]


def passages(
    records: Iterable[Mapping[str, Any]], words: int = WORDS_PER_PASSAGE, source: str = "corpus"
) -> Iterator[Passage]:
    """Passages of documents (chunked) or of passage lines (as they are), numbered from 0."""
    row = 0
    for number, record in enumerate(records, start=1):
        if "contents" in record:
            pieces = [str(record["contents"])]
            doc_id = str(record.get("id", number - 1))
            title = record.get("title") or title_of(pieces[0])
        else:
            doc_id = record.get("id", record.get("wikipedia_id", record.get("_id")))
            title = record.get("title", record.get("wikipedia_title"))
            if doc_id is None or title is None or "text" not in record:
                raise CorpusError(
                    f"{source}: document {number} needs 'id', 'title' and 'text' (or 'contents' "
                    f"for a passage); it has {sorted(record)}"
                )
            pieces = chunk(str(title), _text(record), words)
        for contents in pieces:
            yield Passage(str(row), contents, str(doc_id), str(title))
            row += 1


class PassageStore:
    """Passages on disk: ``passages.jsonl`` read through a memory map at byte offsets."""

    def __init__(self, directory: str | Path) -> None:
        self.dir = Path(directory)
        meta_path = self.dir / STORE_META
        if not meta_path.is_file():
            raise CorpusError(
                f"'{self.dir}' holds no passage store ({STORE_META} missing): build it with "
                "`aworld-run rag_r1.build-index`"
            )
        self.meta = json.loads(meta_path.read_text(encoding="utf-8"))
        self.offsets = np.load(self.dir / OFFSETS_FILE, mmap_mode="r")
        self._file = (self.dir / STORE_FILE).open("rb")
        size = os.fstat(self._file.fileno()).st_size
        self._map = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        if len(self.offsets) != self.meta["count"] + 1:
            raise CorpusError(f"'{self.dir}': offsets do not match the passage count; rebuild")
        self._by_doc: dict[str, list[int]] | None = None

    @property
    def corpus_hash(self) -> str:
        return str(self.meta["corpus_hash"])

    def __len__(self) -> int:
        return int(self.meta["count"])

    def __getitem__(self, row: int) -> Passage:
        if not 0 <= row < len(self):
            raise IndexError(f"passage {row} out of range (store has {len(self)})")
        start, end = int(self.offsets[row]), int(self.offsets[row + 1])
        record = json.loads(self._map[start:end])
        contents = record["contents"]
        title = record.get("title")
        return Passage(
            record["id"],
            contents,
            record.get("doc_id", ""),
            title_of(contents) if title is None else title,
        )

    def rows_of(self, doc_id: str) -> list[int]:
        """Rows of one source document's passages (an index built on first use)."""
        if self._by_doc is None:
            self._by_doc = {}
            for row in range(len(self)):
                self._by_doc.setdefault(self[row].doc_id, []).append(row)
        return self._by_doc.get(str(doc_id), [])

    def iter_contents(self, start: int = 0, end: int | None = None) -> Iterator[str]:
        for row in range(start, len(self) if end is None else min(end, len(self))):
            yield self[row].contents

    def close(self) -> None:
        if isinstance(self._map, mmap.mmap):
            self._map.close()
        self._file.close()


def write_store(items: Iterable[Passage], directory: str | Path) -> PassageStore:
    """Write passages and their offsets; the meta file (count, corpus hash) is written last,
    so a killed write leaves no store that looks complete."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    offsets = [0]
    tmp = directory / f".{STORE_FILE}.{os.getpid()}-{secrets.token_hex(4)}.tmp"  # per build
    with tmp.open("wb") as handle:
        for item in items:
            line = json.dumps(
                {
                    "id": item.id,
                    "contents": item.contents,
                    "doc_id": item.doc_id,
                    "title": item.title,
                },
                ensure_ascii=False,
            ).encode("utf-8")
            handle.write(line + b"\n")
            offsets.append(offsets[-1] + len(line) + 1)
            digest.update(item.id.encode() + b"\0" + item.contents.encode("utf-8") + b"\n")
    os.replace(tmp, directory / STORE_FILE)
    np.save(directory / OFFSETS_FILE, np.asarray(offsets, dtype=np.int64))
    meta = {"count": len(offsets) - 1, "corpus_hash": digest.hexdigest()}
    write_atomic(directory / STORE_META, json.dumps(meta))
    return PassageStore(directory)


def corpus_hash(items: Iterable[Passage]) -> str:
    """The hash ``write_store`` records, computed over passages without writing them."""
    digest = hashlib.sha256()
    for item in items:
        digest.update(item.id.encode() + b"\0" + item.contents.encode("utf-8") + b"\n")
    return digest.hexdigest()
