"""Gathering the steps of concurrent episodes into one ``environment.step_many`` call.

Drivers that run each episode in its own coroutine (verl's agent loop: one ``run`` per row)
still want one service request per turn: each episode hands its turn to the worker's
:class:`StepGatherer`, and the turns that arrive within ``window_s`` of the first are stepped
together, in a worker thread.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

from aworld_rl_core.environment import Step, step_many


class StepGatherer:
    """``await gatherer.step(env, text)`` -> the environment's ``Step``, batched with the other
    episodes' turns that arrive within ``window_s``; ``batches`` records each batch's size."""

    def __init__(self, window_s: float = 0.01) -> None:
        if window_s < 0:
            raise ValueError(f"window_s must be >= 0, got {window_s}")
        self.window_s = window_s
        self.batches: list[int] = []
        self._pending: list[tuple[Any, str, asyncio.Future[Step]]] = []
        self._flush: asyncio.Task[None] | None = None

    async def step(self, env: Any, text: str) -> Step:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Step] = loop.create_future()
        self._pending.append((env, text, future))
        if self._flush is None:
            self._flush = loop.create_task(self._run(loop))
        return await future

    async def _run(self, loop: asyncio.AbstractEventLoop) -> None:
        await asyncio.sleep(self.window_s)
        batch, self._pending, self._flush = self._pending, [], None
        self.batches.append(len(batch))
        envs, texts = [b[0] for b in batch], [b[1] for b in batch]
        try:
            steps = await loop.run_in_executor(None, step_many, envs, texts)
        except Exception as exc:  # every waiting episode sees the error
            for _, _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        for (_, _, future), step in zip(batch, steps, strict=True):
            if not future.done():
                future.set_result(step)


_per_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, StepGatherer] = (
    weakref.WeakKeyDictionary()
)


def gatherer_for(loop: asyncio.AbstractEventLoop, window_s: float) -> StepGatherer:
    """The gatherer of an event loop (one per verl worker), created on first use."""
    gatherer = _per_loop.get(loop)
    if gatherer is None or gatherer.window_s != window_s:
        gatherer = _per_loop[loop] = StepGatherer(window_s)
    return gatherer
