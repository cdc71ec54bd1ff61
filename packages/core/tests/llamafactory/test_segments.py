"""Segment masks on hand-built label rows (no LLaMA-Factory needed)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from aworld_rl_core.backends.llamafactory.segments import segment_masks, think_mask  # noqa: E402

X = -100  # ignored label
OPEN, C = 7, 8  # <think>, </think> as single tokens


def test_single_token_tags_mark_think_inclusive_and_call_the_rest():
    labels = torch.tensor(
        [
            [X, X, OPEN, 1, 2, C, 3, 4, X],
            [X, 5, 6, X, OPEN, 1, C, X, X],
        ]
    )
    seg = segment_masks(labels, [OPEN], [C])
    assert seg["think"].int().tolist() == [
        [0, 0, 1, 1, 1, 1, 0, 0, 0],
        [0, 0, 0, 0, 1, 1, 1, 0, 0],
    ]
    assert seg["call"].int().tolist() == [
        [0, 0, 0, 0, 0, 0, 1, 1, 0],
        [0, 1, 1, 0, 0, 0, 0, 0, 0],
    ]


def test_multi_token_tags_two_blocks_and_unclosed_block():
    # tags spelled with two tokens each: <think> = (7, 9), </think> = (8, 9)
    labels = torch.tensor([[1, 7, 9, 2, 8, 9, 3, 7, 9, 4, 8, 9, 5, 7, 9, 6]])
    mask = think_mask(labels, [7, 9], [8, 9])
    assert mask.int().tolist() == [[0, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 0, 1, 1, 1]]


def test_ignored_positions_are_never_marked_and_segments_partition_labels():
    labels = torch.tensor([[OPEN, X, 1, C, X, 2]])
    seg = segment_masks(labels, [OPEN], [C])
    assert seg["think"].int().tolist() == [[1, 0, 1, 1, 0, 0]]
    assert not (seg["think"] & seg["call"]).any()
    assert ((seg["think"] | seg["call"]) == (labels != X)).all()


def test_bad_shapes_and_tags_are_refused():
    with pytest.raises(ValueError, match="batch, length"):
        think_mask(torch.tensor([1, 2]), [OPEN], [C])
    with pytest.raises(ValueError, match="at least one token id"):
        think_mask(torch.tensor([[1, 2]]), [], [C])
