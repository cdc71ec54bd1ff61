"""A scripted OpenAI-compatible chat endpoint standing in for vLLM / SGLang / hosted APIs: a
test double, and the offline endpoint of demo presets (no GPU, no network, no model).

One script (:class:`ScriptedLLM`: replies, injected faults, a log of requests) played two ways:

- :class:`ScriptedTransport`, in process: an ``httpx.MockTransport`` to hand to
  ``OpenAIClient(transport=...)``; no socket, no thread. Client unit tests use it.
- :class:`ScriptedLLMServer`, on a real socket (127.0.0.1, ephemeral port, a background
  thread), for code that only takes a ``base_url`` (recipes, jobs in a subprocess) and for
  concurrency figures::

    from aworld_rl_core.llm import OpenAIClient
    from aworld_rl_core.llm.scripted_server import Fault, ScriptedLLMServer

    def judge(body):                      # body: the parsed JSON request
        last = body["messages"][-1]["content"]
        return "yes" if "42" in last else "no"

    with ScriptedLLMServer(judge, latency_s=0.01) as server:
        server.inject(Fault.error(500), Fault.rate_limit(retry_after=0.1))  # next two requests
        client = OpenAIClient(base_url=server.base_url, model=server.model)
        ...
        assert server.chat_bodies[-1]["messages"][-1]["content"] == "..."
        assert server.max_in_flight <= 8

A reply is a string (the assistant content), a dict (an assistant message, e.g. with
``tool_calls``; or a whole response body if it has ``choices``) or a :class:`Fault`. ``reply`` is
one of these, a function of the request body returning one, or a list consumed in order.
Faults: ``delay`` (slow answer), ``hang`` (no answer until the client gives up), ``drip`` (a
good answer sent one byte at a time), ``error`` (any status, optional ``Retry-After``),
``rate_limit`` (429), ``garbage`` (200 with a body that is not a chat completion) and ``drop``
(connection closed without an answer). A reply function may return any fault but ``delay`` (it
can sleep itself). ``GET /v1/models`` lists ``model``; streaming is refused. With
``max_model_len`` the server also acts as vLLM does for a preflight: its model card says
``owned_by: vllm`` and the context length, and ``POST /tokenize`` counts a request's prompt (one
token per whitespace-separated word of the messages' content, the unit of its ``usage``).
"""

from __future__ import annotations

import collections
import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

FaultKind = Literal["delay", "hang", "drip", "error", "garbage", "drop"]


@dataclass(frozen=True)
class Fault:
    """One injected misbehaviour; build it with the class methods."""

    kind: FaultKind
    seconds: float = 0.0
    status: int = 500
    body: bytes = b""
    retry_after: str | None = None

    @classmethod
    def delay(cls, seconds: float) -> Fault:
        """Answer normally after ``seconds``."""
        return cls("delay", seconds=seconds)

    @classmethod
    def hang(cls, seconds: float = 3600.0) -> Fault:
        """Send nothing for ``seconds`` (or until the server stops), then close the connection."""
        return cls("hang", seconds=seconds)

    @classmethod
    def drip(cls, interval_s: float = 0.4) -> Fault:
        """A normal answer whose body goes out one byte every ``interval_s`` seconds."""
        return cls("drip", seconds=interval_s)

    @classmethod
    def error(
        cls, status: int = 500, message: str = "scripted failure", retry_after: float | None = None
    ) -> Fault:
        """An HTTP error with an OpenAI-style JSON error body."""
        body = json.dumps({"error": {"message": message, "type": "scripted", "code": status}})
        after = None if retry_after is None else f"{retry_after:g}"
        return cls("error", status=status, body=body.encode(), retry_after=after)

    @classmethod
    def rate_limit(cls, retry_after: float | None = 1.0) -> Fault:
        """HTTP 429 with a ``Retry-After`` header (seconds)."""
        return cls.error(429, "rate limited (scripted)", retry_after=retry_after)

    @classmethod
    def garbage(cls, body: bytes = b"<html>502 bad gateway</html>") -> Fault:
        """HTTP 200 whose body is not a chat completion."""
        return cls("garbage", status=200, body=body)

    @classmethod
    def drop(cls) -> Fault:
        """Close the connection without answering."""
        return cls("drop")


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server saw it."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    received_at: float = field(default_factory=time.monotonic)


Reply = str | dict | Fault
ReplySource = Reply | Callable[[dict], Reply] | list | None


def _echo(body: dict) -> str:
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    return f"echo: {users[-1].get('content', '') if users else ''}"


@dataclass(frozen=True)
class _Answer:
    """What to do with one request: wait ``wait_s``, then send ``status`` / ``body`` (or act out
    ``fault``: hang, drop or drip)."""

    wait_s: float = 0.0
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    fault: Fault | None = None


def _json_answer(status: int, data: Any, wait_s: float = 0.0) -> _Answer:
    return _Answer(wait_s, status, json.dumps(data).encode())


class ScriptedLLM:
    """The script: replies, injected faults, the request log and in-flight counts.
    ``latency_s`` delays every chat answer."""

    def __init__(
        self,
        reply: ReplySource = None,
        *,
        latency_s: float = 0.0,
        model: str = "scripted-model",
        max_model_len: int | None = None,
    ) -> None:
        self.model = model
        self.latency_s = latency_s
        self.max_model_len = max_model_len
        self._reply_fn: Callable[[dict], Reply] | None = None
        self._replies: collections.deque[Reply] | None = None
        if isinstance(reply, list):
            self._replies = collections.deque(reply)
        elif callable(reply):
            self._reply_fn = reply
        elif reply is None:
            self._reply_fn = _echo
        else:
            self._reply_fn = lambda _body, fixed=reply: fixed
        self._faults: collections.deque[Fault] = collections.deque()
        self._lock = threading.Lock()
        self._log: list[RecordedRequest] = []
        self._in_flight = 0
        self._max_in_flight = 0

    # -- scripting ---------------------------------------------------------------------------
    def inject(self, *faults: Fault) -> None:
        """Queue faults; each of the next chat requests takes one, in order."""
        with self._lock:
            self._faults.extend(faults)

    def add_replies(self, *replies: Reply) -> None:
        """Append scripted replies to the reply queue (switching to queue mode)."""
        with self._lock:
            if self._replies is None:
                self._replies = collections.deque()
            self._replies.extend(replies)

    # -- observation -------------------------------------------------------------------------
    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far (copy)."""
        with self._lock:
            return list(self._log)

    @property
    def chat_bodies(self) -> list[dict]:
        """The JSON bodies of the chat-completion requests so far (None: a body that was not
        JSON, e.g. cut short by a client killed mid-send)."""
        return [r.body for r in self.requests if r.path.endswith("/chat/completions")]

    @property
    def in_flight(self) -> int:
        with self._lock:
            return self._in_flight

    @property
    def max_in_flight(self) -> int:
        """The largest number of requests being handled at the same time."""
        with self._lock:
            return self._max_in_flight

    def reset_stats(self) -> None:
        """Clear the request log and the in-flight maximum."""
        with self._lock:
            self._log.clear()
            self._max_in_flight = self._in_flight

    # -- internals used by the handler -------------------------------------------------------
    def _enter(self, record: RecordedRequest) -> None:
        with self._lock:
            self._log.append(record)
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _next_fault(self) -> Fault | None:
        with self._lock:
            return self._faults.popleft() if self._faults else None

    def _next_reply(self, body: dict) -> Reply:
        with self._lock:
            if self._replies is not None:
                if self._replies:
                    return self._replies.popleft()
                return Fault.error(500, "scripted replies exhausted")
            fn = self._reply_fn
        assert fn is not None
        return fn(body)

    def completion_body(self, reply: str | dict, request: dict) -> dict:
        """The OpenAI response body for a string or message-dict reply."""
        if isinstance(reply, dict) and "choices" in reply:
            return reply
        if isinstance(reply, str):
            message: dict[str, Any] = {"role": "assistant", "content": reply}
            finish = "stop"
        else:
            message = {"role": "assistant", "content": None, **reply}
            finish = message.pop(
                "finish_reason", "tool_calls" if message.get("tool_calls") else "stop"
            )
        prompt_words = sum(
            len(str(m.get("content") or "").split()) for m in request.get("messages", [])
        )
        completion_words = len(str(message.get("content") or "").split())
        return {
            "id": f"chatcmpl-scripted-{len(self._log)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model", self.model),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": prompt_words,
                "completion_tokens": completion_words,
                "total_tokens": prompt_words + completion_words,
            },
        }

    def models_body(self) -> dict[str, Any]:
        """The ``GET /v1/models`` answer."""
        card: dict[str, Any] = {"id": self.model, "object": "model"}
        if self.max_model_len is not None:
            card.update(owned_by="vllm", max_model_len=self.max_model_len)
        return {"object": "list", "data": [card]}

    def _plan(self, path: str, body: Any) -> _Answer:
        """The answer to a POST of ``body`` to ``path`` (takes the next fault or reply)."""
        if path.rstrip("/").endswith("/tokenize") and self.max_model_len is not None:
            messages = body.get("messages") if isinstance(body, dict) else None
            if not isinstance(messages, list):
                return _json_answer(400, {"error": {"message": "tokenize needs 'messages'"}})
            count = sum(len(str(m.get("content") or "").split()) for m in messages)
            return _json_answer(200, {"count": count, "max_model_len": self.max_model_len})
        if not path.rstrip("/").endswith("/chat/completions"):
            return _json_answer(404, {"error": {"message": f"no route {path}"}})
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return _json_answer(
                400, {"error": {"message": "body must be JSON with a 'messages' list"}}
            )
        if body.get("stream"):
            return _json_answer(400, {"error": {"message": "streaming is not scripted"}})
        fault = self._next_fault()
        wait = self.latency_s
        reply: Reply | None = fault
        if fault is None or fault.kind == "delay":
            wait += fault.seconds if fault is not None else 0.0
            reply = self._next_reply(body)
        if reply is None:
            reply = self._next_reply(body)
        if not isinstance(reply, Fault):
            return _json_answer(200, self.completion_body(reply, body), wait)
        if reply.kind == "drip":
            content = self._next_reply(body)
            if isinstance(content, Fault):
                return _json_answer(500, {"error": {"message": "a drip needs a reply to send"}})
            answer = json.dumps(self.completion_body(content, body)).encode()
            return _Answer(wait, 200, answer, fault=reply)
        if reply.kind in ("hang", "drop"):
            return _Answer(wait, fault=reply)
        if reply.kind == "delay":  # only inject() may delay; a reply function can sleep
            return _json_answer(500, {"error": {"message": "Fault.delay returned as a reply"}})
        headers = {"Retry-After": reply.retry_after} if reply.retry_after else {}
        return _Answer(wait, reply.status, reply.body, headers)


class ScriptedTransport(ScriptedLLM):
    """The script in process: ``OpenAIClient(base_url=t.base_url, transport=t.transport)``.

    Waits are ``asyncio.sleep``; a hang sleeps until the client gives up; a drop raises
    ``httpx.RemoteProtocolError`` as a closed connection does."""

    base_url = "http://scripted.invalid/v1"

    @property
    def transport(self) -> Any:
        import httpx

        return httpx.MockTransport(self._handle)

    async def _handle(self, request: Any) -> Any:
        import asyncio

        import httpx

        body: Any = None
        if request.method == "POST":
            try:
                body = json.loads(request.content)
            except ValueError:
                body = None
        headers = {
            "-".join(p.capitalize() for p in k.split("-")): v for k, v in request.headers.items()
        }
        self._enter(RecordedRequest(request.method, request.url.path, headers, body))
        try:
            if request.method == "GET":
                answer = self._get(request.url.path)
            else:
                answer = self._plan(request.url.path, body)
            if answer.wait_s:
                await asyncio.sleep(answer.wait_s)
            fault = answer.fault
            if fault is not None and fault.kind == "hang":
                await asyncio.sleep(fault.seconds)
            if fault is not None and fault.kind in ("hang", "drop"):
                raise httpx.RemoteProtocolError("scripted: connection closed without an answer")
            headers = {"Content-Type": "application/json", **answer.headers}
            if fault is not None and fault.kind == "drip":
                return httpx.Response(
                    answer.status, headers=headers, stream=_drip(answer.body, fault.seconds)
                )
            return httpx.Response(answer.status, headers=headers, content=answer.body)
        finally:
            self._leave()

    def _get(self, path: str) -> _Answer:
        if path.rstrip("/").endswith("/models"):
            return _json_answer(200, self.models_body())
        return _json_answer(404, {"error": {"message": f"no route {path}"}})


def _drip(body: bytes, interval_s: float) -> Any:
    """An httpx async body that yields one byte per ``interval_s``."""
    import asyncio

    import httpx

    class Drip(httpx.AsyncByteStream):
        async def __aiter__(self) -> Any:
            for i in range(len(body)):
                yield body[i : i + 1]
                await asyncio.sleep(interval_s)

    return Drip()


class ScriptedLLMServer(ScriptedLLM):
    """The script on a real socket; use as a context manager or call :meth:`start` /
    :meth:`stop`."""

    def __init__(
        self,
        reply: ReplySource = None,
        *,
        latency_s: float = 0.0,
        model: str = "scripted-model",
        max_model_len: int | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        super().__init__(reply, latency_s=latency_s, model=model, max_model_len=max_model_len)
        self._stop = threading.Event()
        self._httpd = _Server((host, port), _Handler)
        self._httpd.owner = self
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        host = self._httpd.server_address[0]
        return f"http://{host.decode() if isinstance(host, bytes) else host}:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI base URL, ``http://127.0.0.1:<port>/v1``."""
        return f"{self.url}/v1"

    def start(self) -> ScriptedLLMServer:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; hanging handlers are released."""
        self._stop.set()
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join()
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> ScriptedLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _wait(self, seconds: float) -> bool:
        """Sleep ``seconds`` unless the server stops first; True if it stopped."""
        return self._stop.wait(seconds)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256
    owner: ScriptedLLMServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Dropped and hung connections are expected here: stay quiet."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in two writes: no 40 ms stalls
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """No per-request logging."""

    def _send(
        self,
        status: int,
        body: bytes,
        headers: dict[str, str] | None = None,
        *,
        length: int | None = None,
    ) -> None:
        self.send_response(status)
        headers = {"Content-Type": "application/json", **(headers or {})}
        headers["Content-Length"] = str(len(body) if length is None else length)
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        self._finish()  # counted out before the client can read its answer
        self.wfile.write(body)
        self.wfile.flush()

    def _begin(self, record: RecordedRequest) -> None:
        self.server.owner._enter(record)
        self._counted = True

    def _finish(self) -> None:
        if getattr(self, "_counted", False):
            self._counted = False
            self.server.owner._leave()

    def _json(self, status: int, data: Any) -> None:
        self._send(status, json.dumps(data).encode())

    def _drop(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def do_GET(self) -> None:
        owner = self.server.owner
        self._begin(RecordedRequest("GET", self.path, dict(self.headers), None))
        try:
            if self.path.rstrip("/").endswith("/models"):
                self._json(200, owner.models_body())
            else:
                self._json(404, {"error": {"message": f"no route {self.path}"}})
        finally:
            self._finish()

    def do_POST(self) -> None:
        owner = self.server.owner
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        self._begin(RecordedRequest("POST", self.path, dict(self.headers), body))
        try:
            self._answer(owner, body)
        finally:
            self._finish()

    def _answer(self, owner: ScriptedLLMServer, body: Any) -> None:
        answer = owner._plan(self.path, body)
        if answer.wait_s and owner._wait(answer.wait_s):
            self._drop()
            return
        fault = answer.fault
        if fault is not None and fault.kind == "hang":
            owner._wait(fault.seconds)
        if fault is not None and fault.kind in ("hang", "drop"):
            self._drop()
            return
        headers = {"Content-Type": "application/json", **answer.headers}
        if fault is None or fault.kind != "drip":
            self._send(answer.status, answer.body, headers)
            return
        self._send(answer.status, b"", headers, length=len(answer.body))
        for i in range(len(answer.body)):
            if owner._wait(fault.seconds):
                break
            try:
                self.wfile.write(answer.body[i : i + 1])
                self.wfile.flush()
            except OSError:  # the client gave up
                break
        self._drop()
