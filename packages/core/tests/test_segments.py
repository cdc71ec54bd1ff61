"""The one segment marker, with tokenizers where ``</think>`` merges with its neighbours.

Three tokenizer styles: byte-level BPEs trained offline with Qwen2.5's and Llama-3's
pre-tokenizer patterns (``</think>\\n\\n`` ends in the token ``>\\n\\n``, so the tag's own token
ids never occur in context), and Qwen3's real tokenizer (``<think>`` is one added token). Both
SFT paths must find the reasoning tokens: hf-sft's samples (from the rendered text) and
LLaMA-Factory's (``label_segments``, from the label ids its collator gives).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from pretokenizers import LLAMA3_PATTERN, QWEN25_PATTERN, pretokenized_bpe  # noqa: E402

from aworld_rl_core.backends.sft_data import build_samples  # noqa: E402
from aworld_rl_core.models import chat_template, tiny_tokenizer  # noqa: E402
from aworld_rl_core.segments import (  # noqa: E402
    IGNORE_INDEX,
    SegmentError,
    label_segments,
    require_marked,
    shift_segments,
    tag_spans,
    text_masks,
)

REASONING = "<think>\nTwo cities.\n</think>"
ANSWER = "\n\n[get_weather(city='Rome'), get_weather(city='Oslo')]"
ROW = {
    "messages": [
        {"role": "user", "content": "Weather in Rome and Oslo?"},
        {"role": "assistant", "content": REASONING + ANSWER},
    ]
}


@pytest.fixture(scope="module", params=["qwen2.5", "llama3", "qwen3"])
def tok(request):
    if request.param == "qwen3":
        return tiny_tokenizer()
    pattern = QWEN25_PATTERN if request.param == "qwen2.5" else LLAMA3_PATTERN
    return pretokenized_bpe(pattern, chat_template())


def pieces(tok, ids):
    return [tok.decode([i]) for i in ids]


def expected_think(tok, ids):
    """By hand: the tokens whose text overlaps the reasoning block of the answer."""
    out, at = [], 0
    text = tok.decode(ids)
    start = text.index("<think>")
    end = text.index("</think>") + len("</think>")
    for piece in pieces(tok, ids):
        out.append(int(at < end and at + len(piece) > start))
        at += len(piece)
    return out


def test_the_closing_tag_merges_in_the_bpe_styles(tok):
    ids = tok.encode(REASONING + ANSWER, add_special_tokens=False)
    close = tok.encode("</think>", add_special_tokens=False)
    found = any(ids[i : i + len(close)] == close for i in range(len(ids)))
    if len(close) > 1:  # BPE styles: the tag's ids are not in the text's ids ('>\n\n' merged)
        assert not found and ">\n\n" in pieces(tok, ids)
    else:  # Qwen3: an added token, found as is
        assert found


def test_hf_sft_samples_mark_the_reasoning_tokens(tok):
    (sample,), _ = build_samples([ROW], tok, max_length=512, per_turn=True)
    supervised = [i for i, label in enumerate(sample.labels) if label != IGNORE_INDEX]
    answer = sample.input_ids[supervised[0] : supervised[-1] + 1]
    think = [sample.segments["think"][i] for i in supervised]
    assert think == expected_think(tok, answer)
    assert sum(think) >= 4 and think[-1] == 0  # the call list is not reasoning


def test_llamafactory_label_segments_mark_the_reasoning_tokens(tok):
    answer = tok.encode(REASONING + ANSWER, add_special_tokens=False)
    prompt = tok.encode("<|im_start|>user\nWeather?<|im_end|>\n", add_special_tokens=False)
    labels = torch.tensor([[IGNORE_INDEX] * len(prompt) + answer])
    masks = label_segments(tok, labels)
    think = masks["think"][0, len(prompt) :].int().tolist()
    assert think == expected_think(tok, answer)
    assert masks["call"][0, len(prompt) :].int().tolist() == [1 - t for t in think]
    assert not masks["think"][0, : len(prompt)].any() and not masks["call"][0, : len(prompt)].any()


def test_custom_segments_unclosed_blocks_and_shifting():
    text = "<plan>a</plan> b <plan>open"
    assert tag_spans(text, "<plan>", "</plan>") == [(0, 14), (17, 27)]
    offsets = [(0, 6), (6, 7), (7, 14), (14, 17), (17, 23), (23, 27)]
    assert text_masks(text, offsets, {"plan": ("<plan>", "</plan>")}) == {
        "plan": [1, 1, 1, 0, 1, 1]
    }
    labels = torch.tensor([[IGNORE_INDEX, 5, 6, 7]])
    logits = torch.zeros(1, 4, 9)
    _, shifted, seg = shift_segments(logits, labels, {"plan": torch.tensor([[0, 1, 0, 1]])})
    assert shifted.tolist() == [[5, 6, 7]]
    assert seg["plan"].tolist() == [[True, False, True]]
    assert seg["call"].tolist() == [[False, True, False]]


def test_reasoning_text_without_reasoning_tokens_raises():
    require_marked("no tags here", {"think": [0, 0]})
    with pytest.raises(SegmentError, match=r"1 <think>...</think> span\(s\) but no 'think' token"):
        require_marked("<think>x</think> y", {"think": [0, 0, 0]})

    class BrokenOffsets:  # a tokenizer whose offsets miss the text (test double)
        def decode(self, ids, skip_special_tokens=False):
            return "<think>x</think> y"

        def __call__(self, text, add_special_tokens=False, return_offsets_mapping=True):
            return {"input_ids": [1, 2, 3], "offset_mapping": [(0, 0), (0, 0), (0, 0)]}

    with pytest.raises(SegmentError, match="no 'think' token was marked"):
        label_segments(BrokenOffsets(), torch.tensor([[1, 2, 3]]))


def test_label_segments_blocks_ignored_positions_and_partition():
    """Two blocks and an unclosed one (a cut sample); ignored positions are never marked;
    think and call partition the supervised positions."""
    tok = tiny_tokenizer()
    text = "<think>a</think>b<think>c</think>d<think>e"
    ids = tok.encode(text, add_special_tokens=False)
    labels = torch.tensor([[IGNORE_INDEX, *ids, IGNORE_INDEX]])
    seg = label_segments(tok, labels)
    think = seg["think"][0].int().tolist()
    pieces = [tok.decode([i]) for i in ids]
    expected = [int(p not in ("b", "d")) for p in pieces]
    assert think == [0, *expected, 0]
    supervised = labels != IGNORE_INDEX
    assert not (seg["think"] & seg["call"]).any()
    assert ((seg["think"] | seg["call"]) == supervised).all()
    with pytest.raises(ValueError, match="batch, length"):
        label_segments(tok, torch.tensor([1, 2]))
