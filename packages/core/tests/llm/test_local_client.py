"""LocalHFClient on a tiny random Qwen3: batching, greedy equivalence, stops, lengths."""

from __future__ import annotations

import asyncio

import pytest

torch = pytest.importorskip("torch")
tiny = pytest.importorskip("aworld_rl_core.models")

from aworld_rl_core.llm import LLMConfig, LocalHFClient, make_client  # noqa: E402

PROMPTS = [
    [{"role": "user", "content": "hi"}],
    [{"role": "user", "content": "a much longer question about the weather in Paris today"}],
    [{"role": "system", "content": "be brief"}, {"role": "user", "content": "2+2?"}],
]
GREEDY = {"temperature": 0.0, "max_tokens": 4}


@pytest.fixture(scope="module")
def model_and_tokenizer():
    tok = tiny.tiny_tokenizer()
    return tiny.tiny_causal_lm(tok, seed=0).eval(), tok


def reference(model, tok, messages, max_new):
    """Greedy decoding by hand: argmax of the logits, one token at a time, no padding."""
    prompt = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    ids = tok(prompt, return_tensors="pt", add_special_tokens=False)["input_ids"]
    new = []
    with torch.no_grad():
        for _ in range(max_new):
            logits = model(input_ids=ids).logits[0, -1]
            token = int(logits.argmax())
            new.append(token)
            ids = torch.cat([ids, torch.tensor([[token]])], dim=1)
    return tok.decode(new, skip_special_tokens=True), len(new)


def test_batched_greedy_matches_manual_decoding(model_and_tokenizer):
    model, tok = model_and_tokenizer
    client = LocalHFClient(model, tok, name="tiny", max_batch_size=8, defaults=GREEDY)
    outs = asyncio.run(client.chat_many(PROMPTS))
    assert client.batch_sizes == [3]  # the three concurrent calls shared one generate()
    for messages, out in zip(PROMPTS, outs, strict=True):
        text, n_new = reference(model, tok, messages, 4)
        assert out.text == text
        assert out.usage["completion_tokens"] == n_new == 4
        assert out.finish_reason == "length"
        assert out.model == "tiny"
    prompt_len = len(
        tok(tok.apply_chat_template(PROMPTS[1], add_generation_prompt=True, tokenize=False))[
            "input_ids"
        ]
    )
    assert outs[1].usage["prompt_tokens"] == prompt_len


def test_max_batch_size_and_sampling_groups(model_and_tokenizer):
    model, tok = model_and_tokenizer
    client = LocalHFClient(model, tok, max_batch_size=2, defaults=GREEDY)
    requests = [*PROMPTS, {"messages": PROMPTS[0], "max_tokens": 2}]
    outs = asyncio.run(client.chat_many(requests))
    # 3 calls with max_tokens=4 split into batches of <= 2; the max_tokens=2 call runs alone
    assert sorted(client.batch_sizes) == [1, 1, 2]
    assert outs[3].usage["completion_tokens"] == 2
    single = asyncio.run(client.chat(PROMPTS[0], max_tokens=2))
    assert single.text == outs[3].text


def test_stop_strings_and_seeded_sampling(model_and_tokenizer):
    model, tok = model_and_tokenizer
    client = LocalHFClient(model, tok, defaults=GREEDY)
    full = asyncio.run(client.chat(PROMPTS[0]))
    assert len(full.text) >= 4  # four random tokens decode to several characters
    stop = full.text[2:4]
    cut = asyncio.run(client.chat(PROMPTS[0], stop=[stop]))
    assert cut.text == full.text[: full.text.find(stop)]
    assert cut.finish_reason == "stop"
    a = asyncio.run(client.chat(PROMPTS[0], temperature=1.0, seed=3, max_tokens=8))
    b = asyncio.run(client.chat(PROMPTS[0], temperature=1.0, seed=3, max_tokens=8))
    assert a.text == b.text


def test_unsupported_sampling_is_an_error(model_and_tokenizer):
    model, tok = model_and_tokenizer
    client = LocalHFClient(model, tok, defaults=GREEDY)
    with pytest.raises(ValueError, match=r"does not support sampling params \['logprobs'\]"):
        asyncio.run(client.chat(PROMPTS[0], logprobs=True))


def test_make_client_loads_a_local_directory(tmp_path, model_and_tokenizer):
    model, tok = model_and_tokenizer
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    cfg = LLMConfig(provider="local", model=str(tmp_path), temperature=0.0, max_tokens=4)
    client = make_client(cfg)
    assert isinstance(client.client, LocalHFClient)  # under the error-counting guard
    direct = LocalHFClient(model, tok, defaults={"temperature": 0.0, "max_tokens": 4})
    assert asyncio.run(client.chat(PROMPTS[2])).text == asyncio.run(direct.chat(PROMPTS[2])).text
    with pytest.raises(OSError, match="cannot load a local model"):
        make_client(LLMConfig(provider="local", model=str(tmp_path / "missing")))
