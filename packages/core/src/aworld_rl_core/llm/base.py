"""Shared machinery of the clients: merged sampling defaults, a per-event-loop concurrency limit,
batched calls (:func:`chat_many`) and a blocking facade for scripts (:class:`SyncClient`)."""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Iterable
from typing import Any

from aworld_rl_core.llm.cache import cache_key
from aworld_rl_core.llm.types import ChatRequest, Completion, LLMClient, Message


async def chat_many(
    client: LLMClient,
    requests: Iterable[Any],
    *,
    concurrency: int = 32,
    return_exceptions: bool = False,
) -> list[Any]:
    """Run many chat calls with at most ``concurrency`` in flight; results keep the input order.

    Each request is a :class:`ChatRequest`, a list of messages or ``{messages, tools?,
    **sampling}``. With ``return_exceptions`` a failed call yields its exception in place of a
    :class:`Completion`; otherwise the first failure cancels the rest and is raised.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    items = [ChatRequest.coerce(r) for r in requests]
    results: list[Any] = [None] * len(items)
    queue = iter(enumerate(items))

    async def worker() -> None:
        for index, req in queue:
            try:
                results[index] = await client.chat(req.messages, tools=req.tools, **req.sampling)
            except Exception as err:
                if not return_exceptions:
                    raise
                results[index] = err

    workers = [asyncio.ensure_future(worker()) for _ in range(min(concurrency, len(items)))]
    try:
        await asyncio.gather(*workers)
    finally:
        for task in workers:
            task.cancel()
    return results


class ChatManyMixin:
    """``chat_many`` and ``async with`` for anything with ``chat``/``aclose``/``concurrency``."""

    concurrency: int

    async def chat_many(
        self,
        requests: Iterable[Any],
        *,
        concurrency: int | None = None,
        return_exceptions: bool = False,
    ) -> list[Any]:
        """See :func:`chat_many`; ``concurrency`` defaults to the client's own limit."""
        return await chat_many(
            self,  # type: ignore[arg-type]
            requests,
            concurrency=concurrency or self.concurrency,
            return_exceptions=return_exceptions,
        )

    async def __aenter__(self) -> Any:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()  # type: ignore[attr-defined]


class BaseLLMClient(ChatManyMixin):
    """Base of the concrete clients: subclasses implement ``_chat``.

    Every ``chat`` waits on a semaphore of size ``concurrency``. Loop-bound resources (the
    semaphore, HTTP connection pools) live in :meth:`_loop_state`, one per running event loop, so
    a client survives being used from successive ``asyncio.run`` calls.
    """

    def __init__(self, model: str, *, concurrency: int, defaults: dict[str, Any] | None = None):
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        self.model = model
        self.concurrency = concurrency
        self.defaults = {k: v for k, v in (defaults or {}).items() if v is not None}
        self._states: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, Any]] = (
            weakref.WeakKeyDictionary()
        )

    def sampling_params(self, overrides: dict[str, Any]) -> dict[str, Any]:
        """The client's defaults updated by ``overrides``; a None override removes the key."""
        merged = dict(self.defaults)
        for key, value in overrides.items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = value
        return merged

    def request_key(
        self, messages: list[Message], tools: list[dict[str, Any]] | None, sampling: dict[str, Any]
    ) -> str:
        """The cache key of a call: model, messages, tools and the effective sampling params."""
        return cache_key(self.model, messages, tools, self.sampling_params(sampling))

    def _loop_state(self) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        state = self._states.get(loop)
        if state is None:
            state = {"semaphore": asyncio.Semaphore(self.concurrency)}
            self._states[loop] = state
        return state

    async def chat(
        self, messages: list[Message], *, tools: list[dict[str, Any]] | None = None, **sampling: Any
    ) -> Completion:
        """One chat completion (the concurrency limit applies)."""
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            raise TypeError("messages must be a list of OpenAI chat message dicts")
        async with self._loop_state()["semaphore"]:
            return await self._chat(messages, tools, self.sampling_params(sampling))

    async def _chat(
        self, messages: list[Message], tools: list[dict[str, Any]] | None, sampling: dict[str, Any]
    ) -> Completion:
        raise NotImplementedError

    async def aclose(self) -> None:
        """Release this event loop's resources."""
        self._states.pop(asyncio.get_running_loop(), None)


class SyncClient:
    """A blocking facade over an async client, for scripts and synchronous environments.

    It owns one event loop on a background thread, so it also works when called from code that
    is itself running inside an event loop (notebooks, async frameworks)::

        with SyncClient(make_client(cfg)) as llm:
            print(llm.chat([{"role": "user", "content": "hi"}]).text)
    """

    def __init__(self, client: Any) -> None:
        self.client = client
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def model(self) -> str:
        return self.client.model

    def _run(self, coro: Any) -> Any:
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(
                    target=self._loop.run_forever, name="aworld-rl-llm", daemon=True
                )
                self._thread.start()
            loop = self._loop
        return asyncio.run_coroutine_threadsafe(coro, loop).result()

    def chat(
        self, messages: list[Message], *, tools: list[dict[str, Any]] | None = None, **sampling: Any
    ) -> Completion:
        """Blocking :meth:`LLMClient.chat`."""
        return self._run(self.client.chat(messages, tools=tools, **sampling))

    def chat_many(
        self,
        requests: Iterable[Any],
        *,
        concurrency: int | None = None,
        return_exceptions: bool = False,
    ) -> list[Any]:
        """Blocking :func:`chat_many`."""
        return self._run(
            chat_many(
                self.client,
                list(requests),
                concurrency=concurrency or int(getattr(self.client, "concurrency", 32)),
                return_exceptions=return_exceptions,
            )
        )

    def close(self) -> None:
        """Close the client and stop the background loop."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(self.client.aclose(), loop).result()
        finally:
            loop.call_soon_threadsafe(loop.stop)
            if thread is not None:
                thread.join()
            loop.close()

    def __enter__(self) -> SyncClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
