"""``HttpRetriever``: the retrieval server as a ``Retriever``.

``search`` sends one POST when the request fits the limits the server announces at ``/health``
(``max_request_queries(topk)`` says how many queries fit); a 413 for the response size (a
server whose passages are longer than expected) splits the request in halves and retries.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aworld_rl_rag_r1.retrievers import Hit


class RetrievalServerError(RuntimeError):
    """The server is unreachable, refused the request, or changed its index mid-run."""

    def __init__(self, message: str, *, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class HttpRetriever:
    """POSTs to ``url`` (``.../retrieve``) with retries on connection errors and 5xx."""

    def __init__(self, url: str, *, timeout_s: float = 120.0, retries: int = 3) -> None:
        import httpx

        self.url = url.rstrip("/")
        if not self.url.endswith("/retrieve"):
            self.url += "/retrieve"
        self.base = self.url[: -len("/retrieve")]
        self.retries = retries
        self._client = httpx.Client(timeout=timeout_s)
        self._retryable = (httpx.TransportError,)
        self.calls = 0
        health = self._get("/health")
        self.manifest_hash = str(health["manifest"])
        self.limits: dict[str, int] = dict(health.get("limits") or {})

    def max_request_queries(self, topk: int) -> int:
        """Most queries one request may carry at ``topk`` under the server's limits (0: any)."""
        caps = []
        if self.limits.get("max_queries"):
            caps.append(int(self.limits["max_queries"]))
        if self.limits.get("max_results") and topk > 0:
            caps.append(max(1, int(self.limits["max_results"]) // topk))
        return min(caps) if caps else 0

    def _attempt(self, send) -> Any:
        from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential

        retrying = Retrying(
            stop=stop_after_attempt(self.retries + 1),
            wait=wait_exponential(multiplier=0.2, max=5),
            retry=retry_if_exception(self._should_retry),
            reraise=True,
        )
        try:
            response = retrying(send)
        except _ServerBusy as busy:  # still 5xx / 429 after the retries: report it
            response = busy.response
        except self._retryable as exc:
            raise RetrievalServerError(
                f"the retrieval server at {self.base} is not reachable ({type(exc).__name__}: "
                f"{exc}); start one with `aworld-run rag_r1.serve --preset ...` or fix "
                "retriever.url"
            ) from None
        if response.status_code >= 400:
            try:
                body = response.json()
            except ValueError:
                body = {"error": response.text[:300]}
            raise RetrievalServerError(
                f"the retrieval server answered {response.status_code}: {body.get('error')} "
                f"({body.get('detail')})",
                status=response.status_code,
            )
        return response.json()

    def _should_retry(self, exc: BaseException) -> bool:
        return isinstance(exc, (*self._retryable, _ServerBusy))

    def _get(self, path: str) -> Any:
        return self._attempt(lambda: _check(self._client.get(self.base + path)))

    def search(
        self, queries: Sequence[str], topk: int, gold: Sequence[Sequence[str]] | None = None
    ) -> list[list[Hit]]:
        if not queries:
            return []
        cap = self.max_request_queries(topk) or len(queries)
        out: list[list[Hit]] = []
        for start in range(0, len(queries), cap):
            part = gold[start : start + cap] if gold is not None else None
            out += self._search_split(list(queries[start : start + cap]), topk, part)
        return out

    def _search_split(
        self, queries: list[str], topk: int, gold: Sequence[Sequence[str]] | None
    ) -> list[list[Hit]]:
        """One request; halved and retried while the server answers 413 (response too big)."""
        try:
            return self._post(queries, topk, gold)
        except RetrievalServerError as exc:
            if exc.status != 413 or len(queries) < 2:
                raise
        half = len(queries) // 2
        return [
            *self._search_split(queries[:half], topk, gold[:half] if gold is not None else None),
            *self._search_split(queries[half:], topk, gold[half:] if gold is not None else None),
        ]

    def _post(
        self, queries: list[str], topk: int, gold: Sequence[Sequence[str]] | None
    ) -> list[list[Hit]]:
        payload: dict[str, Any] = {"queries": queries, "topk": topk, "return_scores": True}
        if gold is not None:
            payload["gold"] = [list(g) for g in gold]
        self.calls += 1
        data = self._attempt(lambda: _check(self._client.post(self.url, json=payload)))
        if data.get("manifest") != self.manifest_hash:
            raise RetrievalServerError(
                f"the server's index changed during the run (manifest {self.manifest_hash} -> "
                f"{data.get('manifest')}); results would mix two indexes"
            )
        return [[_hit(h) for h in row] for row in data["result"]]

    def metrics(self) -> dict[str, Any]:
        return self._get("/metrics")

    def close(self) -> None:
        self._client.close()


def _hit(item: dict[str, Any]) -> Hit:
    doc = item["document"]
    return Hit(
        str(doc.get("passage", doc["id"])),
        doc["contents"],
        float(item["score"]),
        str(doc["id"]),
        str(doc.get("title", "")),
    )


class _ServerBusy(Exception):
    def __init__(self, response: Any) -> None:
        super().__init__(f"HTTP {response.status_code}")
        self.response = response


def _check(response: Any) -> Any:
    if response.status_code >= 500 or response.status_code == 429:
        raise _ServerBusy(response)
    return response
