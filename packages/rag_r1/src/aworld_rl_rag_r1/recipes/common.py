"""Config pieces the RAG-R1 recipes share, and the synthetic world behind the tiny presets.

A recipe whose ``retriever.index`` (or question file) is ``synthetic`` gets the synthetic
multi-hop world: its corpus, questions and an index built with ``synthetic_encoder``, cached
under ``$AWORLD_RL_HOME/indexes/`` by the hash of their settings (built once, shared by runs).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from aworld_rl_core.config import limit_option, option, to_dict
from aworld_rl_rag_r1.encoders import MINILM, EncoderConfig
from aworld_rl_rag_r1.index import IndexConfig
from aworld_rl_rag_r1.synthetic import SyntheticConfig

SYNTHETIC = "synthetic"


@dataclass(frozen=True, kw_only=True)
class CorpusConfig:
    """The documents to index."""

    path: str = option(
        "",
        help="JSONL of documents {id, title, text} (KILT's knowledge source works) or of "
        "passages {id, contents}; 'synthetic' = the synthetic multi-hop world",
    )
    words_per_passage: int = option(100, help="passage length in words (the paper: 100)")
    limit: int | None = limit_option("index only the first N documents")


@dataclass(frozen=True, kw_only=True)
class WorldConfig:
    """The synthetic world used where a path says 'synthetic'."""

    synthetic: SyntheticConfig = option(factory=SyntheticConfig, help="its size and seed")
    encoder: EncoderConfig = option(
        factory=lambda: EncoderConfig(name_or_path=MINILM, batch_size=64),
        help="the encoder its index is built with",
    )
    index: Literal["flat", "bm25"] = option("flat", help="its index type")


@dataclass(frozen=True)
class World:
    directory: Path
    corpus: Path
    questions: Path
    index: Path


def synthetic_world(cfg: WorldConfig, log: Any = print) -> World:
    """Build (once) and return the synthetic world's files and index."""
    from aworld_rl_core.runs import aworld_home
    from aworld_rl_rag_r1 import synthetic
    from aworld_rl_rag_r1.corpus import passages, read_documents
    from aworld_rl_rag_r1.encoders import load_encoder
    from aworld_rl_rag_r1.index import MANIFEST, build_index

    key = hashlib.sha256(json.dumps(to_dict(cfg), sort_keys=True).encode()).hexdigest()[:12]
    directory = aworld_home() / "indexes" / f"synthetic-{key}"
    corpus, questions = directory / "corpus.jsonl", directory / "questions.jsonl"
    index = directory / "index"
    if not (index / MANIFEST).is_file():
        synthetic.write(cfg.synthetic, directory)
        encoder = load_encoder(cfg.encoder) if cfg.index != "bm25" else None
        build_index(
            passages(read_documents(corpus)),
            index,
            IndexConfig(type=cfg.index),
            encoder,
            spec={"corpus": str(corpus), "encoder": to_dict(cfg.encoder)},
            log=log,
        )
    return World(directory, corpus, questions, index)


def with_synthetic_index(retriever: Any, world: WorldConfig, log: Any = print) -> Any:
    """``retriever`` with ``index: synthetic`` replaced by the synthetic world's index."""
    if retriever.index != SYNTHETIC:
        return retriever
    return replace(retriever, index=str(synthetic_world(world, log).index))
