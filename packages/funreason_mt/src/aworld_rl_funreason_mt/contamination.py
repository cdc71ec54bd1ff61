"""The contamination guard: synthesized data must not copy BFCL's test set.

FunReason-MT and HardGen synthesize in BFCL's own API classes and evaluate on BFCL multi-turn.
The guard, over every BFCL multi-turn category, flags (and the pipeline drops by default) a round
whose

- query overlaps a BFCL test question, in either direction: the share of the query's word
  n-grams found in one question reaches ``max_overlap`` (a copied question), or the share of a
  question's n-grams found in the query reaches ``max_reverse_overlap`` (a question padded with
  context of its own);
- ground-truth calls equal a ground-truth turn of a BFCL test entry (calls read with the entry's
  signatures, so ``sort('a.txt')`` equals ``sort(file_name='a.txt')``): in order
  (``ground_truth_equal``), as a multiset in any order (``ground_truth_set``), or in order with
  one call added or removed (``ground_truth_near``; only where the shorter of the two holds at
  least ``near_min_calls`` calls, so that a single common call does not flag everything).

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

    kind: str  # query_overlap | question_in_query | ground_truth_equal | _set | _near
    bfcl_id: str
    score: float = 1.0


FLAG_KINDS = (
    "query_overlap",
    "question_in_query",
    "ground_truth_equal",
    "ground_truth_set",
    "ground_truth_near",
)


def _drop_one(sequence: tuple[str, ...]) -> set[tuple[str, ...]]:
    return {sequence[:i] + sequence[i + 1 :] for i in range(len(sequence))}


class ContaminationIndex:
    """BFCL test questions as n-gram sets and ground-truth turns as canonical sequences."""

    def __init__(
        self,
        questions: Iterable[tuple[str, str]],
        sequences: Iterable[tuple[str, tuple[str, ...]]],
        *,
        n: int = 5,
        max_overlap: float = 0.5,
        max_reverse_overlap: float = 0.5,
        near_min_calls: int = 2,
    ) -> None:
        if n < 1 or not 0.0 < max_overlap <= 1.0 or not 0.0 < max_reverse_overlap <= 1.0:
            raise ValueError(
                "contamination: need n >= 1, 0 < max_overlap <= 1 and 0 < max_reverse_overlap "
                f"<= 1 (got {n}, {max_overlap}, {max_reverse_overlap})"
            )
        if near_min_calls < 1:
            raise ValueError(f"contamination: near_min_calls must be >= 1, got {near_min_calls}")
        self.n, self.max_overlap = n, max_overlap
        self.max_reverse_overlap, self.near_min_calls = max_reverse_overlap, near_min_calls
        self._postings: dict[tuple[str, ...], set[int]] = defaultdict(set)
        self._ids: list[str] = []
        self._sizes: list[int] = []
        for bfcl_id, text in questions:
            index = len(self._ids)
            self._ids.append(bfcl_id)
            grams = ngrams(text, n)
            self._sizes.append(len(grams))
            for gram in grams:
                self._postings[gram].add(index)
        self._sequences: dict[tuple[str, ...], str] = {}
        self._multisets: dict[tuple[str, ...], str] = {}
        self._shorter: dict[tuple[str, ...], str] = {}  # a BFCL turn with one call removed
        for bfcl_id, sequence in sequences:
            if not sequence:
                continue
            self._sequences.setdefault(sequence, bfcl_id)
            self._multisets.setdefault(tuple(sorted(sequence)), bfcl_id)
            if len(sequence) - 1 >= near_min_calls:
                for shorter in _drop_one(sequence):
                    self._shorter.setdefault(shorter, bfcl_id)

    @classmethod
    def from_bfcl(
        cls,
        categories: Sequence[str] | None = None,
        *,
        n: int = 5,
        max_overlap: float = 0.5,
        max_reverse_overlap: float = 0.5,
        near_min_calls: int = 2,
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
        return cls(
            questions,
            sequences,
            n=n,
            max_overlap=max_overlap,
            max_reverse_overlap=max_reverse_overlap,
            near_min_calls=near_min_calls,
        )

    @property
    def size(self) -> tuple[int, int]:
        """(questions, distinct ground-truth sequences) indexed."""
        return len(self._ids), len(self._sequences)

    def overlaps(self, query: str) -> tuple[tuple[float, str], tuple[float, str]]:
        """``((share of the query in one question, its id), (share of one question in the
        query, its id))``, each the largest over BFCL's questions."""
        grams = ngrams(query, self.n)
        if not grams:
            return (0.0, ""), (0.0, "")
        counts: dict[int, int] = defaultdict(int)
        for gram in grams:
            for index in self._postings.get(gram, ()):
                counts[index] += 1
        if not counts:
            return (0.0, ""), (0.0, "")
        best = max(counts, key=lambda i: (counts[i], -i))
        forward = (counts[best] / len(grams), self._ids[best])
        reverse_share = {i: c / max(self._sizes[i], 1) for i, c in counts.items()}
        top = max(reverse_share, key=lambda i: (reverse_share[i], -i))
        return forward, (reverse_share[top], self._ids[top])

    def overlap(self, query: str) -> tuple[float, str]:
        """The largest share of the query's n-grams found in one BFCL question, and its id."""
        return self.overlaps(query)[0]

    def check(self, query: str, calls: Sequence[str]) -> list[Flag]:
        """Flags for one round (an empty list: clean)."""
        flags = []
        (score, bfcl_id), (reverse, reverse_id) = self.overlaps(query)
        if score >= self.max_overlap:
            flags.append(Flag("query_overlap", bfcl_id, round(score, 3)))
        if reverse >= self.max_reverse_overlap:
            flags.append(Flag("question_in_query", reverse_id, round(reverse, 3)))
        ours = canonical(calls)
        same = self._sequences.get(ours)
        if same is not None:
            flags.append(Flag("ground_truth_equal", same))
            return flags
        reordered = self._multisets.get(tuple(sorted(ours)))
        if reordered is not None:
            flags.append(Flag("ground_truth_set", reordered))
            return flags
        near = self._near(ours)
        if near is not None:
            flags.append(Flag("ground_truth_near", near))
        return flags

    def _near(self, ours: tuple[str, ...]) -> str | None:
        """A BFCL turn ours equals with one call removed (from it) or added (to it)."""
        if len(ours) < self.near_min_calls:
            return None
        removed = self._shorter.get(ours)  # ours = a BFCL turn less one call
        if removed is not None:
            return removed
        if len(ours) - 1 >= self.near_min_calls:  # ours = a BFCL turn plus one call
            for shorter in sorted(_drop_one(ours)):
                found = self._sequences.get(shorter)
                if found is not None:
                    return found
        return None
