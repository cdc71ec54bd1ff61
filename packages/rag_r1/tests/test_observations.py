import json

from aworld_rl_rag_r1.observations import (
    CLOSE,
    OPEN,
    TokenTruncator,
    WordTruncator,
    multi_query,
    single_query,
)


def test_single_query_block_exact_text():
    block = single_query(["A   one", "B   two"], WordTruncator(), 1000)
    assert block == "\n<information>\nDoc 1: A   one\nDoc 2: B   two\n\n</information>\n"


def test_single_query_truncation_keeps_the_closing_tag():
    words = WordTruncator()
    block = single_query(["T   " + " ".join(f"w{i}" for i in range(50))], words, 12)
    assert block.startswith(OPEN) and block.endswith(CLOSE)
    body = block[len(OPEN) : -len(CLOSE)]
    # 12 words in all, 1 for each tag: 10 words of body ("Doc", "1:", "T", w0..w6)
    assert body.split() == ["Doc", "1:", "T", *[f"w{i}" for i in range(7)]]


def test_multi_query_json_with_per_query_truncation():
    long = "T   " + " ".join(["x"] * 30)
    block = multi_query(["q1", "q2"], [["A   a", "B   b"], [long]], WordTruncator(), 8)
    payload = json.loads(block[len(OPEN) : -len(CLOSE)])
    assert payload == {
        "query": ["q1", "q2"],
        "documents": ["Doc 1: A   a\nDoc 2: B   b", "Doc 1: T   x x x x x"],
    }
    assert block[len(OPEN) :].startswith('{\n  "query": [\n    "q1",')


def test_token_truncator_with_a_real_tokenizer(tiny_tokenizer):
    cut = TokenTruncator(tiny_tokenizer)
    text = "Doc 1: Paris   Paris is the capital and most populous city of France."
    assert cut.count(text) > 10
    short = cut.truncate(text, 5)
    assert cut.count(short) == 5 and text.startswith(short)
    assert cut.truncate(text, 1000) == text
