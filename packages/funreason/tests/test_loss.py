"""SRML against hand-computed values: every token loss is ln2 or ln4 by construction."""

from __future__ import annotations

import math

import pytest
import torch

from aworld_rl_funreason.loss import (
    LearnableAlpha,
    SRMLLoss,
    srml_loss,
)

LN2 = math.log(2.0)
T, F_ = True, False


def _batch():
    # every row has softmax [0.5, 0.25, 0.25]: label 0 costs ln2, label 1 costs ln4 = 2 ln2
    logits = torch.tensor([LN2, 0.0, 0.0]).expand(4, 4, 3).clone().requires_grad_(True)
    labels = torch.tensor(
        [
            [0, 1, 1, -100],  # think ln2, 2ln2 | result 2ln2
            [1, 0, 0, 0],  # no reasoning: result 2,1,1,1 (ln2)
            [-100, -100, -100, -100],  # nothing valid: excluded from the mean
            [0, 0, -100, -100],  # no result: think 1, 1 (ln2)
        ]
    )
    think = torch.tensor(
        [[T, T, F_, F_], [F_, F_, F_, F_], [T, T, F_, F_], [T, T, T, T]]  # masks on ignored ok
    )
    return logits, labels, think


def test_per_sample_matches_hand_computation():
    logits, labels, think = _batch()
    loss = srml_loss(logits, labels, think, 0.7)
    # s0: 0.7*1.5 + 0.3*2 = 1.65; s1: 1.25; s3: 1.0 -> mean 1.3 (units of ln2)
    assert loss.item() == pytest.approx(1.3 * LN2, rel=1e-6)


def test_pooled_matches_hand_computation():
    logits, labels, think = _batch()
    loss = srml_loss(logits, labels, think, 0.7, reduction="pooled")
    # think: (1+2+1+1)/4 = 1.25; result: (2+2+1+1+1)/5 = 1.4 -> 0.7*1.25 + 0.3*1.4 = 1.295
    assert loss.item() == pytest.approx(1.295 * LN2, rel=1e-6)


def test_alpha_equal_to_token_share_is_plain_cross_entropy():
    logits, labels, think = _batch()
    one = (logits[:1], labels[:1], think[:1])
    ce = torch.nn.functional.cross_entropy(one[0].reshape(-1, 3), one[1].reshape(-1))
    assert srml_loss(*one, 2 / 3).item() == pytest.approx(ce.item(), rel=1e-6)


def test_gradient_with_respect_to_alpha():
    logits, labels, think = _batch()
    alpha = torch.tensor(0.7, requires_grad=True)
    srml_loss(logits, labels, think, alpha).backward()
    # only sample 0 has both parts: (L_think - L_result) / 3 samples = -0.5 ln2 / 3
    assert alpha.grad.item() == pytest.approx(-0.5 * LN2 / 3, rel=1e-6)


def test_ignore_index_tokens_get_no_gradient():
    logits, labels, think = _batch()
    srml_loss(logits, labels, think, 0.7).backward()
    assert torch.all(logits.grad[2] == 0)
    assert torch.all(logits.grad[0, 3] == 0)
    assert logits.grad[0, 0].abs().sum() > 0


def test_custom_ignore_index():
    logits, labels, think = _batch()
    labels = torch.where(labels == -100, torch.full_like(labels, 2), labels)
    loss = srml_loss(logits, labels, think, 0.7, ignore_index=2)
    assert loss.item() == pytest.approx(1.3 * LN2, rel=1e-6)


def test_all_ignored_gives_zero_with_graph():
    logits = torch.zeros(1, 2, 3, requires_grad=True)
    labels = torch.full((1, 2), -100)
    loss = srml_loss(logits, labels, torch.zeros(1, 2, dtype=torch.bool))
    assert loss.item() == 0.0
    loss.backward()


def test_bad_shapes_and_alpha_raise():
    logits, labels, think = _batch()
    with pytest.raises(ValueError, match="think_mask shape"):
        srml_loss(logits, labels, think[:, :2])
    with pytest.raises(ValueError, match="alpha"):
        srml_loss(logits, labels, think, 1.5)
    with pytest.raises(ValueError, match="reduction"):
        srml_loss(logits, labels, think, reduction="mean")
    with pytest.raises(ValueError, match="shift"):
        srml_loss(logits[0], labels, think)


@pytest.mark.parametrize("parametrization", ["sigmoid", "clamp"])
def test_learnable_alpha_starts_at_init_and_stays_in_range(parametrization):
    mod = LearnableAlpha(0.7, parametrization)
    assert mod().item() == pytest.approx(0.7, rel=1e-6)
    with torch.no_grad():
        mod.raw.fill_(50.0)
    assert 0.0 <= mod().item() <= 1.0
    with torch.no_grad():
        mod.raw.fill_(-50.0)
    assert 0.0 <= mod().item() <= 1.0


def test_learnable_alpha_gradient_through_sigmoid():
    logits, labels, think = _batch()
    loss_fn = SRMLLoss(0.7, learnable=True)
    loss = loss_fn(logits, labels, {"think": think})
    assert loss.item() == pytest.approx(1.3 * LN2, rel=1e-5)
    loss.backward()
    # dL/dw = dL/dalpha * alpha (1 - alpha)
    assert loss_fn.alpha_module.raw.grad.item() == pytest.approx(-0.5 * LN2 / 3 * 0.21, rel=1e-5)
    assert len(list(loss_fn.parameters())) == 1
    assert list(SRMLLoss(0.7).parameters()) == []


def test_learnable_alpha_has_its_own_learning_rate():
    assert SRMLLoss(learnable=True).learning_rate == 1e-3  # the default (not in the paper)
    assert SRMLLoss(learnable=True, alpha_lr=0.05).learning_rate == 0.05
    assert SRMLLoss(learnable=True, alpha_lr=None).learning_rate is None  # the model's
    assert SRMLLoss(alpha_lr=0.05).learning_rate is None  # fixed alpha: nothing to train
    with pytest.raises(ValueError, match="alpha_lr must be > 0"):
        SRMLLoss(learnable=True, alpha_lr=0.0)


def test_log_metrics_counts_think_and_call_tokens_of_training_steps():
    logits, labels, think = _batch()
    loss = SRMLLoss()
    loss(logits, labels, {"think": think})
    loss(logits, labels, {"think": think})
    with torch.no_grad():  # evaluation: not counted
        loss(logits, labels, {"think": think})
    # valid think: row0 2, row3 2 -> 4; valid others: row0 1, row1 4 -> 5; twice
    assert loss.log_metrics() == {"think_tokens": 8.0, "call_tokens": 10.0}
    assert loss.log_metrics() == {"think_tokens": 0.0, "call_tokens": 0.0}  # reset


def test_hook_needs_think_segment():
    logits, labels, _ = _batch()
    with pytest.raises(KeyError, match="think"):
        SRMLLoss()(logits, labels, {"call": labels > 0})


def _think(texts_by_row, prompt="Q?"):
    """Labels of rows (an ignored prompt, then the supervised text) and core's think mask over
    the supervised part, as the text of the marked and unmarked tokens."""
    from aworld_rl_core.models import tiny_tokenizer
    from aworld_rl_core.segments import IGNORE_INDEX, label_segments

    tok = tiny_tokenizer()
    head = tok.encode(prompt, add_special_tokens=False)
    rows = [tok.encode(t, add_special_tokens=False) for t in texts_by_row]
    width = len(head) + max(map(len, rows))
    labels = torch.tensor(
        [
            [IGNORE_INDEX] * len(head) + r + [IGNORE_INDEX] * (width - len(head) - len(r))
            for r in rows
        ]
    )
    mask = label_segments(tok, labels)["think"]
    assert not mask[:, : len(head)].any()  # the prompt is never reasoning
    out = []
    for r, m in zip(rows, mask[:, len(head) :].tolist(), strict=True):
        bits = m[: len(r)]  # the row's own tokens (the rest is padding)
        picked = [[t for t, b in zip(r, bits, strict=True) if b == flag] for flag in (1, 0)]
        out.append((tok.decode(picked[0]), tok.decode(picked[1])))
    return out


def test_think_mask_blocks_a_reasoning_opened_by_the_prompt_and_truncation():
    assert _think(
        [
            "<think>ab</think>cd",
            "ab</think>cd",  # the prompt opened the reasoning
            "cd efgh",  # no reasoning
            "<think>ab cd ef",  # truncated inside the reasoning
        ]
    ) == [
        ("<think>ab</think>", "cd"),
        ("ab</think>", "cd"),
        ("", "cd efgh"),
        ("<think>ab cd ef", ""),
    ]


def test_think_mask_two_blocks():
    [(think, rest)] = _think(["<think>x</think>y<think>x</think>z"])
    assert (think, rest) == ("<think>x</think><think>x</think>", "yz")


def test_think_mask_with_the_qwen3_tokenizer_matches_the_text():
    target = "<think>\nweather in Paris: get_weather\n</think>\n\n[get_weather(city='Paris')]"
    [(think, rest)] = _think([target], prompt="Weather in Paris?")
    assert think == "<think>\nweather in Paris: get_weather\n</think>"
    assert rest == "\n\n[get_weather(city='Paris')]"
