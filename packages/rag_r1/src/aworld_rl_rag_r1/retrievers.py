"""Retrievers: one interface for the dense and BM25 indexes, the HTTP client and the controls.

``search(queries, topk, gold=None)`` answers a whole batch at once (one encoder call and one
index search for a dense index) and returns, per query, up to ``topk`` hits best first.
``gold`` (per query, the gold document ids) is read only by the oracle control. Every
retriever has a ``manifest_hash`` naming what it serves (cache keys and responses carry it).
"""

from __future__ import annotations

import random
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from aworld_rl_rag_r1.corpus import Passage, PassageStore
from aworld_rl_rag_r1.encoders import Encoder, EncoderConfig, check_identity, load_encoder
from aworld_rl_rag_r1.index import (
    BM25_DIR,
    INDEX_FILE,
    PASSAGES_DIR,
    IndexConfig,
    manifest_hash,
    read_manifest,
)


@dataclass(frozen=True)
class Hit:
    """One retrieved passage: ``id`` its row in the passage store, ``doc_id`` and ``title`` its
    source document's corpus id and title."""

    id: str
    contents: str
    score: float
    doc_id: str = ""
    title: str = ""


def hit(passage: Passage, score: float) -> Hit:
    return Hit(passage.id, passage.contents, score, passage.doc_id, passage.title)


@runtime_checkable
class Retriever(Protocol):
    manifest_hash: str

    def search(
        self, queries: Sequence[str], topk: int, gold: Sequence[Sequence[str]] | None = None
    ) -> list[list[Hit]]: ...


class IndexMismatch(ValueError):
    """An index directory whose files disagree with its manifest."""


def _hits(store: PassageStore, rows: np.ndarray, scores: np.ndarray) -> list[list[Hit]]:
    out = []
    for row_ids, row_scores in zip(rows, scores, strict=True):
        hits = []
        for row, score in zip(row_ids, row_scores, strict=True):
            if row < 0:  # FAISS pads with -1 when fewer than k vectors qualify
                continue
            hits.append(hit(store[int(row)], float(score)))
        out.append(hits)
    return out


class DenseRetriever:
    """FAISS index + query encoder + passage store (see ``load_retriever``)."""

    def __init__(self, index: Any, encoder: Encoder, store: PassageStore, manifest: dict) -> None:
        self.index, self.encoder, self.store = index, encoder, store
        self.manifest = manifest
        self.manifest_hash = manifest_hash(manifest)
        self._lock = threading.Lock()  # encoders are not re-entrant; batching happens above

    def search(
        self, queries: Sequence[str], topk: int, gold: Sequence[Sequence[str]] | None = None
    ) -> list[list[Hit]]:
        if not queries:
            return []
        with self._lock:
            vectors = self.encoder.encode_queries(list(queries))
            scores, rows = self.index.search(np.ascontiguousarray(vectors, np.float32), topk)
        return _hits(self.store, rows, scores)


class BM25Retriever:
    """bm25s index over the passage store, tokenised like the corpus was."""

    def __init__(self, model: Any, store: PassageStore, manifest: dict) -> None:
        self.model, self.store, self.manifest = model, store, manifest
        self.manifest_hash = manifest_hash(manifest)
        self.stopwords = manifest["index"].get("stopwords") or None

    def search(
        self, queries: Sequence[str], topk: int, gold: Sequence[Sequence[str]] | None = None
    ) -> list[list[Hit]]:
        import bm25s

        if not queries:
            return []
        k = min(topk, len(self.store))
        tokens = bm25s.tokenize(
            list(queries), stopwords=self.stopwords, show_progress=False, return_ids=False
        )
        vocab = self.model.vocab_dict
        known = [[t for t in q if t in vocab] for q in tokens]
        asked = [q for q in known if q]
        out: list[list[Hit]] = [[] for _ in queries]  # no known term: nothing matches
        if asked:
            rows, scores = self.model.retrieve(asked, k=k, show_progress=False, n_threads=1)
            found = iter(_hits(self.store, np.asarray(rows), np.asarray(scores)))
            for i, q in enumerate(known):
                if q:
                    out[i] = [h for h in next(found) if h.score > 0]
        return out


class EmptyRetriever:
    """Control: no passage for any query."""

    manifest_hash = "control-empty"

    def search(self, queries, topk, gold=None) -> list[list[Hit]]:
        return [[] for _ in queries]


class RandomRetriever:
    """Control: ``topk`` passages drawn uniformly (seeded; the same query gets the same draw)."""

    def __init__(self, store: PassageStore, seed: int = 0) -> None:
        self.store, self.seed = store, seed
        self.manifest_hash = f"control-random-{store.corpus_hash[:8]}-{seed}"

    def search(self, queries, topk, gold=None) -> list[list[Hit]]:
        out = []
        for query in queries:
            rng = random.Random(f"{self.seed}\0{query}")
            rows = rng.sample(range(len(self.store)), min(topk, len(self.store)))
            out.append([hit(self.store[r], 0.0) for r in rows])
        return out


class OracleRetriever:
    """Control: the gold documents' passages first, then the base retriever's hits."""

    def __init__(self, store: PassageStore, base: Retriever | None = None) -> None:
        self.store, self.base = store, base or EmptyRetriever()
        self.manifest_hash = f"control-oracle-{self.base.manifest_hash}"

    def search(self, queries, topk, gold=None) -> list[list[Hit]]:
        if gold is None or len(gold) != len(queries):
            raise ValueError("the oracle retriever needs the gold document ids of every query")
        found = self.base.search(queries, topk)
        out = []
        for ids, hits in zip(gold, found, strict=True):
            first = [hit(self.store[r], 1.0) for doc in ids for r in self.store.rows_of(doc)]
            seen = {h.id for h in first}
            out.append([*first, *(h for h in hits if h.id not in seen)][:topk])
        return out


def _to_gpu(index: Any, cfg: IndexConfig) -> Any:
    import faiss

    gpus = faiss.get_num_gpus() if hasattr(faiss, "get_num_gpus") else 0
    if cfg.gpu == "off" or (cfg.gpu == "auto" and gpus == 0):
        return index
    if gpus == 0:
        raise RuntimeError(
            "index.gpu=on but FAISS sees no GPU: install faiss-gpu (pip install faiss-gpu-cu12) "
            "on a CUDA machine, or set index.gpu=auto"
        )
    options = faiss.GpuMultipleClonerOptions()
    options.useFloat16, options.shard = cfg.gpu_fp16, cfg.gpu_shard
    return faiss.index_cpu_to_all_gpus(index, co=options)


def load_retriever(
    directory: str | Path,
    *,
    encoder: EncoderConfig | None = None,
    index: IndexConfig | None = None,
) -> Retriever:
    """A dense or BM25 retriever over a built index directory, checked against its manifest.

    The query encoder is the manifest's unless ``encoder`` says otherwise (a moved model
    directory, another device); it must have the same family, prefixes and dimension.
    """
    directory = Path(directory)
    manifest = read_manifest(directory)
    cfg = index or IndexConfig()
    store = PassageStore(directory / PASSAGES_DIR)
    if store.corpus_hash != manifest["corpus_hash"] or len(store) != manifest["count"]:
        raise IndexMismatch(
            f"'{directory}': the passage store does not match manifest.json (corpus hash or "
            "count differ); rebuild the index"
        )
    if manifest["index"]["type"] == "bm25":
        import bm25s

        model = bm25s.BM25.load(str(directory / BM25_DIR), mmap=True)
        return BM25Retriever(model, store, manifest)
    import faiss

    loaded = faiss.read_index(str(directory / INDEX_FILE))
    if loaded.ntotal != manifest["count"] or loaded.d != manifest["dim"]:
        raise IndexMismatch(
            f"'{directory}': {INDEX_FILE} holds {loaded.ntotal} vectors of dimension {loaded.d}, "
            f"the manifest says {manifest['count']} x {manifest['dim']}; rebuild the index"
        )
    kind = manifest["index"]["type"]
    if kind == "hnsw":
        loaded.hnsw.efSearch = cfg.hnsw_ef_search
    elif kind == "ivfpq":
        faiss.extract_index_ivf(loaded).nprobe = cfg.ivf_nprobe
    if kind in ("flat", "ivfpq"):  # HNSW has no GPU implementation
        loaded = _to_gpu(loaded, cfg)
    identity = manifest["encoder"]
    enc_cfg = encoder or encoder_config_of(identity)
    query_encoder = load_encoder(enc_cfg)
    check_identity(identity, query_encoder)
    return DenseRetriever(loaded, query_encoder, store, manifest)


def encoder_config_of(identity: dict[str, Any]) -> EncoderConfig:
    """The encoder config that reproduces a manifest's encoder identity."""
    if identity["family"] == "hash":
        return EncoderConfig(name_or_path="hash", hash_dim=identity["dim"])
    return EncoderConfig(
        name_or_path=identity["name"],
        kind=identity["family"],
        query_instruction=identity["query_prefix"],
        passage_prefix=identity["passage_prefix"],
        max_length=identity["max_length"],
        normalize=identity["normalize"],
    )
