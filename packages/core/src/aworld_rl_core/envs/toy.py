"""A toy multi-turn environment that a tiny random model learns in a few dozen GRPO steps.

The "lowercase game": the user names a topic and asks for lowercase English words only; after
each reply the environment reports the reply's score and asks again, for ``turns`` model turns.
A reply's score is the fraction of its characters that are ``a``-``z`` or spaces, so a random
model starts around 0.7 (Qwen's vocabulary is mostly Latin sub-words) and a policy that keeps
to lowercase words reaches 1.0. The episode return is the mean score over the turns played.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from typing import Any

from aworld_rl_core.environment import Message, Step

TOPICS = (
    "the sea", "a forest", "winter", "a city at night", "bread", "rain", "a small boat",
    "mountains", "a library", "the moon", "a garden", "music", "a long road", "coffee",
    "a river", "autumn", "a market", "the desert", "a train", "birds",
)  # fmt: skip
INSTRUCTION = "Reply with lowercase english words only: no capitals, digits or punctuation."


def lowercase_score(text: str) -> float:
    """Fraction of the characters of ``text`` that are ``a``-``z`` or a space (0.0 if empty)."""
    if not text:
        return 0.0
    return sum(char == " " or "a" <= char <= "z" for char in text) / len(text)


class LowercaseEnv:
    """The lowercase game (see the module docstring); one instance per episode.

    Built as ``LowercaseEnv(row, turns=2)`` (the factory shape): the row's ``topic`` (a default
    topic when absent). Each ``step`` rewards ``score / turns``, so the episode return is the mean
    per-turn score, in [0, 1].
    """

    def __init__(self, row: Mapping[str, Any] | None = None, *, turns: int = 2) -> None:
        if turns < 1:
            raise ValueError(f"LowercaseEnv needs turns >= 1, got {turns}")
        self.turns = turns
        self.topic = str((row or {}).get("topic") or TOPICS[0])
        self.scores: list[float] = []

    def reset(self) -> list[Message]:
        topic = self.topic
        self.scores = []
        return [
            {"role": "system", "content": INSTRUCTION},
            {"role": "user", "content": f"Say something about {topic}."},
        ]

    def step(self, model_text: str) -> Step:
        if len(self.scores) >= self.turns:
            return Step(observation=[], done=True, info={"error": "episode already finished"})
        score = lowercase_score(model_text)
        self.scores.append(score)
        done = len(self.scores) >= self.turns
        info = {"score": score, "mean_score": sum(self.scores) / len(self.scores)}
        observation = [] if done else [{"role": "user", "content": f"Score {score:.2f}. Again."}]
        return Step(observation=observation, reward=score / self.turns, done=done, info=info)

    def close(self) -> None:
        self.scores = []


_ADD = re.compile(r"\badd\s+(-?\d+)")


class CounterEnv:
    """The counter game: bring a counter from 0 to the row's ``target`` (default 3) by answering
    ``add N``; each unfinished step observes ``value=V``; reaching the target ends the episode
    with reward 1.0; text without ``add N`` costs a 0.1 format penalty. Small models learn it in
    a few GRPO steps (verl's GPU smoke test trains on it)."""

    def __init__(self, row: Mapping[str, Any] | None = None, *, target: int = 3) -> None:
        self.target = int((row or {}).get("target", target))
        self.value = 0

    def reset(self) -> list[Message]:
        self.value = 0
        return [{"role": "user", "content": f"Bring the counter to {self.target}. Say: add N"}]

    def step(self, model_text: str) -> Step:
        match = _ADD.search(model_text)
        if match is None:
            note = [{"role": "user", "content": "error: answer exactly 'add N'"}]
            return Step(note, reward=-0.1, info={"format_error": 1})
        self.value += int(match.group(1))
        if self.value == self.target:
            return Step([], reward=1.0, done=True, info={"value": self.value})
        return Step(
            [{"role": "user", "content": f"value={self.value}"}], info={"value": self.value}
        )

    def close(self) -> None:
        pass


def lowercase_reward(completions: Sequence[Any], **_: Any) -> list[float]:
    """Mean ``lowercase_score`` of the assistant turns of each completion (TRL's reward shape).

    A completion is a string or a list of chat messages (non-assistant messages are skipped).
    """
    rewards = []
    for completion in completions:
        if isinstance(completion, str):
            texts = [completion]
        else:
            texts = [
                str(message.get("content") or "")
                for message in completion
                if message.get("role") == "assistant"
            ]
        rewards.append(sum(map(lowercase_score, texts)) / len(texts) if texts else 0.0)
    return rewards


def toy_tasks(*, num_tasks: int = 64, seed: int = 0) -> list[dict[str, Any]]:
    """Task rows ``{"topic": ...}`` drawn from ``TOPICS`` (deterministic for a seed); the
    registered dataset ``core.toy-tasks``."""
    if num_tasks < 1:
        raise ValueError(f"num_tasks must be >= 1, got {num_tasks}")
    rng = random.Random(seed)
    return [{"topic": rng.choice(TOPICS)} for _ in range(num_tasks)]
