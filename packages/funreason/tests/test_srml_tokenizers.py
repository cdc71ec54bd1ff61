"""SRML sees the reasoning tokens on FunReason's own SFT paths, with the Qwen3, Qwen2.5 and
Llama-3 tokenizer styles (core's offline builders: BPEs where ``</think>\\n\\n`` merges into
``>\\n\\n``, and Qwen3's real tokenizer). On each path the loss equals an independent
computation of ``alpha * L_think + (1 - alpha) * L_result`` and differs from plain CE."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")

# core's offline tokenizer builders (reused, not copied): packages/core/tests/support
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "core" / "tests" / "support"))
from pretokenizers import LLAMA3_PATTERN, QWEN25_PATTERN, pretokenized_bpe  # noqa: E402

from aworld_rl_core.models import chat_template, tiny_tokenizer  # noqa: E402
from aworld_rl_core.segments import IGNORE_INDEX  # noqa: E402
from aworld_rl_funreason.data import FcSample, to_record  # noqa: E402
from aworld_rl_funreason.loss import SRMLLoss  # noqa: E402
from aworld_rl_funreason.testing import WEATHER_TOOL  # noqa: E402

ALPHA = 0.7
SAMPLE = FcSample(
    id="rome-oslo",
    query="Weather in Rome and Oslo?",
    tools=[WEATHER_TOOL],
    answer="[get_weather(city='Rome'), get_weather(city='Oslo')]",
    reasoning="Two cities, so two calls.",
)


@pytest.fixture(scope="module", params=["qwen3", "qwen2.5", "llama3"])
def tok(request):
    if request.param == "qwen3":
        return tiny_tokenizer()
    pattern = QWEN25_PATTERN if request.param == "qwen2.5" else LLAMA3_PATTERN
    return pretokenized_bpe(pattern, chat_template())


def independent_srml(tok, logits, labels):
    """By hand, per sample: decode each supervised token, a token is reasoning when its text
    overlaps ``<think>...</think>``; CE from log-softmax; part means mixed with alpha."""
    logp = torch.log_softmax(logits.double(), dim=-1)
    per_sample = []
    for b in range(labels.shape[0]):
        pos = [t for t in range(labels.shape[1]) if labels[b, t] != IGNORE_INDEX]
        pieces = [tok.decode([int(labels[b, t])]) for t in pos]
        text = "".join(pieces)
        start, end = text.index("<think>"), text.index("</think>") + len("</think>")
        think, result, at = [], [], 0
        for t, piece in zip(pos, pieces, strict=True):
            nll = -float(logp[b, t, labels[b, t]])
            (think if at < end and at + len(piece) > start else result).append(nll)
            at += len(piece)
        assert think and result
        per_sample.append(ALPHA * sum(think) / len(think) + (1 - ALPHA) * sum(result) / len(result))
    return sum(per_sample) / len(per_sample), len(think)


def plain_ce(logits, labels):
    return float(
        torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=IGNORE_INDEX
        )
    )


def _logits(labels, vocab):
    """Random logits (row t predicts labels[t + 1]) that make the last 5 supervised tokens (the
    end of the call list) easy: the two parts' means differ, so SRML is not plain CE."""
    logits = torch.randn(1, labels.shape[1], vocab, generator=torch.Generator().manual_seed(0))
    supervised = [t for t in range(1, labels.shape[1]) if labels[0, t] != IGNORE_INDEX]
    for t in supervised[-5:]:
        logits[0, t - 1, labels[0, t]] += 8.0
    return logits


def test_hf_sft_path(tok):
    from aworld_rl_core.backends.sft_data import build_samples
    from aworld_rl_core.segments import shift_segments

    (sample,), _ = build_samples([to_record(SAMPLE).to_dict()], tok, max_length=4096, per_turn=True)
    labels = torch.tensor([sample.labels])
    masks = {k: torch.tensor([v]) for k, v in sample.segments.items()}
    logits, shifted, segments = shift_segments(_logits(labels, len(tok)), labels, masks)
    srml = float(SRMLLoss(ALPHA)(logits, shifted, segments))
    expected, n_think = independent_srml(tok, logits, shifted)
    assert int(segments["think"].sum()) == n_think >= 4
    assert srml == pytest.approx(expected, rel=1e-5)
    assert abs(srml - plain_ce(logits, shifted)) > 1e-2


def test_llamafactory_path(tok):
    """The LLaMA-Factory trainer patch's own shift-and-mark on labels laid out as LLaMA-
    Factory's supervised collator lays them out (prompt ignored, answer + end of turn)."""
    from transformers import Trainer

    from aworld_rl_core.backends.llamafactory import trainer as lf_trainer

    if not hasattr(lf_trainer, "label_segments"):  # main before seams (f): 0 think tokens there
        pytest.skip("needs core's one segment marker in the LLaMA-Factory trainer (seams f)")
    token_loss_trainer = lf_trainer.token_loss_trainer

    record = to_record(SAMPLE).to_dict()
    prompt = tok.apply_chat_template(
        record["messages"][:-1], tokenize=False, add_generation_prompt=True
    )
    prompt_ids = tok.encode(prompt, add_special_tokens=False)
    answer_ids = tok.encode(
        record["messages"][-1]["content"] + "<|im_end|>", add_special_tokens=False
    )
    labels = torch.tensor([[IGNORE_INDEX] * len(prompt_ids) + answer_ids])
    trainer_cls = token_loss_trainer(Trainer, SRMLLoss(ALPHA))
    fake = SimpleNamespace(processing_class=tok)  # the method reads only the tokenizer
    logits, shifted, segments = trainer_cls.shift_and_segment(
        fake, _logits(labels, len(tok)), labels, None
    )
    srml = float(SRMLLoss(ALPHA)(logits, shifted, segments))
    expected, n_think = independent_srml(tok, logits, shifted)
    assert int(segments["think"].sum()) == n_think >= 4
    assert srml == pytest.approx(expected, rel=1e-5)
    assert abs(srml - plain_ce(logits, shifted)) > 1e-2
