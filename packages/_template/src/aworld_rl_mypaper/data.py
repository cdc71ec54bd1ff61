"""The package's dataset: task rows for the toy game (replace with your paper's data)."""

from __future__ import annotations

import random

TOPICS = (
    "the sea", "a forest", "winter", "a city at night", "bread", "rain", "a small boat",
    "mountains", "a library", "the moon", "a garden", "music", "a long road", "coffee",
)  # fmt: skip


def topics(num_rows: int = 32, seed: int = 0) -> list[dict[str, str]]:
    """``num_rows`` rows ``{"topic": ...}`` drawn with ``seed`` (JSON rows, as every backend
    takes them)."""
    if num_rows < 1:
        raise ValueError(f"num_rows must be >= 1, got {num_rows}")
    rng = random.Random(seed)
    return [{"topic": rng.choice(TOPICS)} for _ in range(num_rows)]
