"""Recipe ``rag_r1.serve``: the retrieval server over a built index (or a control).

One process (uvicorn) by default; ``server.replicas > 1`` runs the same app on Ray Serve.
Serves until interrupted (Ctrl-C stops it cleanly and writes the report), or for
``stop_after_s`` seconds; ``self_check`` asks ``/health`` and one ``/retrieve`` once it is up
and records the answer in the report. ``retriever.index`` is an index directory written by
``rag_r1.build-index`` (its ``index_dir``); the ``tiny-cpu`` presets of both share one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from aworld_rl_core.config import option, to_dict
from aworld_rl_core.runs import Run, RunResult
from aworld_rl_rag_r1.recipes.common import WorldConfig, with_synthetic_index
from aworld_rl_rag_r1.retrieval import RetrieverConfig
from aworld_rl_rag_r1.server import ServerConfig


@dataclass(frozen=True, kw_only=True)
class ServeConfig:
    """Serve an index over HTTP with Search-R1's /retrieve contract."""

    retriever: RetrieverConfig = option(
        factory=lambda: RetrieverConfig(backend="local"),
        help="what is served: backend local (an index_dir written by rag_r1.build-index; "
        "'synthetic' builds the demo world), oracle, random or empty",
    )
    server: ServerConfig = option(factory=ServerConfig, help="address, limits, batching")
    world: WorldConfig = option(factory=WorldConfig, help="retriever.index=synthetic: its size")
    stop_after_s: float = option(0.0, help="stop after this many seconds (0: until Ctrl-C)")
    self_check: bool = option(True, help="query /health and /retrieve once the server is up")
    check_query: str = option("Who founded the company?", help="the self-check's query")


def _self_check(base: str, query: str, topk: int) -> dict:
    import httpx

    began = time.perf_counter()
    health = httpx.get(base + "/health", timeout=30).json()
    answer = httpx.post(
        base + "/retrieve",
        json={"queries": [query], "topk": topk, "return_scores": True},
        timeout=60,
    )
    answer.raise_for_status()
    hits = answer.json()["result"][0]
    return {
        "manifest": health["manifest"],
        "hits": len(hits),
        "top": hits[0]["document"]["contents"][:120] if hits else "",
        "seconds": time.perf_counter() - began,
    }


def check_index(retriever: RetrieverConfig) -> None:
    """A clear error, before anything loads, when ``retriever.index`` holds no built index."""
    from pathlib import Path

    from aworld_rl_rag_r1.index import MANIFEST
    from aworld_rl_rag_r1.retrieval import expand_home

    if retriever.backend not in ("local", "oracle", "random") or not retriever.index:
        return
    if not (Path(expand_home(retriever.index)) / MANIFEST).is_file():
        raise FileNotFoundError(
            f"retriever.index={retriever.index!r} holds no index ({MANIFEST} missing): build "
            f"it with `aworld-run rag_r1.build-index ... index_dir={retriever.index}` (the "
            "tiny-cpu presets of build-index and serve share one), or set retriever.index"
        )


def wait(stop_after_s: float) -> None:
    """Until Ctrl-C, or for ``stop_after_s`` seconds when it is set."""
    began = time.monotonic()
    try:
        while not stop_after_s or time.monotonic() - began < stop_after_s:
            time.sleep(0.2)
    except KeyboardInterrupt:
        print("stopping the retrieval server")


def run(cfg: ServeConfig, run: Run) -> RunResult:
    from aworld_rl_rag_r1.retrieval import make_retriever
    from aworld_rl_rag_r1.server import set_threads, use_allocator

    if cfg.retriever.backend == "http":
        raise ValueError("rag_r1.serve serves an index: set retriever.backend=local (or a control)")
    retriever_cfg = with_synthetic_index(cfg.retriever, cfg.world)
    check_index(retriever_cfg)
    set_threads(cfg.server.threads)
    use_allocator(cfg.server)  # a long-lived server hands bursts' memory back (allocator=release)
    ray = cfg.server.replicas > 1
    if ray:
        from aworld_rl_rag_r1.serve_ray import serve_ray, shutdown

        base = serve_ray(to_dict(retriever_cfg), cfg.server)
        server = None
    else:
        from aworld_rl_rag_r1.server import serve

        server = serve(make_retriever(retriever_cfg), cfg.server)
        base = f"http://{cfg.server.host}:{server.bound_port}"
    print(f"retrieval server: {base}/retrieve ({cfg.server.replicas} replica(s)); Ctrl-C stops it")
    metrics: dict[str, float] = {}
    try:
        if cfg.self_check:
            check = _self_check(base, cfg.check_query, cfg.retriever.topk)
            metrics.update(
                {"self_check_hits": float(check["hits"]), "self_check_s": check["seconds"]}
            )
            run.add_section(
                "Self-check",
                f"- URL: {base}/retrieve\n- manifest: `{check['manifest']}`\n"
                f"- '{cfg.check_query}' -> {check['hits']} hits; top: {check['top']}\n",
            )
        wait(cfg.stop_after_s)
        import httpx

        served = httpx.get(base + "/metrics", timeout=30).json()
        metrics.update({"requests": float(served["requests"]), "queries": float(served["queries"])})
    finally:
        if server is not None:
            server.should_exit = True
            server.thread.join(30)
        if ray:
            shutdown()
    return RunResult(metrics=metrics, outputs={})
