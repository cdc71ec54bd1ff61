"""Loud failures: a run that talks to a model server counts its failed calls, checks the server
before the first episode, and fails (status ``failed``, with the reason) instead of reporting a
score made of errors.

:func:`~aworld_rl_core.llm.factory.make_client` wraps every client in a :class:`GuardedClient`:

- it counts calls and failed calls (by error type, with the first message of each type);
- before its first call (or when the episode engine hands it the first turn's requests) it runs
  the server's **preflight** once: the server answers, it serves the configured model, the
  longest prompt fits its context with ``max_tokens`` to spare, and a request with tools
  (which needs the server's tool-call parser) is accepted;
- :func:`account_llm_errors`, called by each recipe when its metrics are done, writes
  ``llm_calls`` / ``llm_errors`` into the metrics (the CLI summary always shows them) and raises
  :class:`LLMErrorBudgetExceeded` when more than ``max_error_rate`` of the calls failed.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from aworld_rl_core.errors import AworldError
from aworld_rl_core.llm.base import ChatManyMixin
from aworld_rl_core.llm.types import Completion, Message

log = logging.getLogger(__name__)


class LLMRunError(AworldError):
    """The run cannot give a meaningful result from this server (the run fails)."""


class LLMPreflightError(LLMRunError):
    """The server failed the check made before the first episode."""


class LLMErrorBudgetExceeded(LLMRunError):
    """More LLM calls failed than the run's ``max_error_rate`` allows."""


class GuardedClient(ChatManyMixin):
    """Counts the calls and failures of ``client`` and runs its preflight once (module doc).

    ``client`` is any core LLM client; attributes it has and this class has not (``base_url``,
    ``hits``...) are read through. ``preflight=False`` skips the check; a client without a
    ``preflight`` method (a local model, a script) is never checked.
    """

    def __init__(
        self,
        client: Any,
        *,
        name: str = "llm",
        max_error_rate: float = 0.01,
        preflight: bool = True,
    ) -> None:
        if not 0 <= max_error_rate <= 1:
            raise ValueError(f"max_error_rate must be in [0, 1], got {max_error_rate}")
        self.client = client
        self.model: str = client.model
        self.concurrency = int(getattr(client, "concurrency", 32))
        self.name = name
        self.max_error_rate = max_error_rate
        self.preflight_enabled = preflight
        self.calls = 0
        self.errors = 0
        self.error_kinds: collections.Counter[str] = collections.Counter()
        self.first_errors: dict[str, str] = {}
        self.preflight_report: dict[str, Any] | None = None
        self._preflights: dict[asyncio.AbstractEventLoop, asyncio.Future[None]] = {}
        self._preflight_done = False
        self._preflight_error: LLMRunError | None = None

    def __getattr__(self, name: str) -> Any:
        if name == "client":  # not set yet (copy / unpickling)
            raise AttributeError(name)
        return getattr(self.client, name)

    def request_key(
        self, messages: list[Message], tools: list[dict[str, Any]] | None, sampling: dict[str, Any]
    ) -> str:
        return self.client.request_key(messages, tools, sampling)

    async def preflight(self, requests: Sequence[Mapping[str, Any]]) -> None:
        """Check the server once with ``requests`` (``{messages, tools?, **sampling}``, e.g. the
        first turn of every episode); calls made meanwhile wait for the verdict, and a failed
        check fails every later call the same way."""
        if self._preflight_error is not None:
            raise self._preflight_error
        target = _preflight_target(self.client) if self.preflight_enabled else None
        if self._preflight_done or target is None or not requests:
            return
        loop = asyncio.get_running_loop()
        running = self._preflights.get(loop)
        if running is not None:
            await asyncio.shield(running)
            return
        running = loop.create_future()
        self._preflights[loop] = running
        try:
            self.preflight_report = await target.preflight(list(requests))
        except LLMRunError as err:
            self._preflight_error = err
            running.set_exception(err)
            running.exception()  # retrieved: waiters re-raise it themselves
            raise
        except BaseException:
            running.cancel()  # interrupted: the next call checks again
            raise
        finally:
            self._preflights.pop(loop, None)
        self._preflight_done = True
        running.set_result(None)

    async def chat(
        self, messages: list[Message], *, tools: list[dict[str, Any]] | None = None, **sampling: Any
    ) -> Completion:
        """The inner client's reply; a failure (a failed preflight included, so callers that
        catch every error still end over the budget) is counted and re-raised."""
        self.calls += 1
        try:
            if self.preflight_enabled and not self._preflight_done:
                await self.preflight([{"messages": messages, "tools": tools, **sampling}])
            return await self.client.chat(messages, tools=tools, **sampling)
        except Exception as err:
            self.record_error(err)
            raise

    def record_error(self, err: BaseException) -> None:
        self.errors += 1
        kind = type(err).__name__
        self.error_kinds[kind] += 1
        self.first_errors.setdefault(kind, str(err)[:400])

    async def aclose(self) -> None:
        await self.client.aclose()

    def over_budget(self) -> bool:
        """Whether more than ``max_error_rate`` of the calls failed."""
        return self.errors > 0 and self.errors > self.max_error_rate * self.calls

    def describe_errors(self) -> str:
        """``N of M calls failed (Kind xN: first message; ...)``."""
        kinds = "; ".join(
            f"{kind} x{count}: {self.first_errors[kind]}"
            for kind, count in self.error_kinds.most_common()
        )
        text = f"{self.errors} of {self.calls} calls to {self.name} ({self.model}) failed"
        return f"{text} ({kinds})" if kinds else text


def _preflight_target(client: Any) -> Any:
    """The innermost client with a ``preflight`` method (through cache and guard wrappers)."""
    for _ in range(8):
        if client is None:
            return None
        if not isinstance(client, GuardedClient) and callable(
            getattr(type(client), "preflight", None)
        ):
            return client
        client = client.__dict__.get("inner") or client.__dict__.get("client")
    return None


def guarded(clients: Iterable[Any]) -> list[GuardedClient]:
    """The :class:`GuardedClient` in each of ``clients`` (None and other clients skipped)."""
    found = []
    for client in clients:
        seen = 0
        while client is not None and seen < 8:
            if isinstance(client, GuardedClient):
                found.append(client)
                break
            inner = client.__dict__.get("client") or client.__dict__.get("inner")
            client, seen = inner, seen + 1
    return found


def llm_error_metrics(*clients: Any) -> dict[str, int]:
    """``llm_calls`` and ``llm_errors`` summed over the guarded ``clients``."""
    found = guarded(clients)
    return {
        "llm_calls": sum(c.calls for c in found),
        "llm_errors": sum(c.errors for c in found),
    }


def account_llm_errors(metrics: dict[str, Any] | None, *clients: Any, run: Any = None) -> None:
    """Write ``llm_calls`` / ``llm_errors`` into ``metrics``; fail the run (raise
    :class:`LLMErrorBudgetExceeded`, after logging the counts to ``run`` when given) when a
    client's failed calls exceed its ``max_error_rate`` (``llm.max_error_rate``)."""
    counts = llm_error_metrics(*clients)
    if metrics is not None:
        metrics.update(counts)
    failing = [c for c in guarded(clients) if c.over_budget()]
    if not failing:
        return
    if run is not None:
        run.log(dict(counts))
    details = "; ".join(c.describe_errors() for c in failing)
    rates = ", ".join(f"{c.name}.max_error_rate={c.max_error_rate:g}" for c in failing)
    raise LLMErrorBudgetExceeded(
        f"{details}. More calls failed than {rates} allows, so the run's figures would be "
        "figures of errors: check that the server is up, serves this model with a context long "
        "enough for the prompts, and has the parsers the protocol needs (see the package "
        "README's serve command); raise max_error_rate to accept failed calls"
    )
