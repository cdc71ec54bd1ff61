"""The package's own contribution lives in small pure modules like this one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def lowercase_share(text: str) -> float:
    """Fraction of the characters of ``text`` that are ``a``-``z`` or a space (0.0 if empty)."""
    if not text:
        return 0.0
    return sum(char == " " or "a" <= char <= "z" for char in text) / len(text)


def lowercase(completions: Sequence[Sequence[Mapping[str, object]]], **_: object) -> list[float]:
    """The reward (TRL's shape): the lowercase share of each episode's assistant text.

    A completion is the episode's messages after the prompt; ``**_`` takes the rows' columns.
    """
    scores = []
    for messages in completions:
        said = " ".join(
            str(m.get("content") or "") for m in messages if m.get("role") == "assistant"
        )
        scores.append(lowercase_share(said))
    return scores
