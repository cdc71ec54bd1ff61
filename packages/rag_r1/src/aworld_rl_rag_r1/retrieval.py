"""Which retriever a recipe or an environment talks to, as one config section.

``backend``: ``http`` (the retrieval server, the paper's setup), ``local`` (an index directory
loaded in this process), or a control: ``oracle`` (gold documents first, then the local index's
hits when ``index`` is set), ``random``, ``empty``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from aworld_rl_core.config import option
from aworld_rl_rag_r1.retrievers import Retriever

HOME_VAR = "$AWORLD_RL_HOME"


def expand_home(path: str) -> str:
    """``$AWORLD_RL_HOME/...`` -> under aworld-rl's home (``~/.cache/aworld-rl`` by default):
    presets name shared places without absolute paths."""
    if not path.startswith(HOME_VAR):
        return path
    from aworld_rl_core.runs import aworld_home

    return str(aworld_home()) + path[len(HOME_VAR) :]


@dataclass(frozen=True, kw_only=True)
class RetrieverConfig:
    """The retriever behind the search tool."""

    backend: Literal["http", "local", "oracle", "random", "empty"] = option(
        "http", help="http: the retrieval server; local: load `index` here; or a control"
    )
    url: str = option("http://127.0.0.1:8000/retrieve", help="backend=http: the server's URL")
    index: str = option("", help="index directory (backend local / oracle / random)")
    topk: int = option(3, help="passages per query (the paper: 3)")
    cache: bool = option(True, help="cache results by (query, topk, index manifest)")
    cache_size: int = option(200_000, help="cached queries kept (LRU)")
    timeout_s: float = option(120.0, help="backend=http: seconds per request")
    retries: int = option(3, help="backend=http: retries on connection errors and 5xx")
    device: str = option("auto", help="local: query encoder device (auto, cpu, cuda)")
    gpu: Literal["auto", "on", "off"] = option("auto", help="local: FAISS on GPUs")
    ef_search: int = option(64, help="local HNSW: query-time search depth")
    nprobe: int = option(32, help="local IVF-PQ: lists visited per query")
    seed: int = option(0, help="backend=random: seed")


def make_retriever(cfg: RetrieverConfig) -> Retriever:
    """Build the retriever ``cfg`` names (loads the index / connects to the server)."""
    from aworld_rl_rag_r1.retrievers import EmptyRetriever

    if cfg.topk < 1:
        raise ValueError(f"retriever.topk must be >= 1, got {cfg.topk}")
    if cfg.backend == "http":
        from aworld_rl_rag_r1.client import HttpRetriever

        return HttpRetriever(cfg.url, timeout_s=cfg.timeout_s, retries=cfg.retries)
    if cfg.backend == "empty":
        return EmptyRetriever()
    if not cfg.index:
        if cfg.backend == "oracle":
            raise ValueError("retriever.backend=oracle needs retriever.index (its passage store)")
        raise ValueError(f"retriever.backend={cfg.backend} needs retriever.index (a directory)")
    from pathlib import Path

    from aworld_rl_rag_r1.corpus import PassageStore

    cfg = replace(cfg, index=expand_home(cfg.index))
    from aworld_rl_rag_r1.index import PASSAGES_DIR, IndexConfig, read_manifest
    from aworld_rl_rag_r1.retrievers import (
        OracleRetriever,
        RandomRetriever,
        encoder_config_of,
        load_retriever,
    )

    if cfg.backend == "random":
        return RandomRetriever(PassageStore(Path(cfg.index) / PASSAGES_DIR), seed=cfg.seed)
    manifest = read_manifest(cfg.index)
    encoder = None
    if manifest.get("encoder"):
        encoder = replace(encoder_config_of(manifest["encoder"]), device=cfg.device)
    index = IndexConfig(gpu=cfg.gpu, hnsw_ef_search=cfg.ef_search, ivf_nprobe=cfg.nprobe)
    local = load_retriever(cfg.index, encoder=encoder, index=index)
    if cfg.backend == "oracle":
        return OracleRetriever(PassageStore(Path(cfg.index) / PASSAGES_DIR), local)
    return local
