"""A scripted OpenAI-compatible chat server: a TEST DOUBLE for vLLM / SGLang / hosted APIs.

It listens on 127.0.0.1 (ephemeral port) in a background thread, answers
``POST /v1/chat/completions`` from a script, injects faults on demand and logs every request::

    from aworld_rl_core.llm import OpenAIClient
    from aworld_rl_core.testing.llm_server import Fault, ScriptedLLMServer

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
Faults: ``delay`` (slow answer), ``hang`` (no answer until the client gives up), ``error``
(any status, optional ``Retry-After``), ``rate_limit`` (429), ``garbage`` (200 with a non-JSON
body) and ``drop`` (connection closed without an answer). A reply function may return any fault
but ``delay`` (it can sleep itself). ``GET /v1/models`` lists ``model``; streaming is refused.
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

FaultKind = Literal["delay", "hang", "error", "garbage", "drop"]


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


class ScriptedLLMServer:
    """Scripted chat-completions server (test double); use as a context manager or call
    :meth:`start` / :meth:`stop`. ``latency_s`` delays every chat answer."""

    def __init__(
        self,
        reply: ReplySource = None,
        *,
        latency_s: float = 0.0,
        model: str = "scripted-model",
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.model = model
        self.latency_s = latency_s
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
        self._stop = threading.Event()
        self._log: list[RecordedRequest] = []
        self._in_flight = 0
        self._max_in_flight = 0
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
        return f"http://{self._httpd.server_address[0]}:{self.port}"

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

    def _wait(self, seconds: float) -> bool:
        """Sleep ``seconds`` unless the server stops first; True if it stopped."""
        return self._stop.wait(seconds)

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

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
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
                self._json(
                    200, {"object": "list", "data": [{"id": owner.model, "object": "model"}]}
                )
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
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._json(404, {"error": {"message": f"no route {self.path}"}})
            return
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            self._json(400, {"error": {"message": "body must be JSON with a 'messages' list"}})
            return
        if body.get("stream"):
            self._json(400, {"error": {"message": "streaming is not scripted"}})
            return
        fault = owner._next_fault()
        if owner.latency_s and owner._wait(owner.latency_s):
            self._drop()
            return
        reply: Reply | None = fault
        if fault is None or fault.kind == "delay":
            if fault is not None and owner._wait(fault.seconds):
                self._drop()
                return
            reply = owner._next_reply(body)
        if isinstance(reply, Fault):
            self._fault(owner, reply)
        else:
            self._json(200, owner.completion_body(reply, body))

    def _fault(self, owner: ScriptedLLMServer, fault: Fault) -> None:
        if fault.kind == "hang":
            owner._wait(fault.seconds)
            self._drop()
        elif fault.kind == "drop":
            self._drop()
        elif fault.kind == "delay":  # only inject() may delay; a reply function can sleep
            self._json(500, {"error": {"message": "Fault.delay returned as a reply"}})
        else:
            headers = {"Retry-After": fault.retry_after} if fault.retry_after else None
            self._send(fault.status, fault.body, headers)
