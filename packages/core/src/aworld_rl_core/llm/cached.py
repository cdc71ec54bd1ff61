"""A caching wrapper around any :class:`LLMClient`."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from aworld_rl_core.llm.base import ChatManyMixin
from aworld_rl_core.llm.cache import ResponseCache
from aworld_rl_core.llm.types import Completion, LLMClient, Message


class CachedClient(ChatManyMixin):
    """Answers repeated requests from a :class:`ResponseCache`; identical requests in flight at
    the same time share one upstream call. Hits come back with ``cached=True``."""

    def __init__(self, inner: LLMClient, cache: ResponseCache) -> None:
        self.inner = inner
        self.cache = cache
        self.model = inner.model
        self.concurrency = getattr(inner, "concurrency", 32)
        self.hits = 0
        self.misses = 0
        self._pending: dict[str, asyncio.Future[Completion]] = {}

    def request_key(
        self, messages: list[Message], tools: list[dict[str, Any]] | None, sampling: dict[str, Any]
    ) -> str:
        return self.inner.request_key(messages, tools, sampling)

    async def chat(
        self, messages: list[Message], *, tools: list[dict[str, Any]] | None = None, **sampling: Any
    ) -> Completion:
        """The cached reply if present, else the inner client's (then stored)."""
        key = self.request_key(messages, tools, sampling)
        stored = self.cache.get(key)
        if stored is not None:
            self.hits += 1
            return Completion.from_dict(stored, cached=True)
        pending = self._pending.get(key)
        if pending is not None and pending.get_loop() is asyncio.get_running_loop():
            try:
                shared = await asyncio.shield(pending)
            except asyncio.CancelledError:
                if not pending.cancelled():
                    raise  # this caller was cancelled
                return await self.chat(messages, tools=tools, **sampling)  # the leader was
            self.hits += 1
            return replace(shared, cached=True)
        future: asyncio.Future[Completion] = asyncio.get_running_loop().create_future()
        self._pending[key] = future
        self.misses += 1
        try:
            completion = await self.inner.chat(messages, tools=tools, **sampling)
        except asyncio.CancelledError:
            future.cancel()
            raise
        except BaseException as err:
            future.set_exception(err)
            future.exception()  # mark retrieved: waiters re-raise it themselves
            raise
        finally:
            self._pending.pop(key, None)
        self.cache.put(key, completion.to_dict())
        future.set_result(completion)
        return completion

    async def aclose(self) -> None:
        await self.inner.aclose()
        self.cache.close()
