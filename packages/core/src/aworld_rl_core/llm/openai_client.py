"""An async client for OpenAI-compatible chat endpoints (vLLM, SGLang, hosted providers)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from collections.abc import Iterator
from typing import Any

from aworld_rl_core.llm.base import BaseLLMClient
from aworld_rl_core.llm.cache import utf8_safe
from aworld_rl_core.llm.errors import (
    LLMConnectionError,
    LLMHTTPError,
    LLMResponseError,
    LLMTimeoutError,
)
from aworld_rl_core.llm.retry import RetryableError, RetryPolicy, parse_retry_after, retry_async
from aworld_rl_core.llm.types import Completion, Message

log = logging.getLogger(__name__)
RETRY_STATUSES = frozenset({408, 409, 425, 429})
SNIPPET = 300
POOL_SIZE = 8
"""Connections per httpx pool. httpcore's pool scans all its connections on every request
(CPU per request 2.9 ms at 8 connections, 11 ms at 64, in one process with the scripted
server), so a client with more concurrency spreads its requests over several small pools."""
JSON_HEADERS = {"Content-Type": "application/json"}


def _json_bytes(body: dict[str, Any]) -> bytes:
    """The request as UTF-8 JSON; text with a lone surrogate goes as a ``\\u`` escape."""
    text = json.dumps(body, ensure_ascii=False)
    return (text if utf8_safe(text) else json.dumps(body)).encode("utf-8")


def _snippet(text: str) -> str:
    text = text.strip()
    return text if len(text) <= SNIPPET else text[:SNIPPET] + "..."


def _error_detail(text: str) -> str:
    """The server's error message from a JSON error body, else a snippet of the raw body."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return _snippet(text)
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            for field in ("message", "detail", "msg"):
                if isinstance(err.get(field), str):
                    return _snippet(err[field])
        elif isinstance(err, str):
            return _snippet(err)
    return _snippet(text)


class OpenAIClient(BaseLLMClient):
    """POSTs to ``<base_url>/chat/completions`` with httpx.

    Timeouts, dropped connections, refused connections, 408/409/425/429 and 5xx are retried
    with exponential backoff and jitter (a usable ``Retry-After`` honoured; see
    :class:`RetryPolicy`), by tenacity; other 4xx and 200 answers that are not a chat completion
    raise at once, naming the endpoint. ``timeout_s`` is the deadline of one attempt, the whole
    reply included: a server that sends its body one byte at a time still ends it there. The
    API key comes from
    ``api_key`` or the environment variable ``api_key_env`` (no header when neither is set, as
    local vLLM/SGLang servers need none). ``extra_body`` is merged into every request (e.g.
    ``{"chat_template_kwargs": {"enable_thinking": False}}`` for Qwen3 on vLLM).
    """

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        api_key_env: str | None = "OPENAI_API_KEY",
        concurrency: int = 32,
        timeout_s: float = 600.0,
        retry: RetryPolicy | None = None,
        defaults: dict[str, Any] | None = None,
        extra_body: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        transport: Any = None,
    ) -> None:
        super().__init__(model, concurrency=concurrency, defaults=defaults)
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(
                f"base_url must start with http:// or https://, got {base_url!r} "
                "(e.g. http://127.0.0.1:8000/v1 for a local vLLM server)"
            )
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        self.base_url = base_url.rstrip("/")
        self.endpoint = f"{self.base_url}/chat/completions"
        self.timeout_s = timeout_s
        self.retry = retry or RetryPolicy()
        self.extra_body = dict(extra_body or {})
        self.api_key_env = api_key_env
        self.sleep = asyncio.sleep  # the wait between retries (tests swap in a recorder)
        self.transport = transport  # an httpx transport (default: the network)
        key = api_key or (os.environ.get(api_key_env) if api_key_env else None)
        self._headers = dict(headers or {})
        if key:
            self._headers["Authorization"] = f"Bearer {key}"

    def _pools(self) -> _Pools:
        state = self._loop_state()
        pools = state.get("http")
        if pools is None:
            import httpx

            # a given transport pools its own connections: one client over it
            size = self.concurrency if self.transport else min(self.concurrency, POOL_SIZE)
            options = {
                "timeout": httpx.Timeout(self.timeout_s, connect=min(self.timeout_s, 30.0)),
                "limits": httpx.Limits(max_connections=size, max_keepalive_connections=size),
                "headers": self._headers,
                "transport": self.transport,
                "verify": httpx.create_ssl_context(),  # one TLS context (70 ms each) for all
            }
            count = -(-self.concurrency // size)
            pools = _Pools([httpx.AsyncClient(**options) for _ in range(count)])
            state["http"] = pools
        return pools

    async def aclose(self) -> None:
        state = self._states.get(asyncio.get_running_loop())
        if state and state.get("http") is not None:
            await state["http"].aclose()
        await super().aclose()

    async def _chat(
        self, messages: list[Message], tools: list[dict[str, Any]] | None, sampling: dict[str, Any]
    ) -> Completion:
        body: dict[str, Any] = {**self.extra_body, **sampling, "model": self.model}
        body["messages"] = messages
        if tools:
            body["tools"] = tools
        if body.get("stream"):
            raise ValueError("streaming is not supported by OpenAIClient; drop 'stream'")
        if body.get("n", 1) != 1:
            raise ValueError(
                "OpenAIClient returns one completion per call: drop n and send n requests "
                "(with distinct seeds) through chat_many"
            )
        payload = _json_bytes(body)
        with self._pools().lease() as http:
            return await retry_async(
                lambda: self._attempt(http, payload), self.retry, sleep=self.sleep
            )

    async def _attempt(self, http: Any, payload: bytes) -> Completion:
        import httpx

        attempts = f"gave up after {self.retry.max_retries + 1} attempts"
        try:
            post = http.post(self.endpoint, content=payload, headers=JSON_HEADERS)
            response = await asyncio.wait_for(post, self.timeout_s)
        except (httpx.TimeoutException, asyncio.TimeoutError) as err:
            raise RetryableError(
                LLMTimeoutError(
                    f"{self.endpoint} did not answer within {self.timeout_s:g} s (the whole "
                    f"reply; {type(err).__name__}; {attempts}): raise timeout_s or check the "
                    "server load"
                )
            ) from None
        except httpx.ConnectError as err:
            raise RetryableError(
                LLMConnectionError(
                    f"cannot reach {self.endpoint}: is the server running? "
                    f"({type(err).__name__}: {err}; {attempts})"
                )
            ) from None
        except (httpx.NetworkError, httpx.RemoteProtocolError) as err:
            raise RetryableError(
                LLMConnectionError(
                    f"connection to {self.endpoint} dropped before a full response "
                    f"({type(err).__name__}: {err}; {attempts})"
                )
            ) from None
        except httpx.TransportError as err:
            raise LLMConnectionError(
                f"cannot talk to {self.endpoint}: {type(err).__name__}: {err}"
            ) from None
        status = response.status_code
        if status == 200:
            return self._parse(response.text)
        detail = _error_detail(response.text)
        if status in RETRY_STATUSES or status >= 500:
            raise RetryableError(
                LLMHTTPError(
                    f"HTTP {status} from {self.endpoint} ({attempts}): {detail}",
                    status=status,
                    endpoint=self.endpoint,
                    body=response.text,
                ),
                retry_after=parse_retry_after(response.headers.get("retry-after")),
            )
        hint = ""
        if status in (401, 403):
            hint = f" (check the API key: set ${self.api_key_env} or api_key)"
        elif status == 404:
            hint = " (check base_url, usually ending in /v1, and the model name)"
        raise LLMHTTPError(
            f"HTTP {status} from {self.endpoint}: {detail}{hint}",
            status=status,
            endpoint=self.endpoint,
            body=response.text,
        )

    async def preflight(self, requests: list[dict[str, Any]]) -> dict[str, Any]:
        """Check the server before a run (see :mod:`aworld_rl_core.llm.guard`); returns what it
        found (``models``, ``max_model_len``, ``prompt_tokens``). ``requests`` are chat requests
        ``{messages, tools?, **sampling}``; the longest is measured by the server's
        ``/tokenize`` (when it has one): it must leave room in the context, and ``max_tokens``
        must not exceed the context (vLLM refuses those; it shortens replies that merely run
        past it, which is logged). When it carries tools it is sent with ``max_tokens=1`` (a
        server without a tool-call parser refuses it).

        Raises :class:`~aworld_rl_core.llm.guard.LLMPreflightError` naming what to fix.
        """
        import httpx

        from aworld_rl_core.llm.guard import LLMPreflightError

        report: dict[str, Any] = {}
        models_url = f"{self.base_url}/models"
        timeout = httpx.Timeout(min(self.timeout_s, 30.0))
        async with httpx.AsyncClient(
            timeout=timeout, headers=self._headers, transport=self.transport
        ) as http:
            try:
                response = await http.get(models_url)
            except httpx.HTTPError as err:
                raise LLMPreflightError(
                    f"preflight: cannot reach the model server at {self.base_url} "
                    f"({type(err).__name__}: {err or 'no answer'}): start it (e.g. `python -m "
                    "vllm.entrypoints.openai.api_server --model MODEL`, see the README) or fix "
                    "llm.base_url; llm.preflight=false skips this check"
                ) from None
            if response.status_code in (401, 403):
                raise LLMPreflightError(
                    f"preflight: {models_url} refused the API key (HTTP {response.status_code}):"
                    f" set ${self.api_key_env}"
                )
            cards = _model_cards(response) if response.status_code == 200 else []
            names = [str(c.get("id")) for c in cards]
            report["models"] = names
            vllm_like = any(c.get("owned_by") == "vllm" or "max_model_len" in c for c in cards)
            if names and self.model not in names:
                message = (
                    f"preflight: the server at {self.base_url} serves {names}, not "
                    f"{self.model!r}: set llm.model to the served name (vLLM: "
                    "--served-model-name)"
                )
                if vllm_like:
                    raise LLMPreflightError(message)
                log.warning("%s", message)  # hosted APIs list some models under aliases
            card = next((c for c in cards if c.get("id") == self.model), {})
            max_len = card.get("max_model_len")
            if isinstance(max_len, int):
                report["max_model_len"] = max_len
            if not requests:
                return report
            longest = max(requests, key=lambda r: len(json.dumps(r, default=str)))
            sampling = self.sampling_params(
                {k: v for k, v in longest.items() if k not in ("messages", "tools")}
            )
            tokens = await self._count_tokens(http, longest, sampling)
            if tokens is not None:
                count, server_len = tokens
                report["prompt_tokens"] = count
                max_len = server_len or max_len
                report["max_model_len"] = max_len
                max_tokens = int(sampling.get("max_tokens") or 0)
                if isinstance(max_len, int) and (count >= max_len or max_tokens > max_len):
                    raise LLMPreflightError(
                        f"preflight: {self.base_url} serves {self.model!r} with a context of "
                        f"{max_len} tokens, but the longest first prompt is {count} tokens and "
                        f"replies may take max_tokens={max_tokens}: restart the server with a "
                        "larger --max-model-len (at least the prompt plus max_tokens) or lower "
                        "llm.max_tokens"
                    )
                if isinstance(max_len, int) and count + max_tokens > max_len:
                    log.warning(
                        "preflight: the longest first prompt (%d tokens) plus max_tokens=%d "
                        "exceeds the server's context (%d): long replies will be cut short",
                        count,
                        max_tokens,
                        max_len,
                    )
        if longest.get("tools"):
            probe = {**sampling, "max_tokens": 1}
            probe.pop("stop", None)
            try:
                await self._chat(list(longest["messages"]), longest["tools"], probe)
            except LLMHTTPError as err:
                raise LLMPreflightError(
                    f"preflight: {self.endpoint} refused a request with tools (HTTP "
                    f"{err.status}: {_error_detail(err.body)}); the protocol sends tool schemas, "
                    "so the server needs its tool-call parser: vLLM `--enable-auto-tool-choice "
                    "--tool-call-parser hermes` for Qwen models"
                ) from None
            except (LLMConnectionError, LLMTimeoutError, LLMResponseError) as err:
                raise LLMPreflightError(
                    f"preflight: a one-token request to {self.endpoint} failed: {err}"
                ) from None
        return report

    async def _count_tokens(
        self, http: Any, request: dict[str, Any], sampling: dict[str, Any]
    ) -> tuple[int, int | None] | None:
        """The prompt's token count by the server's ``/tokenize`` (vLLM, SGLang), with the
        server's context length when it says; None when the server has no such route."""
        root = self.base_url[: -len("/v1")] if self.base_url.endswith("/v1") else self.base_url
        body: dict[str, Any] = {
            "model": self.model,
            "messages": request["messages"],
            "add_generation_prompt": not sampling.get("continue_final_message", False),
        }
        for key in ("continue_final_message", "chat_template_kwargs"):
            if key in sampling or key in self.extra_body:
                body[key] = sampling.get(key, self.extra_body.get(key))
        if request.get("tools"):
            body["tools"] = request["tools"]
        try:
            response = await http.post(f"{root}/tokenize", json=body)
        except Exception:
            return None
        if response.status_code != 200:
            return None
        try:
            data = response.json()
        except ValueError:
            return None
        count = data.get("count") if isinstance(data, dict) else None
        if not isinstance(count, int):
            return None
        max_len = data.get("max_model_len")
        return count, max_len if isinstance(max_len, int) else None

    def _parse(self, text: str) -> Completion:
        def bad(reason: str) -> LLMResponseError:
            return LLMResponseError(
                f"{self.endpoint} answered 200 with a body that is not an OpenAI chat completion "
                f"({reason}): {_snippet(text)!r}"
            )

        try:
            data = json.loads(text)
        except ValueError:
            raise bad("not JSON") from None
        except RecursionError:
            raise bad("JSON nested too deeply") from None
        if not isinstance(data, dict):
            raise bad("not a JSON object")
        if "error" in data and "choices" not in data:
            raise bad(f"error: {_error_detail(text)}")
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise bad("no choices")
        message = choices[0].get("message")
        if not isinstance(message, dict):
            raise bad("choices[0] has no message")
        content = message.get("content")
        if content is not None and not isinstance(content, str):
            raise bad("message content is not a string")
        tool_calls = message.get("tool_calls") or None
        if tool_calls is not None and not isinstance(tool_calls, list):
            raise bad("tool_calls is not a list")
        reasoning = message.get("reasoning_content") or message.get("reasoning")
        usage = data.get("usage")
        if not isinstance(usage, dict):
            usage = {}
        stop_reason = choices[0].get("stop_reason")  # vLLM: the matched stop string
        token_ids = choices[0].get("token_ids")  # vLLM, with return_token_ids
        if not (isinstance(token_ids, list) and all(type(t) is int for t in token_ids)):
            token_ids = None
        return Completion(
            text=content or "",
            model=str(data.get("model") or self.model),
            finish_reason=choices[0].get("finish_reason"),
            stop_reason=stop_reason if isinstance(stop_reason, str) else None,
            tool_calls=tool_calls,
            reasoning=reasoning if isinstance(reasoning, str) else None,
            usage={k: v for k, v in usage.items() if isinstance(v, int)},
            token_ids=token_ids,
            logprobs=_logprobs(choices[0].get("logprobs")),
        )


def _model_cards(response: Any) -> list[dict[str, Any]]:
    """The model cards of a ``GET /models`` answer (none when it is not the OpenAI shape)."""
    try:
        data = response.json()
    except ValueError:
        return []
    cards = data.get("data") if isinstance(data, dict) else None
    if not isinstance(cards, list):
        return []
    return [c for c in cards if isinstance(c, dict) and "id" in c]


def _logprobs(value: Any) -> list[float] | None:
    """The sampled tokens' log-probabilities from an OpenAI ``choices[0].logprobs`` object
    (``{"content": [{"token", "logprob", ...}, ...]}``); None when absent or malformed."""
    content = value.get("content") if isinstance(value, dict) else None
    if not isinstance(content, list):
        return None
    out = []
    for item in content:
        logprob = item.get("logprob") if isinstance(item, dict) else None
        if not isinstance(logprob, int | float) or isinstance(logprob, bool):
            return None
        out.append(float(logprob))
    return out


class _Pools:
    """Small httpx clients (see :data:`POOL_SIZE`); each request leases the least busy one, so
    none holds more requests than connections while the client's concurrency limit holds."""

    def __init__(self, clients: list[Any]) -> None:
        self.clients = clients
        self.busy = [0] * len(clients)

    @contextlib.contextmanager
    def lease(self) -> Iterator[Any]:
        index = min(range(len(self.busy)), key=self.busy.__getitem__)
        self.busy[index] += 1
        try:
            yield self.clients[index]
        finally:
            self.busy[index] -= 1

    async def aclose(self) -> None:
        for client in self.clients:
            await client.aclose()
