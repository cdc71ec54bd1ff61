"""The retrieval server: Search-R1's HTTP contract on FastAPI, with micro-batching.

``POST /retrieve`` takes ``{"queries": [...], "topk": k, "return_scores": bool}`` and answers
``{"result": [[{"document": {"id", "title", "contents", "passage"}, "score"}, ...] per query],
"manifest": hash}`` (without scores: ``[[{"id", "title", "contents", "passage"}, ...]]``, as
Search-R1); ``id`` and ``title`` are the source document's corpus id and title, ``passage`` the
row in the passage store. What Search-R1's client sends is answered as Search-R1's server does
(an empty query list or query string and ``topk: 0`` get empty results, unknown fields are
ignored); ``strict`` turns those into 422s. When more than ``max_queue_queries`` queries wait
for the batcher, a request is refused with a 429 and ``Retry-After``. Requests that arrive
while a search runs are merged into the next one: one encoder call and one index search for
all of them; when that search fails, each merged request is searched alone, so only the
request that fails gets the error.
Each request has a deadline (``request_timeout_s``: a 503 with ``Retry-After`` when its search
has not finished by then) and its body must arrive within ``body_timeout_s`` (else a 408 and
the connection is closed). A search runs in chunks of ``search_chunk_queries``; between chunks
the work of requests whose client disconnected or whose deadline passed is dropped, so
abandoned work stops. A disconnect is one log line (no traceback). With ``allocator=release``
(the default) the server hands memory back to the OS after each burst, whatever the allocator
setting of the process (``aworld-run`` keeps freed memory for training).
Bad requests (including bodies nested too deeply, integers over Python's 4,300 digits and
queries that are not valid Unicode) get a 4xx with ``{"error": ..., "detail": ...}``; a
response over ``max_results`` passages or ``max_response_bytes`` bytes is a 413 naming the
limit. ``GET /health`` (with the ``limits`` clients split their requests by) and
``GET /metrics`` (requests, queries, latency percentiles, queue depth, batch sizes). Every
response carries the index manifest hash (``X-Index-Manifest`` header and ``manifest`` field).
"""

# no ``from __future__ import annotations``: FastAPI reads the endpoints' annotations at runtime
import asyncio
import contextlib
import gc
import json
import logging
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from aworld_rl_core.config import option
from aworld_rl_rag_r1.retrievers import Hit, Retriever

MANIFEST_HEADER = "X-Index-Manifest"
log = logging.getLogger("aworld_rl_rag_r1.server")


@dataclass(frozen=True, kw_only=True)
class ServerConfig:
    """Where the server listens and what it accepts."""

    host: str = option("127.0.0.1", help="bind address (0.0.0.0 exposes it to the network)")
    port: int = option(8000, help="port (RAG-R1's scripts use 8000)")
    default_topk: int = option(3, help="passages per query when a request gives no topk")
    max_topk: int = option(100, help="largest topk a request may ask")
    max_queries: int = option(4096, help="most queries in one request")
    max_query_chars: int = option(4096, help="longest query accepted")
    max_body_bytes: int = option(4_000_000, help="largest request body accepted")
    max_results: int = option(
        40_000, help="most passages (queries x topk) in one response (0: no limit); more is a 413"
    )
    max_response_bytes: int = option(
        16_000_000, help="largest response body in bytes (0: no limit); larger is a 413"
    )
    strict: bool = option(
        False,
        help="reject empty query lists, empty queries, topk 0 and unknown fields with a 422 "
        "(default: answer them as Search-R1's server does: empty results, fields ignored)",
    )
    threads: int = option(
        0, help="FAISS (OpenMP) and torch threads for the search (0: the libraries' default)"
    )
    batch_wait_ms: float = option(
        2.0, help="how long a batch waits for more requests before it runs"
    )
    max_batch_queries: int = option(8192, help="most queries merged into one index search")
    max_queue_queries: int = option(
        32_768,
        help="queries waiting for the batcher beyond which a request is refused with a 429 "
        "and Retry-After (0: no bound)",
    )
    retry_after_s: int = option(1, help="the Retry-After seconds a 429 or 503 carries")
    request_timeout_s: float = option(
        60.0,
        help="a request's deadline: its search not done by then is dropped and it gets a 503 "
        "with Retry-After (0: no deadline)",
    )
    body_timeout_s: float = option(
        10.0,
        help="the whole request body must arrive within this many seconds, else a 408 and the "
        "connection is closed (slow-body clients; 0: no limit)",
    )
    search_chunk_queries: int = option(
        256,
        help="queries per index search; between chunks the work of requests whose client left "
        "or whose deadline passed is dropped",
    )
    max_connections: int = option(
        1024, help="open connections beyond which uvicorn answers 503 (0: no limit)"
    )
    allocator: Literal["release", "keep"] = option(
        "release",
        help="release: glibc's default allocator and freed memory handed back to the OS after "
        "each burst (a long-lived server); keep: the process's setting (aworld-run keeps freed "
        "memory, which pins a burst's peak for good)",
    )
    replicas: int = option(1, help="server processes (> 1 runs the same app on Ray Serve)")
    latency_window: int = option(10_000, help="recent requests the latency percentiles cover")


class RequestError(Exception):
    def __init__(self, status: int, error: str, detail: Any = None) -> None:
        super().__init__(error)
        self.status, self.error, self.detail = status, error, detail


@dataclass
class _Job:
    queries: list[str]
    topk: int
    gold: list[list[str]] | None
    future: asyncio.Future


@dataclass
class Metrics:
    """Counters and recent latencies, served at ``/metrics``."""

    window: int = 10_000
    requests: int = 0
    queries: int = 0
    errors: int = 0
    batches: int = 0
    batch_queries: int = 0
    max_batch: int = 0
    queue_depth: int = 0
    in_flight: int = 0
    disconnects: int = 0
    timeouts: int = 0
    dropped_queries: int = 0
    trims: int = 0
    started: float = field(default_factory=time.time)
    latencies: deque = field(default_factory=deque)
    batch_sizes: deque = field(default_factory=deque)

    def record(self, seconds: float, queries: int) -> None:
        self.requests += 1
        self.queries += queries
        self.latencies.append(seconds)
        while len(self.latencies) > self.window:
            self.latencies.popleft()

    def batch(self, size: int) -> None:
        self.batches += 1
        self.batch_queries += size
        self.max_batch = max(self.max_batch, size)
        self.batch_sizes.append(size)
        while len(self.batch_sizes) > self.window:
            self.batch_sizes.popleft()

    def snapshot(self) -> dict[str, Any]:
        ordered = sorted(self.latencies)
        return {
            "requests": self.requests,
            "queries": self.queries,
            "errors": self.errors,
            "queue_depth": self.queue_depth,
            "in_flight": self.in_flight,
            "disconnects": self.disconnects,
            "timeouts": self.timeouts,
            "dropped_queries": self.dropped_queries,
            "trims": self.trims,
            "latency_ms": {
                "p50": 1000 * percentile(ordered, 50),
                "p99": 1000 * percentile(ordered, 99),
                "window": len(ordered),
            },
            "batches": {
                "count": self.batches,
                "mean_queries": self.batch_queries / self.batches if self.batches else 0.0,
                "max_queries": self.max_batch,
                "histogram": histogram(self.batch_sizes),
            },
            "uptime_s": time.time() - self.started,
        }


def percentile(ordered: Sequence[float], q: float) -> float:
    """The nearest-rank percentile of sorted values (0.0 when empty)."""
    if not ordered:
        return 0.0
    rank = max(1, -(-len(ordered) * q // 100))
    return float(ordered[int(rank) - 1])


def histogram(sizes: Sequence[int]) -> dict[str, int]:
    """Batch sizes in power-of-two buckets: ``{"1": n, "2-3": n, "4-7": n, ...}``."""
    out: dict[str, int] = {}
    for size in sizes:
        low = 1 << (max(size, 1).bit_length() - 1)
        key = "1" if low == 1 else f"{low}-{2 * low - 1}"
        out[key] = out.get(key, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: int(kv[0].split("-")[0])))


class MicroBatcher:
    """Merges concurrent requests into one ``retriever.search`` (run in a worker thread)."""

    def __init__(self, retriever: Retriever, cfg: ServerConfig, metrics: Metrics) -> None:
        self.retriever, self.cfg, self.metrics = retriever, cfg, metrics
        self.queue: asyncio.Queue[_Job] = asyncio.Queue()
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def submit(
        self, queries: list[str], topk: int, gold: list[list[str]] | None
    ) -> list[list[Hit]]:
        self.start()
        future = asyncio.get_running_loop().create_future()
        self.metrics.queue_depth += len(queries)
        await self.queue.put(_Job(queries, topk, gold, future))
        return await future

    async def _collect(self) -> list[_Job]:
        jobs = [await self.queue.get()]
        size = len(jobs[0].queries)
        deadline = time.monotonic() + self.cfg.batch_wait_ms / 1000
        while size < self.cfg.max_batch_queries:
            try:
                job = self.queue.get_nowait()
            except asyncio.QueueEmpty:
                wait = deadline - time.monotonic()
                if wait <= 0:
                    break
                try:
                    job = await asyncio.wait_for(self.queue.get(), wait)
                except asyncio.TimeoutError:
                    break
            jobs.append(job)
            size += len(job.queries)
        return jobs

    async def _loop(self) -> None:
        while True:
            jobs = await self._collect()
            size = sum(len(job.queries) for job in jobs)
            self.metrics.queue_depth -= size
            self.metrics.batch(size)
            for topk in sorted({job.topk for job in jobs}):  # one search per distinct topk
                await self._run([job for job in jobs if job.topk == topk], topk)
            del jobs  # else the last batch's results stay alive while the loop waits for more

    async def _run(self, jobs: list[_Job], topk: int) -> None:
        """Search the jobs' queries in chunks; a job whose future is done (its client left, its
        deadline passed) is dropped between chunks; a failing chunk is retried job by job."""
        got: list[list[list[Hit]]] = [[] for _ in jobs]
        chunk = max(1, self.cfg.search_chunk_queries)
        while True:
            picked: list[tuple[int, int, int]] = []  # (job, first query, end)
            room = chunk
            for i, job in enumerate(jobs):
                if job.future.done():
                    continue
                start = len(got[i])
                take = min(room, len(job.queries) - start)
                picked.append((i, start, start + take))
                room -= take
                if not room:
                    break
            if not picked:
                self.metrics.dropped_queries += sum(
                    len(job.queries) - len(got[i])
                    for i, job in enumerate(jobs)
                    if job.future.cancelled()
                )
                return
            try:
                found = await self._search(jobs, picked, topk)
            except Exception as exc:
                if len(picked) == 1:
                    self._fail(jobs[picked[0][0]], exc)
                    continue
                for piece in picked:  # each request alone: only the one that fails learns why
                    if jobs[piece[0]].future.done():
                        continue
                    try:
                        self._take(jobs, got, [piece], await self._search(jobs, [piece], topk))
                    except Exception as exc_alone:
                        self._fail(jobs[piece[0]], exc_alone)
                continue
            self._take(jobs, got, picked, found)

    async def _search(
        self, jobs: list[_Job], picked: list[tuple[int, int, int]], topk: int
    ) -> list[list[Hit]]:
        queries = [q for i, a, b in picked for q in jobs[i].queries[a:b]]
        gold = None
        if any(jobs[i].gold is not None for i, _, _ in picked):
            gold = [
                g
                for i, a, b in picked
                for g in (jobs[i].gold or [[] for _ in jobs[i].queries])[a:b]
            ]
        return await asyncio.to_thread(self.retriever.search, queries, topk, gold)

    @staticmethod
    def _take(
        jobs: list[_Job],
        got: list[list[list[Hit]]],
        picked: list[tuple[int, int, int]],
        found: list[list[Hit]],
    ) -> None:
        at = 0
        for i, a, b in picked:
            got[i].extend(found[at : at + b - a])
            at += b - a
            job = jobs[i]
            if len(got[i]) == len(job.queries) and not job.future.done():
                job.future.set_result(got[i])

    @staticmethod
    def _fail(job: _Job, exc: Exception) -> None:
        if not job.future.done():
            job.future.set_exception(exc)


@dataclass(frozen=True)
class RetrieveRequest:
    """A parsed ``/retrieve`` body."""

    queries: list[str]
    topk: int
    scores: bool
    gold: list[list[str]] | None


def _load_body(body: bytes) -> dict[str, Any]:
    try:
        data = json.loads(body)
    except RecursionError:
        raise RequestError(
            400, "the request body is nested too deeply to read", "send a flat JSON object"
        ) from None
    except ValueError as exc:  # bad JSON or UTF-8, an integer over Python's 4,300 digits
        raise RequestError(400, "the request body is not JSON", str(exc)[:200]) from None
    if not isinstance(data, dict):
        raise RequestError(422, "the request body must be a JSON object")
    return data


def _check_queries(queries: Any, cfg: ServerConfig) -> list[str]:
    if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
        raise RequestError(422, "'queries' must be a list of strings", repr(queries)[:200])
    if cfg.strict and not queries:
        raise RequestError(422, "'queries' is empty: send at least one query")
    if len(queries) > cfg.max_queries:
        raise RequestError(
            413, f"{len(queries)} queries in one request; the limit is {cfg.max_queries}"
        )
    for i, query in enumerate(queries):
        if cfg.strict and not query.strip():
            raise RequestError(422, f"query {i} is empty")
        if len(query) > cfg.max_query_chars:
            raise RequestError(
                422, f"query {i} has {len(query)} characters; the limit is {cfg.max_query_chars}"
            )
        try:
            query.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise RequestError(
                422,
                f"query {i} is not valid Unicode text (a lone surrogate at {exc.start}); "
                "send UTF-8 text",
            ) from None
    return queries


def _check_topk(topk: Any, cfg: ServerConfig) -> int:
    if topk is None:
        return cfg.default_topk
    if isinstance(topk, bool) or not isinstance(topk, int):
        raise RequestError(422, "'topk' must be an integer", repr(topk))
    low = 1 if cfg.strict else 0
    if not low <= topk <= cfg.max_topk:
        raise RequestError(422, f"'topk' must be between {low} and {cfg.max_topk}, got {topk}")
    return topk


def parse_request(body: bytes, cfg: ServerConfig) -> RetrieveRequest:
    """Validate a ``/retrieve`` body; every problem is a ``RequestError`` naming the field.

    By default the body is read as Search-R1's server reads it: unknown fields are ignored, an
    empty query list, empty query strings and ``topk: 0`` are answered with empty results.
    ``cfg.strict`` rejects those with a 422 instead.
    """
    data = _load_body(body)
    unknown = sorted(set(data) - {"queries", "topk", "return_scores", "gold"})
    if unknown and cfg.strict:
        raise RequestError(
            422, f"unknown field(s) {unknown}", "fields: queries, topk, return_scores, gold"
        )
    queries = _check_queries(data.get("queries"), cfg)
    topk = _check_topk(data.get("topk", cfg.default_topk), cfg)
    results = len(queries) * topk
    if cfg.max_results and results > cfg.max_results:
        raise RequestError(
            413,
            f"{len(queries)} queries x topk {topk} = {results} passages in one response; "
            f"the limit (server.max_results) is {cfg.max_results}: split the request",
        )
    scores = data.get("return_scores", False)
    if not isinstance(scores, bool):
        raise RequestError(422, "'return_scores' must be true or false", repr(scores))
    gold = data.get("gold")
    if gold is not None and (
        not isinstance(gold, list)
        or len(gold) != len(queries)
        or not all(isinstance(g, list) and all(isinstance(x, str) for x in g) for g in gold)
    ):
        raise RequestError(422, "'gold' must hold one list of document ids per query")
    return RetrieveRequest(queries, topk, scores, gold)


def searched(request: RetrieveRequest) -> list[int]:
    """Positions of the queries that go to the retriever (non-empty, and topk > 0)."""
    if request.topk == 0:
        return []
    return [i for i, q in enumerate(request.queries) if q.strip()]


def scatter(n: int, positions: list[int], found: list[list[Hit]]) -> list[list[Hit]]:
    """``found`` (one row per searched position) placed back among ``n`` rows; the others
    stay empty."""
    out: list[list[Hit]] = [[] for _ in range(n)]
    for position, row in zip(positions, found, strict=True):
        out[position] = row
    return out


def document(h: Hit) -> dict[str, Any]:
    """A passage as the response carries it: the corpus ``id`` and ``title`` of its document,
    its ``contents`` and its row in the passage store (``passage``)."""
    return {"id": h.doc_id or h.id, "title": h.title, "contents": h.contents, "passage": h.id}


def render(hits: list[list[Hit]], scores: bool) -> list[list[dict[str, Any]]]:
    if scores:
        return [[{"document": document(h), "score": h.score} for h in row] for row in hits]
    return [[document(h) for h in row] for row in hits]


def encode_response(payload: dict[str, Any], cfg: ServerConfig) -> bytes:
    """The JSON body, or a 413 ``RequestError`` naming the limit when it is larger."""
    body = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    if cfg.max_response_bytes and len(body) > cfg.max_response_bytes:
        raise RequestError(
            413,
            f"the response would have {len(body)} bytes; the limit "
            f"(server.max_response_bytes) is {cfg.max_response_bytes}: ask fewer queries or "
            "a smaller topk per request",
        )
    return body


def limits(cfg: ServerConfig) -> dict[str, int]:
    """What one request may ask (served at ``/health``; clients split their requests by it)."""
    return {
        "max_queries": cfg.max_queries,
        "max_topk": cfg.max_topk,
        "max_results": cfg.max_results,
        "max_query_chars": cfg.max_query_chars,
        "max_body_bytes": cfg.max_body_bytes,
        "max_response_bytes": cfg.max_response_bytes,
    }


def set_threads(threads: int) -> None:
    """FAISS's OpenMP threads and torch's intra-op threads (0: leave the libraries' default)."""
    if threads < 0:
        raise ValueError(f"server.threads must be >= 0, got {threads}")
    if threads == 0:
        return
    import importlib.util

    if importlib.util.find_spec("faiss") is not None:
        import faiss

        faiss.omp_set_num_threads(threads)
    if importlib.util.find_spec("torch") is not None:
        import torch

        torch.set_num_threads(threads)


def create_app(retriever: Retriever, cfg: ServerConfig | None = None) -> Any:
    """The FastAPI app serving ``retriever`` (FastAPI imported here)."""
    from contextlib import asynccontextmanager

    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse, Response

    cfg = cfg or ServerConfig()
    metrics = Metrics(window=cfg.latency_window)
    batcher = MicroBatcher(retriever, cfg, metrics)
    manifest = retriever.manifest_hash
    headers = {MANIFEST_HEADER: manifest}

    @asynccontextmanager
    async def lifespan(_app):
        batcher.start()
        trimmer = None
        if cfg.allocator == "release":  # the process's setting is made by serve()
            trimmer = asyncio.get_running_loop().create_task(_trim_after_bursts(metrics))
        yield
        if trimmer is not None:
            trimmer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await trimmer
        await batcher.stop()

    app = FastAPI(title="aworld-rl retrieval server", lifespan=lifespan)
    app.state.metrics, app.state.batcher = metrics, batcher

    def error(
        status: int, message: str, detail: Any = None, extra: dict[str, str] | None = None
    ) -> Any:
        metrics.errors += 1
        body = {"error": message, "detail": detail, "manifest": manifest}
        return JSONResponse(body, status_code=status, headers={**headers, **(extra or {})})

    def client_of(request: Request) -> str:
        return f"{request.client.host}:{request.client.port}" if request.client else "a client"

    def left(request: Request, when: str) -> Any:
        metrics.disconnects += 1
        log.warning("rag_r1 server: %s disconnected %s", client_of(request), when)
        return Response(status_code=499)  # nobody reads it

    async def read_body(request: Request) -> bytes:
        body = bytearray()
        async for piece in request.stream():
            body += piece
            if len(body) > cfg.max_body_bytes:
                raise RequestError(413, f"the body is over the limit of {cfg.max_body_bytes} bytes")
        return bytes(body)

    @app.post("/retrieve")
    async def retrieve(request: Request) -> Any:
        metrics.in_flight += 1
        try:
            return await _retrieve(request)
        finally:
            metrics.in_flight -= 1

    async def _retrieve(request: Request) -> Any:
        from starlette.requests import ClientDisconnect

        began = time.perf_counter()
        declared = request.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > cfg.max_body_bytes:
            return error(413, f"the body has {declared} bytes; the limit is {cfg.max_body_bytes}")
        try:
            body = await asyncio.wait_for(read_body(request), cfg.body_timeout_s or None)
        except RequestError as exc:
            return error(exc.status, exc.error, exc.detail)
        except ClientDisconnect:
            return left(request, "while sending its request body")
        except asyncio.TimeoutError:
            metrics.timeouts += 1
            log.warning(
                "rag_r1 server: %s sent its body too slowly (over server.body_timeout_s=%s s); "
                "connection closed",
                client_of(request),
                cfg.body_timeout_s,
            )
            return error(
                408,
                f"the request body did not arrive within {cfg.body_timeout_s} s "
                "(server.body_timeout_s)",
                extra={"Connection": "close"},
            )
        try:
            parsed = parse_request(body, cfg)
        except RequestError as exc:
            return error(exc.status, exc.error, exc.detail)
        positions = searched(parsed)
        waiting = metrics.queue_depth
        if positions and cfg.max_queue_queries and waiting + len(positions) > cfg.max_queue_queries:
            return error(
                429,
                f"the server is busy: {waiting} queries are waiting (server.max_queue_queries "
                f"is {cfg.max_queue_queries}); retry after {cfg.retry_after_s} s",
                extra={"Retry-After": str(cfg.retry_after_s)},
            )
        found: list[list[Hit]] = []
        if positions:
            search = asyncio.ensure_future(_search(positions, parsed))
            watch = asyncio.ensure_future(_disconnected(request))
            try:
                done, _ = await asyncio.wait(
                    {search, watch},
                    timeout=cfg.request_timeout_s or None,
                    return_when=asyncio.FIRST_COMPLETED,
                )
            finally:
                watch.cancel()
            if search not in done:
                search.cancel()  # its queries are dropped by the batcher
                if watch in done:
                    return left(request, "before its answer was ready; its search was dropped")
                metrics.timeouts += 1
                return error(
                    503,
                    f"the search did not finish within {cfg.request_timeout_s} s "
                    f"(server.request_timeout_s); retry after {cfg.retry_after_s} s",
                    extra={"Retry-After": str(cfg.retry_after_s)},
                )
            try:
                found = search.result()
            except ValueError as exc:  # e.g. the oracle without gold ids
                return error(422, str(exc))
            except Exception as exc:
                return error(500, f"retrieval failed: {type(exc).__name__}: {exc}")
        hits = scatter(len(parsed.queries), positions, found)
        payload = {"result": render(hits, parsed.scores), "manifest": manifest}
        try:
            encoded = encode_response(payload, cfg)
        except RequestError as exc:
            return error(exc.status, exc.error, exc.detail)
        metrics.record(time.perf_counter() - began, len(parsed.queries))
        return Response(encoded, media_type="application/json", headers=headers)

    async def _search(positions: list[int], parsed: RetrieveRequest) -> list[list[Hit]]:
        gold = [parsed.gold[i] for i in positions] if parsed.gold is not None else None
        return await batcher.submit([parsed.queries[i] for i in positions], parsed.topk, gold)

    @app.get("/health")
    async def health() -> Any:
        body = {"status": "ok", "manifest": manifest, "limits": limits(cfg)}
        return JSONResponse(body, headers=headers)

    @app.get("/metrics")
    async def get_metrics() -> Any:
        return JSONResponse({**metrics.snapshot(), "manifest": manifest}, headers=headers)

    @app.exception_handler(404)
    async def not_found(_request: Request, _exc: Exception) -> Any:
        return error(404, "no such endpoint", "endpoints: POST /retrieve, GET /health, /metrics")

    @app.exception_handler(405)
    async def bad_method(request: Request, _exc: Exception) -> Any:
        return error(405, f"{request.method} is not allowed here", "POST /retrieve")

    return app


def use_allocator(cfg: ServerConfig) -> None:
    """``allocator=release``: glibc's defaults for this (server) process, whatever
    ``aworld-run`` set for training (core's ``allocator``). The serve recipe and each Ray
    replica call it; :func:`serve` leaves the process's setting alone (it may be a test's or a
    training job's)."""
    if cfg.allocator == "release":
        from aworld_rl_core.allocator import release_freed_memory

        release_freed_memory()


async def _disconnected(request: Any) -> None:
    """Returns when the client of ``request`` (whose body is read) disconnects."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


async def _trim_after_bursts(metrics: Metrics, every_s: float = 1.0) -> None:
    """Once the server is idle after serving something, hand freed memory back to the OS."""
    from aworld_rl_core.allocator import trim

    seen = -1
    while True:
        await asyncio.sleep(every_s)
        served = metrics.requests + metrics.errors + metrics.disconnects
        if served != seen and metrics.in_flight == 0 and metrics.queue_depth == 0:
            seen = served
            gc.collect()  # cycles (exceptions' frames) hold results until a collection
            await asyncio.to_thread(trim)
            metrics.trims += 1


def serve(
    retriever: Retriever, cfg: ServerConfig, *, on_ready: Callable[[], None] | None = None
) -> Any:
    """A started uvicorn server in a background thread (``.should_exit = True`` stops it;
    ``.bound_port`` is the port, useful with ``port=0``)."""
    import threading

    import uvicorn

    set_threads(cfg.threads)
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(retriever, cfg),
            host=cfg.host,
            port=cfg.port,
            log_level="warning",
            limit_concurrency=cfg.max_connections or None,
        )
    )
    thread = threading.Thread(target=server.run, name="retrieval-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError(
                f"the retrieval server did not start on {cfg.host}:{cfg.port} (port in use?)"
            )
        if time.monotonic() > deadline:
            raise RuntimeError("the retrieval server did not start within 60 s")
        time.sleep(0.02)
    server.thread = thread
    server.bound_port = server.servers[0].sockets[0].getsockname()[1]
    if on_ready is not None:
        on_ready()
    return server
