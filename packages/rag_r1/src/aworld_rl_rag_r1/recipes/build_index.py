"""Recipe ``rag_r1.build-index``: corpus -> 100-word passages -> embeddings -> FAISS / BM25.

Prints the memory estimate first; encodes in shards with a progress bar; a killed build run
again with the same ``index_dir`` (or ``--resume``) keeps the finished shards.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from aworld_rl_core.config import option, to_dict
from aworld_rl_core.runs import Run, RunResult
from aworld_rl_rag_r1.encoders import EncoderConfig
from aworld_rl_rag_r1.index import IndexConfig
from aworld_rl_rag_r1.recipes.common import SYNTHETIC, CorpusConfig, WorldConfig


@dataclass(frozen=True, kw_only=True)
class BuildIndexConfig:
    """Build a retrieval index (the paper's: KILT, 100-word passages, BGE-large, flat IP)."""

    corpus: CorpusConfig = option(factory=CorpusConfig, help="the documents")
    encoder: EncoderConfig = option(factory=EncoderConfig, help="the passage encoder")
    index: IndexConfig = option(factory=IndexConfig, help="index type and parameters")
    index_dir: str = option(
        "",
        help="where the index goes (default: <run dir>/index; $AWORLD_RL_HOME/... is under "
        "aworld-rl's home); the same dir resumes; rag_r1.serve serves it as retriever.index",
    )
    world: WorldConfig = option(factory=WorldConfig, help="corpus.path=synthetic: its size")
    mode: Literal["build", "verify"] = option(
        "build",
        help="build (then verify a sample), or verify: check an index already in index_dir "
        "(checksums, content hash, recomputed vectors) without building",
    )
    verify_sample: int = option(
        32, help="vectors recomputed and compared after a build or in mode=verify (0: none)"
    )
    verify_tolerance: float = option(
        1e-4, help="a recomputed vector matches when its cosine with the stored one >= 1 - this"
    )
    verify_seed: int = option(0, help="seed of the verified sample")


def verify(cfg: BuildIndexConfig, directory: Path, encoder: Any, run: Run) -> dict[str, float]:
    """Recompute ``cfg.verify_sample`` vectors of the index in ``directory``; raise when any
    check fails (the message names the rows and what to do)."""
    from aworld_rl_rag_r1.index import verify_index

    report = verify_index(
        directory,
        encoder,
        sample=cfg.verify_sample,
        seed=cfg.verify_seed,
        tolerance=cfg.verify_tolerance,
    )
    print(report.summary())
    run.add_section("Verification", report.summary().replace("\n", "\n\n") + "\n")
    if not report.ok:
        raise RuntimeError(report.summary())
    return {
        "verified_vectors": float(len(report.checked_rows)),
        "verify_min_cosine": report.min_cosine,
    }


def check_corpus(path: str) -> Path:
    """The corpus file ``corpus.path`` names, checked to exist (a clear error, no traceback
    from deep inside the build, and before an encoder is downloaded or loaded)."""
    if not path:
        raise ValueError("corpus.path is required: a JSONL corpus file, or 'synthetic'")
    if path != SYNTHETIC and not Path(path).is_file():
        raise FileNotFoundError(
            f"corpus.path={path!r} does not exist: give a JSONL file of {{id, title, text}} "
            "documents (or {id, contents} passages), or 'synthetic'"
        )
    return Path(path)


def run(cfg: BuildIndexConfig, run: Run) -> RunResult:
    from aworld_rl_rag_r1 import synthetic
    from aworld_rl_rag_r1.corpus import passages, read_documents
    from aworld_rl_rag_r1.encoders import load_encoder
    from aworld_rl_rag_r1.index import build_index, memory_estimate
    from aworld_rl_rag_r1.retrieval import expand_home

    if cfg.mode == "verify":
        if not cfg.index_dir:
            raise ValueError("mode=verify needs index_dir: the index to verify")
        if cfg.index.type == "bm25":
            raise ValueError("mode=verify checks dense vectors; a BM25 index has none")
        directory = Path(expand_home(cfg.index_dir))
        metrics = verify(cfg, directory, load_encoder(cfg.encoder), run)
        return RunResult(metrics=metrics, outputs={"index": directory})
    corpus = check_corpus(cfg.corpus.path)  # before any model is loaded
    if cfg.corpus.path == SYNTHETIC:
        corpus, _ = synthetic.write(cfg.world.synthetic, run.dir / "synthetic")
    directory = Path(expand_home(cfg.index_dir)) if cfg.index_dir else run.dir / "index"
    documents = read_documents(corpus)
    if cfg.corpus.limit is not None:
        documents = itertools.islice(documents, cfg.corpus.limit)
    encoder = load_encoder(cfg.encoder) if cfg.index.type != "bm25" else None
    spec = {
        "corpus": str(corpus.resolve()),
        "corpus_bytes": corpus.stat().st_size if corpus.is_file() else 0,
        "words_per_passage": cfg.corpus.words_per_passage,
        "limit": cfg.corpus.limit,
        "encoder": to_dict(cfg.encoder) if encoder is not None else None,
    }
    estimates: list[str] = []

    def log(line: str) -> None:
        estimates.append(line)
        print(line)

    report = build_index(
        passages(documents, cfg.corpus.words_per_passage, source=str(corpus)),
        directory,
        cfg.index,
        encoder,
        spec=spec,
        progress=lambda items, total, desc: run.progress(items, total=total, desc=desc),
        log=log,
    )
    manifest = report.manifest or {}
    per_vector = report.index_bytes / report.count if report.count else 0.0
    run.add_section(
        "Index",
        f"- directory: `{directory}`\n- passages: {report.count:,}\n- dimension: {report.dim}\n"
        f"- type: {manifest.get('index', {}).get('type')}\n- manifest hash: "
        f"`{manifest.get('hash')}`\n- shards encoded / reused: {report.shards_encoded} / "
        f"{report.shards_reused}\n- index bytes per passage: {per_vector:,.1f}\n\n"
        + "\n".join(estimates)
        + "\n\nAt 21M passages: "
        + (memory_estimate(cfg.index, 21_015_324, report.dim) if report.dim else "BM25")
        + "\n",
    )
    metrics = {
        "passages": float(report.count),
        "dim": float(report.dim),
        "shards_encoded": float(report.shards_encoded),
        "shards_reused": float(report.shards_reused),
        "encode_s": report.encode_s,
        "index_s": report.index_s,
        "index_bytes_per_passage": per_vector,
    }
    if encoder is not None and cfg.verify_sample > 0:
        metrics.update(verify(cfg, directory, encoder, run))
    return RunResult(metrics=metrics, outputs={"index": directory})
