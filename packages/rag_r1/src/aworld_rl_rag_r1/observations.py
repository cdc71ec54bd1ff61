"""The ``<information>`` block spliced into the model's turn, in RAG-R1's two formats.

- single query: ``Doc i: {contents}`` lines; the whole block is truncated to the token budget
  and keeps its closing tag;
- multi query: ``json.dumps({"query": [...], "documents": [block_1, ...]}, indent=2)`` where
  each block holds one query's ``Doc i: ...`` lines, truncated to the budget separately.

Truncation counts tokens of the policy's tokenizer (``TokenTruncator``) or white-space words
(``WordTruncator``) when no tokenizer is given.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, Protocol

OPEN = "\n<information>\n"
CLOSE = "\n</information>\n"
_WORD = re.compile(r"\S+")
INVALID_ACTION = (
    "\nMy previous action is invalid. If I want to search, I should put the query between "
    "<search> and </search>. If I want to give the final answer, I should put the answer "
    "between <answer> and </answer>. Let me try again.\n"
)


class Truncator(Protocol):
    def count(self, text: str) -> int: ...

    def truncate(self, text: str, max_tokens: int) -> str: ...


class WordTruncator:
    """Counts white-space separated words (no tokenizer needed)."""

    def count(self, text: str) -> int:
        return len(text.split())

    def truncate(self, text: str, max_tokens: int) -> str:
        if max_tokens <= 0:
            return ""
        for n, match in enumerate(_WORD.finditer(text), start=1):
            if n == max_tokens:
                return text[: match.end()]
        return text


class TokenTruncator:
    """Counts and cuts with a Hugging Face tokenizer (the policy's: the paper's budget unit)."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer

    def _ids(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def count(self, text: str) -> int:
        return len(self._ids(text))

    def truncate(self, text: str, max_tokens: int) -> str:
        ids = self._ids(text)
        if len(ids) <= max_tokens:
            return text
        return self.tokenizer.decode(ids[: max(0, max_tokens)], skip_special_tokens=False)


def cut_passages(
    contents: Sequence[str], truncator: Truncator, max_passage_tokens: int
) -> list[str]:
    """Each passage cut to ``max_passage_tokens`` tokens (0: as they are)."""
    if max_passage_tokens <= 0:
        return list(contents)
    return [truncator.truncate(text, max_passage_tokens) for text in contents]


def doc_lines(contents: Sequence[str]) -> str:
    """``Doc 1: ...\\nDoc 2: ...`` for one query's passages."""
    return "\n".join(f"Doc {i + 1}: {text}" for i, text in enumerate(contents))


def single_query(
    contents: Sequence[str], truncator: Truncator, max_tokens: int, max_passage_tokens: int = 0
) -> str:
    """The single-query block: one line per passage (each cut to ``max_passage_tokens``), cut
    to ``max_tokens`` tokens in all (tags included), always closed."""
    contents = cut_passages(contents, truncator, max_passage_tokens)
    body = "".join(f"Doc {i + 1}: {text}\n" for i, text in enumerate(contents))
    budget = max_tokens - truncator.count(OPEN) - truncator.count(CLOSE)
    return OPEN + truncator.truncate(body, max(0, budget)) + CLOSE


def multi_query(
    queries: Sequence[str],
    contents: Sequence[Sequence[str]],
    truncator: Truncator,
    max_tokens: int,
    max_passage_tokens: int = 0,
) -> str:
    """The multi-query block: JSON of the queries and one passage block per query, each
    passage cut to ``max_passage_tokens`` (0: whole) and each block to ``max_tokens`` tokens."""
    if len(queries) != len(contents):
        raise ValueError(f"{len(queries)} queries but {len(contents)} result lists")
    blocks = [
        truncator.truncate(doc_lines(cut_passages(c, truncator, max_passage_tokens)), max_tokens)
        for c in contents
    ]
    return OPEN + json.dumps({"query": list(queries), "documents": blocks}, indent=2) + CLOSE
