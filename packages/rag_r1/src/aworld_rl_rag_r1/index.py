"""Building and loading retrieval indexes: FAISS flat / HNSW / IVF-PQ, and BM25 (bm25s).

A build writes into one directory, in steps that each leave a finished file behind, so a
killed build resumes where it stopped:

1. ``passages/``: the passage store (chunked corpus, corpus hash);
2. ``embeddings/shard-NNNNN.npy``: passage embeddings, one file per shard (written atomically),
   each with a ``.sha256`` checksum written after it; a shard is reused only when its checksum
   matches (and ``build.json`` records the shard size and dtype, so another layout is refused);
3. ``index.faiss`` (or ``bm25/``): the index, trained on a sample (IVF-PQ) and filled shard by
   shard from memory-mapped embeddings;
4. ``manifest.json``: encoder identity, dimension, corpus hash, index type and parameters,
   count, and the embeddings' content hash, dtype and shape; its hash travels with every
   server response.

``build.json`` also records the encoder's revision (the model files' content hash, or the hub
snapshot's commit), so a resume with other weights under the same name is refused.
:func:`verify_index` re-checks a finished index: every shard against its checksum, the
embeddings against the manifest's content hash, and a seeded sample of vectors recomputed from
their passages with the encoder and compared (``rag_r1.build-index mode=verify``).

A lock file (``.build.lock``, an ``flock`` the kernel drops when the build dies) refuses a
second build into the same directory while one runs.

faiss and bm25s are imported inside the functions that use them.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from aworld_rl_core.atomic import atomic_path, write_atomic
from aworld_rl_core.config import option
from aworld_rl_rag_r1.corpus import Passage, PassageStore, write_store
from aworld_rl_rag_r1.encoders import Encoder, check_identity, encoder_revision

MANIFEST = "manifest.json"
BUILD_SPEC = "build.json"
INDEX_FILE = "index.faiss"
BM25_DIR = "bm25"
PASSAGES_DIR = "passages"
EMBEDDINGS_DIR = "embeddings"
LOCK_FILE = ".build.lock"
EMBEDDING_DTYPE = "float32"
IndexType = Literal["flat", "hnsw", "ivfpq", "bm25"]
GB = 1e9


@dataclass(frozen=True, kw_only=True)
class IndexConfig:
    """The index type and its parameters."""

    type: IndexType = option(
        "flat", help="flat (exact inner product, the paper's), hnsw, ivfpq, or bm25 (lexical)"
    )
    shard_size: int = option(100_000, help="passages per embedding shard (the unit of resume)")
    hnsw_m: int = option(32, help="HNSW: neighbours per node")
    hnsw_ef_construction: int = option(40, help="HNSW: build-time search depth")
    hnsw_ef_search: int = option(64, help="HNSW: query-time search depth")
    ivf_nlist: int = option(0, help="IVF-PQ: inverted lists (0: about 4 x sqrt(N))")
    pq_m: int = option(64, help="IVF-PQ: sub-quantisers (must divide the dimension)")
    pq_nbits: int = option(8, help="IVF-PQ: bits per sub-quantiser code")
    ivf_nprobe: int = option(32, help="IVF-PQ: lists visited per query")
    train_size: int = option(0, help="IVF-PQ: training vectors (0: min(N, 256 x nlist))")
    bm25_k1: float = option(0.9, help="BM25 k1 (Pyserini's default)")
    bm25_b: float = option(0.4, help="BM25 b (Pyserini's default)")
    bm25_stopwords: str = option("en", help="bm25s stop-word list ('' for none)")
    gpu: Literal["auto", "on", "off"] = option(
        "auto", help="search on every visible GPU (faiss-gpu installed): auto when present"
    )
    gpu_fp16: bool = option(True, help="GPU: store vectors in fp16 (halves GPU memory)")
    gpu_shard: bool = option(True, help="GPU: split the index across GPUs (else replicate)")

    def nlist(self, n: int) -> int:
        return self.ivf_nlist or max(1, min(n // 39, int(4 * math.sqrt(max(n, 1)))))

    def factory(self, dim: int, n: int) -> str:
        if self.type == "flat":
            return "Flat"
        if self.type == "hnsw":
            return f"HNSW{self.hnsw_m}"
        if self.type == "ivfpq":
            if dim % self.pq_m:
                raise ValueError(f"index.pq_m={self.pq_m} must divide the dimension {dim}")
            return f"IVF{self.nlist(n)},PQ{self.pq_m}x{self.pq_nbits}"
        raise ValueError(f"index type {self.type!r} is not a FAISS index")


def bytes_per_vector(cfg: IndexConfig, dim: int) -> float:
    """Approximate index bytes per passage (FAISS's layouts; ids and upper HNSW levels)."""
    if cfg.type == "flat":
        return 4.0 * dim
    if cfg.type == "hnsw":
        return 4.0 * dim + 2 * cfg.hnsw_m * 4 * 1.05
    if cfg.type == "ivfpq":
        return cfg.pq_m * cfg.pq_nbits / 8 + 8
    raise ValueError("BM25 has no per-vector size")


def memory_estimate(cfg: IndexConfig, n: int, dim: int) -> str:
    """One paragraph: the index's memory at ``n`` passages and what to do when it is large."""
    if cfg.type == "bm25":
        return f"BM25 over {n:,} passages: a sparse matrix, memory-mapped at load."
    per = bytes_per_vector(cfg, dim)
    total = per * n
    text = (
        f"{cfg.type} index, {n:,} passages x {dim}-d: about {per:,.0f} bytes per vector, "
        f"{total / GB:,.1f} GB in RAM (embeddings on disk: {4 * dim * n / GB:,.1f} GB)."
    )
    if cfg.type != "ivfpq" and total > 32 * GB:
        text += (
            " That is large: index.type=ivfpq needs about "
            f"{bytes_per_vector(IndexConfig(type='ivfpq', pq_m=cfg.pq_m), dim) * n / GB:,.1f} "
            "GB (at some recall), or serve flat in fp16 sharded over GPUs "
            f"(index.gpu=on: {2 * dim * n / GB:,.1f} GB over all GPUs)."
        )
    return text


def manifest_hash(manifest: dict[str, Any]) -> str:
    """A short hash of what decides retrieval results (build time and paths left out)."""
    keys = ("encoder", "dim", "corpus_hash", "count", "index", "embeddings")
    # an index built before embeddings were hashed keeps its hash
    kept = {k: manifest.get(k) for k in keys if k != "embeddings" or manifest.get(k) is not None}
    canonical = json.dumps(kept, sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def read_manifest(directory: str | Path) -> dict[str, Any]:
    path = Path(directory) / MANIFEST
    if not path.is_file():
        raise FileNotFoundError(
            f"'{directory}' holds no index ({MANIFEST} missing): build one with "
            "`aworld-run rag_r1.build-index corpus.path=... index_dir=...` and point "
            "retriever.index at that index_dir (a killed build resumes when run again with the "
            "same index_dir)"
        )
    return json.loads(path.read_text(encoding="utf-8"))


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _checksum_path(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _atomic_save(path: Path, array: np.ndarray) -> None:
    """The shard (atomically), then its checksum: a shard without one is never reused."""
    _checksum_path(path).unlink(missing_ok=True)
    with atomic_path(path, suffix=".npy") as tmp:
        np.save(tmp, array)
    write_atomic(_checksum_path(path), _file_sha256(path))


def shard_is_intact(path: Path, shape: tuple[int, int]) -> bool:
    """The shard has the expected shape and dtype and matches the checksum written with it."""
    check = _checksum_path(path)
    if not (path.is_file() and check.is_file()):
        return False
    try:
        array = np.load(path, mmap_mode="r")
    except (OSError, ValueError):
        return False
    if array.shape != shape or array.dtype != np.dtype(EMBEDDING_DTYPE):
        return False
    return check.read_text(encoding="utf-8").strip() == _file_sha256(path)


def embeddings_digest(shard_paths: list[Path]) -> dict[str, Any]:
    """The embeddings' content hash (over the vectors in order, whatever the sharding), dtype
    and shape: what the manifest hash covers."""
    digest, rows, dim = hashlib.sha256(), 0, 0
    for path in shard_paths:
        vectors = np.load(path, mmap_mode="r")
        digest.update(np.ascontiguousarray(vectors, dtype=EMBEDDING_DTYPE).tobytes())
        rows += len(vectors)
        dim = vectors.shape[1] if vectors.ndim == 2 else dim
    return {"sha256": digest.hexdigest(), "dtype": EMBEDDING_DTYPE, "shape": [rows, dim]}


@contextlib.contextmanager
def build_lock(directory: Path) -> Iterator[None]:
    """Hold ``directory/.build.lock`` (flock) for the build; a second build is refused."""
    import fcntl

    handle = (directory / LOCK_FILE).open("a+")
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise RuntimeError(
                f"another build is running in '{directory}' ({holder} holds {LOCK_FILE}): wait "
                "for it to finish, or build into another index_dir"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}")
        handle.flush()
        yield
    finally:
        handle.close()


Progress = Callable[[Iterable[int], int, str], Iterable[int]]


def _plain(items: Iterable[int], total: int, desc: str) -> Iterable[int]:
    return items


@dataclass
class BuildReport:
    """What a build did: shards encoded now vs found on disk, timings, sizes."""

    directory: Path
    count: int
    dim: int
    shards_encoded: int = 0
    shards_reused: int = 0
    encode_s: float = 0.0
    index_s: float = 0.0
    index_bytes: int = 0
    manifest: dict[str, Any] | None = None


def check_spec(directory: Path, spec: dict[str, Any]) -> None:
    """Record the build's inputs on first use; refuse to resume a build of other inputs."""
    path = directory / BUILD_SPEC
    canonical = json.loads(json.dumps(spec, sort_keys=True, default=str))
    if path.is_file():
        saved = json.loads(path.read_text(encoding="utf-8"))
        if saved != canonical:
            changed = sorted(k for k in {*saved, *canonical} if saved.get(k) != canonical.get(k))
            raise ValueError(
                f"'{directory}' holds a build with other inputs (changed: {', '.join(changed)}); "
                "give a new output directory or delete this one"
            )
        return
    write_atomic(path, json.dumps(canonical, indent=2, sort_keys=True))


def build_store(passages: Iterable[Passage], directory: Path) -> PassageStore:
    """Step 1 (skipped when a finished store is there)."""
    target = directory / PASSAGES_DIR
    if (target / "store.json").is_file():
        return PassageStore(target)
    return write_store(passages, target)


def encode_shards(
    store: PassageStore,
    encoder: Encoder,
    directory: Path,
    shard_size: int,
    progress: Progress = _plain,
    on_shard: Callable[[int], None] | None = None,
) -> tuple[list[Path], int, float]:
    """Step 2: one embedding file per shard; shards already on disk are kept."""
    if shard_size < 1:
        raise ValueError(f"index.shard_size must be >= 1, got {shard_size}")
    folder = directory / EMBEDDINGS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    n = len(store)
    shards = max(1, math.ceil(n / shard_size))
    paths, encoded, seconds = [], 0, 0.0
    for shard in progress(range(shards), shards, "encoding passages (shards)"):
        path = folder / f"shard-{shard:05d}.npy"
        paths.append(path)
        start, end = shard * shard_size, min(n, (shard + 1) * shard_size)
        if shard_is_intact(path, (end - start, encoder.dim)):
            continue
        began = time.perf_counter()
        texts = list(store.iter_contents(start, end))
        vectors = encoder.encode_passages(texts) if texts else np.zeros((0, encoder.dim))
        _atomic_save(path, np.asarray(vectors, dtype=EMBEDDING_DTYPE))
        seconds += time.perf_counter() - began
        encoded += 1
        if on_shard is not None:
            on_shard(shard)
    return paths, encoded, seconds


def build_faiss(cfg: IndexConfig, shard_paths: list[Path], dim: int, n: int, seed: int = 0):
    """Step 3 (dense): train when the type needs it, then add the shards in order."""
    import faiss

    index = faiss.index_factory(dim, cfg.factory(dim, n), faiss.METRIC_INNER_PRODUCT)
    if cfg.type == "hnsw":
        index.hnsw.efConstruction = cfg.hnsw_ef_construction
    if not index.is_trained:
        size = min(n, cfg.train_size or 256 * cfg.nlist(n))
        rng = np.random.default_rng(seed)
        rows = np.sort(rng.choice(n, size=size, replace=False))
        sample = _gather(shard_paths, rows)
        need = max(cfg.nlist(n), 2**cfg.pq_nbits)
        if len(sample) < need:
            raise ValueError(
                f"IVF-PQ needs at least {need} training vectors (nlist={cfg.nlist(n)}, "
                f"2^pq_nbits={2**cfg.pq_nbits}), the corpus has {n}: lower index.ivf_nlist or "
                "index.pq_nbits, or use index.type=flat"
            )
        index.train(sample)
    for path in shard_paths:
        vectors = np.load(path, mmap_mode="r")
        if len(vectors):
            index.add(np.ascontiguousarray(vectors, dtype=np.float32))
    return index


def _gather(shard_paths: list[Path], rows: np.ndarray) -> np.ndarray:
    out, offset = [], 0
    for path in shard_paths:
        vectors = np.load(path, mmap_mode="r")
        local = rows[(rows >= offset) & (rows < offset + len(vectors))] - offset
        if len(local):
            out.append(np.asarray(vectors[local], dtype=np.float32))
        offset += len(vectors)
    return np.ascontiguousarray(np.concatenate(out)) if out else np.zeros((0, 0), np.float32)


def build_bm25(cfg: IndexConfig, store: PassageStore, directory: Path) -> None:
    """Step 3 (lexical): bm25s over the passage contents, saved for memory-mapped loading."""
    import bm25s

    tokens = bm25s.tokenize(
        list(store.iter_contents()), stopwords=cfg.bm25_stopwords or None, show_progress=False
    )
    model = bm25s.BM25(k1=cfg.bm25_k1, b=cfg.bm25_b)
    model.index(tokens, show_progress=False)
    final = directory / BM25_DIR
    tmp = directory / f".{BM25_DIR}.{os.getpid()}.tmp"
    model.save(str(tmp), show_progress=False)
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)


def build_index(
    passages: Iterable[Passage],
    directory: str | Path,
    cfg: IndexConfig,
    encoder: Encoder | None,
    *,
    spec: dict[str, Any] | None = None,
    progress: Progress = _plain,
    log: Callable[[str], None] = print,
    on_shard: Callable[[int], None] | None = None,
) -> BuildReport:
    """Build (or finish building) an index in ``directory``; see the module docstring.

    ``spec`` describes the inputs (corpus file, chunking, encoder); a directory holding a build
    of other inputs is refused instead of being silently mixed. Another index type over the
    same inputs reuses the embedding shards (FlashRAG's ``--save_embedding``).
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    with build_lock(directory):
        return _build(passages, directory, cfg, encoder, spec, progress, log, on_shard)


def _build(
    passages: Iterable[Passage],
    directory: Path,
    cfg: IndexConfig,
    encoder: Encoder | None,
    spec: dict[str, Any] | None,
    progress: Progress,
    log: Callable[[str], None],
    on_shard: Callable[[int], None] | None,
) -> BuildReport:
    # what shapes a shard is part of the spec: a resume with another layout is refused
    layout: dict[str, Any] = {
        "index.shard_size": cfg.shard_size,
        "embedding_dtype": EMBEDDING_DTYPE,
    }
    revision = encoder_revision(encoder) if cfg.type != "bm25" else None
    if revision is not None:  # the model files (or hub commit) the vectors come from
        layout["encoder_revision"] = revision
    check_spec(directory, {**(spec or {}), **layout})
    store = build_store(passages, directory)
    n = len(store)
    if n == 0:
        raise ValueError("the corpus holds no passage: check corpus.path")
    dense = cfg.type != "bm25"
    if dense and encoder is None:
        raise ValueError(f"index.type={cfg.type} needs an encoder")
    dim = encoder.dim if dense and encoder is not None else 0
    log(memory_estimate(cfg, n, dim))
    report = BuildReport(directory, n, dim)
    began = time.perf_counter()
    if dense:
        assert encoder is not None
        paths, report.shards_encoded, report.encode_s = encode_shards(
            store, encoder, directory, cfg.shard_size, progress, on_shard
        )
        report.shards_reused = len(paths) - report.shards_encoded
        began = time.perf_counter()
        embeddings = embeddings_digest(paths)
        index = build_faiss(cfg, paths, dim, n)
        import faiss

        with atomic_path(directory / INDEX_FILE) as tmp:
            faiss.write_index(index, str(tmp))
        report.index_bytes = (directory / INDEX_FILE).stat().st_size
    else:
        embeddings = None
        build_bm25(cfg, store, directory)
        report.index_bytes = sum(p.stat().st_size for p in (directory / BM25_DIR).iterdir())
    report.index_s = time.perf_counter() - began
    manifest = {
        "version": 1,
        "encoder": encoder.identity() if dense and encoder is not None else None,
        "dim": dim,
        "corpus_hash": store.corpus_hash,
        "count": n,
        "index": _params(cfg, n),
        "embeddings": embeddings,
        "shard_size": cfg.shard_size if dense else None,
        "encoder_revision": revision,
        "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    manifest["hash"] = manifest_hash(manifest)
    write_atomic(directory / MANIFEST, json.dumps(manifest, indent=2))
    store.close()
    report.manifest = manifest
    return report


def _params(cfg: IndexConfig, n: int) -> dict[str, Any]:
    if cfg.type == "flat":
        return {"type": "flat"}
    if cfg.type == "hnsw":
        return {"type": "hnsw", "m": cfg.hnsw_m, "ef_construction": cfg.hnsw_ef_construction}
    if cfg.type == "ivfpq":
        return {"type": "ivfpq", "nlist": cfg.nlist(n), "pq_m": cfg.pq_m, "nbits": cfg.pq_nbits}
    return {"type": "bm25", "k1": cfg.bm25_k1, "b": cfg.bm25_b, "stopwords": cfg.bm25_stopwords}


@dataclass
class VerifyReport:
    """What :func:`verify_index` found; ``ok`` when nothing is wrong."""

    directory: Path
    checked_rows: list[int]
    bad_shards: list[str]
    bad_rows: list[tuple[int, float]]  # (row, cosine between stored and recomputed vector)
    digest_ok: bool | None  # None: the manifest records no embeddings hash (older build)
    count_ok: bool
    min_cosine: float

    @property
    def ok(self) -> bool:
        return (
            not self.bad_shards and not self.bad_rows and self.digest_ok is not False
        ) and self.count_ok

    def summary(self) -> str:
        lines = [
            f"verified {len(self.checked_rows)} recomputed vectors in '{self.directory}': "
            f"lowest cosine {self.min_cosine:.6f}"
        ]
        if self.bad_shards:
            lines.append(f"shards failing their checksum: {', '.join(self.bad_shards)}")
        if self.digest_ok is False:
            lines.append("the embeddings do not match the manifest's content hash")
        if not self.count_ok:
            lines.append("the index holds another number of vectors than the manifest")
        if self.bad_rows:
            shown = ", ".join(f"row {r} (cosine {c:.4f})" for r, c in self.bad_rows[:10])
            lines.append(f"{len(self.bad_rows)} vector(s) differ from their passage: {shown}")
        if not self.ok:
            lines.append(
                "the index is corrupt: delete its embeddings/ and index files (or the whole "
                "index_dir) and build again"
            )
        return "\n".join(lines)


def verify_index(
    directory: str | Path,
    encoder: Encoder,
    *,
    sample: int = 32,
    seed: int = 0,
    tolerance: float = 1e-4,
) -> VerifyReport:
    """Check a finished dense index against its inputs (see the module docstring).

    ``sample`` rows (seeded; all rows when it is at least the count) are re-encoded from the
    passage store; a row whose stored vector has cosine below ``1 - tolerance`` with the
    recomputed one is reported.
    """
    directory = Path(directory)
    manifest = read_manifest(directory)
    if manifest.get("encoder") is None:
        raise ValueError(f"'{directory}' is a BM25 index: it has no vectors to verify")
    check_identity(manifest["encoder"], encoder)
    n = int(manifest["count"])
    folder = directory / EMBEDDINGS_DIR
    paths = sorted(folder.glob("shard-*.npy"))
    bad_shards = [p.name for p in paths if not _checksum_matches(p)]
    recorded = manifest.get("embeddings")
    digest_ok = None if recorded is None else embeddings_digest(paths) == recorded
    count_ok = _index_count(directory) in (None, n)
    stored = [np.load(p, mmap_mode="r") for p in paths]
    offsets = np.cumsum([0, *(len(a) for a in stored)])
    count_ok = count_ok and int(offsets[-1]) == n
    rng = np.random.default_rng(seed)
    rows = sorted(int(r) for r in rng.choice(n, size=min(max(sample, 0), n), replace=False))
    store = PassageStore(directory / PASSAGES_DIR)
    try:
        texts = [store[r].contents for r in rows]
    finally:
        store.close()
    bad_rows: list[tuple[int, float]] = []
    low = 1.0
    if rows:
        fresh = np.asarray(encoder.encode_passages(texts), dtype=np.float64)
        for row, vector in zip(rows, fresh, strict=True):
            shard = int(np.searchsorted(offsets, row, side="right")) - 1
            kept = np.asarray(stored[shard][row - offsets[shard]], dtype=np.float64)
            norms = float(np.linalg.norm(kept) * np.linalg.norm(vector))
            cosine = float(kept @ vector / norms) if norms else float(np.array_equal(kept, vector))
            low = min(low, cosine)
            if cosine < 1.0 - tolerance:
                bad_rows.append((row, cosine))
    return VerifyReport(directory, rows, bad_shards, bad_rows, digest_ok, count_ok, low)


def _checksum_matches(path: Path) -> bool:
    check = _checksum_path(path)
    return check.is_file() and check.read_text(encoding="utf-8").strip() == _file_sha256(path)


def _index_count(directory: Path) -> int | None:
    """Vectors in ``index.faiss`` (None when there is none to read)."""
    path = directory / INDEX_FILE
    if not path.is_file():
        return None
    import faiss

    return int(faiss.read_index(str(path), faiss.IO_FLAG_MMAP).ntotal)
