"""A disk that fills mid-build (issue 29, item 6): store.json and manifest.json are never left
truncated; the build resumes once space returns."""

import errno
import json

import numpy as np
import pytest

import aworld_rl_rag_r1.index as index_module
from aworld_rl_rag_r1.corpus import passages
from aworld_rl_rag_r1.encoders import load_encoder
from aworld_rl_rag_r1.index import IndexConfig, build_index
from aworld_rl_rag_r1.retrievers import load_retriever

from .conftest import HASH


def _quiet(_):
    return None


def test_disk_full_before_store_json_then_resume(small_disk, world, tmp_path, monkeypatch):
    target = small_disk.path / "index"
    real_save = np.save

    def save_then_fill(file, arr, *args, **kwargs):
        real_save(file, arr, *args, **kwargs)
        if str(file).endswith("offsets.npy"):
            small_disk.fill()  # the next write is store.json

    monkeypatch.setattr(np, "save", save_then_fill)
    with pytest.raises(OSError) as caught:
        build_index(passages(world[0]), target, IndexConfig(), load_encoder(HASH), log=_quiet)
    assert caught.value.errno == errno.ENOSPC
    monkeypatch.setattr(np, "save", real_save)
    # main left a 0-byte store.json here, and every resume then failed with JSONDecodeError
    assert not (target / "passages" / "store.json").exists()
    small_disk.free()
    build_index(passages(world[0]), target, IndexConfig(), load_encoder(HASH), log=_quiet)
    build_index(passages(world[0]), tmp_path, IndexConfig(), load_encoder(HASH), log=_quiet)
    queries = [q["question"] for q in world[1]]
    resumed, one_shot = load_retriever(target), load_retriever(tmp_path)
    assert resumed.search(queries, 3) == one_shot.search(queries, 3)
    leftovers = [p.name for p in target.rglob("*") if ".tmp" in p.name]
    assert leftovers == []


def test_disk_full_before_manifest_keeps_the_old_one(small_disk, world, monkeypatch):
    target = small_disk.path / "index"
    build_index(passages(world[0]), target, IndexConfig(), load_encoder(HASH), log=_quiet)
    before = (target / "manifest.json").read_text()
    real_hash = index_module.manifest_hash

    def fill_then_hash(manifest):
        small_disk.fill()  # the next write is manifest.json
        return real_hash(manifest)

    monkeypatch.setattr(index_module, "manifest_hash", fill_then_hash)
    with pytest.raises(OSError) as caught:  # the same build run again: it rewrites the manifest
        build_index(passages(world[0]), target, IndexConfig(), load_encoder(HASH), log=_quiet)
    assert caught.value.errno == errno.ENOSPC
    assert (target / "manifest.json").read_text() == before  # main truncated it to 0 bytes
    assert json.loads(before)["count"] == len(load_retriever(target).store)
