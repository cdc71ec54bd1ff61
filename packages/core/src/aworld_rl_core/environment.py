"""The environment protocol every multi-turn task implements.

An environment is built per episode by its factory, ``factory(row, **options)`` (the dataset
row and the recipe's JSON options), so ``reset()`` takes no argument. Model text is never
trusted: malformed text gives an error observation and a format penalty, never an exception out
of ``step``.

An environment may declare ``stop`` strings (generation of a model turn stops at the first one
and the stop string stays in the text, e.g. ``</search>``), ``tools`` (JSON Schema tool specs the
chat template renders) and a classmethod ``step_many(envs, texts)`` that steps every active
episode of its class at once, so a service behind it sees one request per turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Protocol, runtime_checkable

Message = dict[str, Any]


@dataclass(frozen=True)
class Step:
    """What the environment answers to one model turn.

    An unfinished episode gives exactly one of ``observation`` (chat messages appended as new
    turns before the model speaks again: tool results, the next user turn, a hint) or
    ``inline`` (text appended inside the same assistant turn, masked out of the loss; the model
    then continues that turn, e.g. ``<information>...</information>`` after ``</search>``).
    A finished episode (``done``) gives neither.
    """

    observation: list[Message] = field(default_factory=list)
    _: KW_ONLY
    inline: str | None = None
    reward: float = 0.0
    done: bool = False
    info: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Environment(Protocol):
    """``reset`` opens the episode with chat messages; ``step`` consumes one model turn's text.

    Optional attributes: ``stop`` (stop strings, default none), ``tools`` (tool specs, default
    the row's ``tools``) and the classmethod ``step_many(envs, texts) -> list[Step]``.
    """

    def reset(self) -> list[Message]: ...

    def step(self, model_text: str) -> Step: ...

    def close(self) -> None: ...


def stop_strings(env: Any) -> tuple[str, ...]:
    """The environment's stop strings (none when it declares none)."""
    stop = getattr(env, "stop", None) or ()
    if isinstance(stop, str):
        stop = (stop,)
    if not all(isinstance(s, str) and s for s in stop):
        raise TypeError(f"{type(env).__name__}.stop must hold non-empty strings, got {stop!r}")
    return tuple(stop)


def step_many(envs: Sequence[Any], texts: Sequence[str]) -> list[Step]:
    """Step every environment with its model text, one call per environment class.

    Environments of a class with a ``step_many`` classmethod are stepped together through it
    (one service request per turn); the others one by one. Results keep the input order.
    """
    if len(envs) != len(texts):
        raise ValueError(f"step_many got {len(envs)} environments for {len(texts)} texts")
    groups: dict[type, list[int]] = {}
    for i, env in enumerate(envs):
        groups.setdefault(type(env), []).append(i)
    steps: list[Step | None] = [None] * len(envs)
    for cls, indices in groups.items():
        batched = getattr(cls, "step_many", None)
        if batched is None:
            for i in indices:
                steps[i] = envs[i].step(texts[i])
            continue
        got = list(batched([envs[i] for i in indices], [texts[i] for i in indices]))
        if len(got) != len(indices):
            raise ValueError(
                f"{cls.__name__}.step_many returned {len(got)} steps for {len(indices)} texts"
            )
        for i, step in zip(indices, got, strict=True):
            steps[i] = step
    for i, step in enumerate(steps):
        if not isinstance(step, Step):
            raise TypeError(f"{type(envs[i]).__name__}.step returned {step!r}, not a Step")
    return steps  # type: ignore[return-value]
