"""The retrieval app on Ray Serve: ``server.replicas`` copies behind one HTTP endpoint.

Each replica loads the index itself (``build_app`` runs on the replica), so nothing large is
pickled; Ray Serve's proxy spreads requests over the replicas and each replica micro-batches
its own share. Ray is imported only here.
"""

from __future__ import annotations

from typing import Any

from aworld_rl_rag_r1.server import ServerConfig, create_app, set_threads, use_allocator


def build_app(retriever_spec: dict[str, Any], cfg: ServerConfig) -> Any:
    """Runs on each replica: load the retriever from its spec and build the FastAPI app."""
    from aworld_rl_core.config import from_dict
    from aworld_rl_rag_r1.retrieval import RetrieverConfig, make_retriever

    set_threads(cfg.threads)
    use_allocator(cfg)
    return create_app(make_retriever(from_dict(RetrieverConfig, retriever_spec)), cfg)


def serve_ray(retriever_spec: dict[str, Any], cfg: ServerConfig, *, name: str = "rag_r1") -> str:
    """Start ``cfg.replicas`` replicas on the local (or connected) Ray cluster; returns the URL."""
    try:
        import ray
        from ray import serve
    except ModuleNotFoundError:
        raise RuntimeError(
            "server.replicas > 1 runs on Ray Serve: pip install 'aworld-rl-rag-r1[ray]'"
        ) from None
    if not ray.is_initialized():
        ray.init(include_dashboard=False, log_to_driver=False)

    def builder() -> Any:  # a plain function: Ray Serve calls it on each replica
        return build_app(retriever_spec, cfg)

    deployment = serve.deployment(
        serve.ingress(builder)(type("RetrievalReplica", (), {})),
        name="retrieval",
        num_replicas=cfg.replicas,
        ray_actor_options={"num_cpus": 0},
    )
    serve.start(http_options={"host": cfg.host, "port": cfg.port})
    serve.run(deployment.bind(), name=name, route_prefix="/")
    return f"http://{cfg.host}:{cfg.port}"


def shutdown() -> None:
    from ray import serve

    serve.shutdown()
