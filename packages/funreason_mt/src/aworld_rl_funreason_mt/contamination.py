"""The contamination guard: synthesized data must not copy BFCL's test set.

FunReason-MT and HardGen synthesize in BFCL's own API classes and evaluate on BFCL multi-turn.
The guard flags (and the pipeline drops by default) a round whose

- query overlaps a BFCL test question: the share of the query's word n-grams found in one
  question reaches ``max_overlap``;
- ground-truth call sequence equals a ground-truth turn of a BFCL test entry (calls read with
  the entry's signatures, so ``sort('a.txt')`` equals ``sort(file_name='a.txt')``).

Held-out API classes are left out of the tool space itself (``space.held_out_classes``); the
report lists the classes and tools every kept trajectory used.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from aworld_rl_core.tooluse import ToolCallParseError, parse_python_calls, signatures_from_tools

_WORD = re.compile(r"[a-z0-9]+")


def ngrams(text: str, n: int) -> set[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    if len(words) < n:
        return {tuple(words)} if words else set()
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def canonical(
    calls: Sequence[str], signatures: dict[str, list[str]] | None = None
) -> tuple[str, ...]:
    """Call strings in one spelling (keyword arguments, BFCL's python call form)."""
    out = []
    for call in calls:
        try:
            out += [c.to_python() for c in parse_python_calls(call, signatures=signatures)]
        except ToolCallParseError:
            out.append(call)
    return tuple(out)


@dataclass(frozen=True)
class Flag:
    """Why a round was flagged, and the BFCL entry it resembles."""

    kind: str  # "query_overlap" | "ground_truth_equal"
    bfcl_id: str
    score: float = 1.0


class ContaminationIndex:
    """BFCL test questions as n-gram sets and ground-truth turns as canonical sequences."""

    def __init__(
        self,
        questions: Iterable[tuple[str, str]],
        sequences: Iterable[tuple[str, tuple[str, ...]]],
        *,
        n: int = 5,
        max_overlap: float = 0.5,
    ) -> None:
        if n < 1 or not 0.0 < max_overlap <= 1.0:
            raise ValueError(
                f"contamination: need n >= 1 and 0 < max_overlap <= 1 (got {n}, {max_overlap})"
            )
        self.n, self.max_overlap = n, max_overlap
        self._postings: dict[tuple[str, ...], set[int]] = defaultdict(set)
        self._ids: list[str] = []
        for bfcl_id, text in questions:
            index = len(self._ids)
            self._ids.append(bfcl_id)
            for gram in ngrams(text, n):
                self._postings[gram].add(index)
        self._sequences: dict[tuple[str, ...], str] = {}
        for bfcl_id, sequence in sequences:
            if sequence:
                self._sequences.setdefault(sequence, bfcl_id)

    @classmethod
    def from_bfcl(
        cls, categories: Sequence[str] | None = None, *, n: int = 5, max_overlap: float = 0.5
    ) -> ContaminationIndex:
        """The index over BFCL's multi-turn test categories (all four by default)."""
        from aworld_rl_core.tooluse.bfcl import MULTI_TURN_CATEGORIES, load_category

        questions, sequences = [], []
        for category in categories or MULTI_TURN_CATEGORIES:
            for entry in load_category(category):
                signatures = signatures_from_tools([dict(d) for d in entry.functions])
                for turn, messages in enumerate(entry.turns):
                    text = " ".join(
                        str(m.get("content", "")) for m in messages if m.get("role") == "user"
                    )
                    if text.strip():
                        questions.append((f"{entry.id}/{turn}", text))
                for turn, calls in enumerate(entry.ground_truth or []):
                    sequences.append((f"{entry.id}/{turn}", canonical(calls, signatures)))
        return cls(questions, sequences, n=n, max_overlap=max_overlap)

    @property
    def size(self) -> tuple[int, int]:
        """(questions, distinct ground-truth sequences) indexed."""
        return len(self._ids), len(self._sequences)

    def overlap(self, query: str) -> tuple[float, str]:
        """The largest share of the query's n-grams found in one BFCL question, and its id."""
        grams = ngrams(query, self.n)
        if not grams:
            return 0.0, ""
        counts: dict[int, int] = defaultdict(int)
        for gram in grams:
            for index in self._postings.get(gram, ()):
                counts[index] += 1
        if not counts:
            return 0.0, ""
        best = max(counts, key=lambda i: (counts[i], -i))
        return counts[best] / len(grams), self._ids[best]

    def check(self, query: str, calls: Sequence[str]) -> list[Flag]:
        """Flags for one round (an empty list: clean)."""
        flags = []
        score, bfcl_id = self.overlap(query)
        if score >= self.max_overlap:
            flags.append(Flag("query_overlap", bfcl_id, round(score, 3)))
        same = self._sequences.get(canonical(calls))
        if same is not None:
            flags.append(Flag("ground_truth_equal", same))
        return flags
