"""JsonlSink: skip done keys, survive torn tails, refuse corrupt files and second writers."""

from __future__ import annotations

import json
import os

import pytest

from aworld_rl_core.llm import JsonlSink


def lines(path):
    return path.read_bytes().decode().splitlines()


def test_write_skips_done_keys_and_reopens(tmp_path):
    path = tmp_path / "out" / "results.jsonl"
    with JsonlSink(path) as sink:
        assert sink.write({"id": 1, "text": "a"}) is True
        assert sink.write({"id": "2", "text": "b"}) is True
        assert sink.write({"id": 1, "text": "again"}) is False
        assert 1 in sink and "1" in sink and 3 not in sink
    assert lines(path) == ['{"id": 1, "text": "a"}', '{"id": "2", "text": "b"}']
    with JsonlSink(path) as sink:
        assert sink.done_keys == {"1", "2"}
        assert sink.repaired_bytes == 0
        assert sink.write({"id": 2, "text": "dup"}) is False
        sink.write({"id": 3, "text": "c"})
        assert [r["text"] for r in sink.records()] == ["a", "b", "c"]


def test_torn_last_line_is_cut(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_bytes(b'{"id": 1}\n{"id": 2}\n{"id": 3, "te')
    with JsonlSink(path) as sink:
        assert sink.done_keys == {"1", "2"}
        assert sink.repaired_bytes == len(b'{"id": 3, "te')
        sink.write({"id": 3, "text": "whole"})
    assert [json.loads(x)["id"] for x in lines(path)] == [1, 2, 3]


def test_torn_last_line_ending_in_newline_is_cut(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_bytes(b'{"id": 1}\n{"id": 2, "x\n')
    with JsonlSink(path) as sink:
        assert sink.done_keys == {"1"}
    assert lines(path) == ['{"id": 1}']


def test_corrupt_middle_line_is_an_error(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_bytes(b'{"id": 1}\nnot json\n{"id": 3}\n')
    with pytest.raises(ValueError, match=r"r.jsonl:2 is not valid JSON and is not the last line"):
        JsonlSink(path)


def test_second_writer_is_refused(tmp_path):
    path = tmp_path / "r.jsonl"
    with JsonlSink(path), pytest.raises(RuntimeError, match="open for writing by another"):
        JsonlSink(path)
    JsonlSink(path).close()  # free again once the first is closed


def test_callable_key_and_missing_key(tmp_path):
    with JsonlSink(tmp_path / "a.jsonl", key=lambda r: (r["task"], r["turn"])) as sink:
        assert sink.write({"task": "t1", "turn": 0})
        assert sink.write({"task": "t1", "turn": 1})
        assert not sink.write({"task": "t1", "turn": 0, "extra": True})
    with (
        JsonlSink(tmp_path / "b.jsonl", key="uid") as sink,
        pytest.raises(KeyError, match="record has no key field 'uid'"),
    ):
        sink.write({"id": 1})
    with pytest.raises(ValueError, match="fsync must be"):
        JsonlSink(tmp_path / "c.jsonl", fsync="sometimes")


@pytest.mark.parametrize("policy", ["always", "close", "never"])
def test_fsync_policies_write_the_same_bytes(tmp_path, policy):
    path = tmp_path / f"{policy}.jsonl"
    with JsonlSink(path, fsync=policy) as sink:
        sink.write({"id": "k", "v": [1, 2]})
    assert lines(path) == ['{"id": "k", "v": [1, 2]}']


def test_concurrent_writers_share_fsyncs(tmp_path, monkeypatch):
    import threading
    import time

    from aworld_rl_core.llm import jsonl_sink

    synced_sizes = []

    def slow_fsync(fd):
        time.sleep(0.05)  # a slow disk: writers pile up behind the first sync
        synced_sizes.append(os.fstat(fd).st_size)

    monkeypatch.setattr(jsonl_sink.os, "fsync", slow_fsync)
    path = tmp_path / "r.jsonl"
    with JsonlSink(path, fsync="always") as sink:
        returned_after = {}

        def write(i):
            sink.write({"id": i})
            returned_after[i] = synced_sizes[-1]  # the file size on disk when write returned

        threads = [threading.Thread(target=write, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        data = path.read_bytes()
    assert sorted(json.loads(x)["id"] for x in data.splitlines()) == list(range(8))
    assert len(synced_sizes) <= 5  # grouped: 8 writes, at most 4 syncs, plus close's own
    for i, size in returned_after.items():  # each write returned after a sync covering it
        assert data.index(f'{{"id": {i}}}\n'.encode()) + len(f'{{"id": {i}}}\n') <= size
