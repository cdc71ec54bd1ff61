"""Small clients around others: a fixed script of replies, and a meter of each reply's cost."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from aworld_rl_core.llm.types import Completion


class ScriptClient:
    """Replies with ``texts`` in order, then with empty text (e.g. a ground-truth agent)."""

    def __init__(self, texts: Iterable[str], model: str = "ground-truth") -> None:
        self.texts = iter(texts)
        self.model = model

    async def chat(self, messages: Any, **_: Any) -> Completion:
        return Completion(text=next(self.texts, ""), model=self.model)


class MeteredClient:
    """Passes each chat to ``client`` and records (input tokens, output tokens, seconds)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.usage: list[tuple[int, int, float]] = []

    async def chat(self, messages: Any, **sampling: Any) -> Any:
        start = time.perf_counter()
        completion = await self.client.chat(messages, **sampling)
        usage = getattr(completion, "usage", None) or {}
        seconds = time.perf_counter() - start
        self.usage.append(
            (int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)), seconds)
        )
        return completion
