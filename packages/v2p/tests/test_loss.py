import math

import pytest
import torch

from aworld_rl_v2p.loss import kl_loss, pointer_loss, suppression_loss


def test_suppression_is_mass_outside_box_hand_computed():
    logits = torch.tensor([[0.0, math.log(3.0), 0.0, 0.0]])  # softmax = [1, 3, 1, 1] / 6
    in_box = torch.tensor([False, True, True, False])
    assert suppression_loss(logits, in_box).item() == pytest.approx(2 / 6)
    # two pointer tokens: the mean of 2/6 and 0
    two = torch.tensor([[0.0, math.log(3.0), 0.0, 0.0], [-50.0, 0.0, 0.0, -50.0]])
    assert suppression_loss(two, in_box).item() == pytest.approx(1 / 6, abs=1e-6)


def test_suppression_equals_one_minus_in_box_mass_and_gradient_formula():
    torch.manual_seed(0)
    logits = torch.randn(3, 10, requires_grad=True)
    in_box = torch.zeros(10, dtype=torch.bool)
    in_box[2:5] = True
    loss = suppression_loss(logits, in_box)
    p = logits.softmax(-1)
    assert loss.item() == pytest.approx((1 - p[:, in_box].sum(-1)).mean().item(), abs=1e-6)
    loss.backward()
    p_out = p[:, ~in_box].sum(-1, keepdim=True)
    expected = p * ((~in_box).float() - p_out) / 3  # d/dz of the mean over 3 tokens
    torch.testing.assert_close(logits.grad, expected.detach(), atol=1e-6, rtol=0)


def test_kl_is_manual_sum_divided_by_pointer_tokens():
    logits = torch.tensor([[1.0, 2.0, 0.5], [0.0, 0.0, 0.0]])
    labels = torch.tensor([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    logp = logits.log_softmax(-1)
    terms = torch.where(labels > 0, labels * (labels.log() - logp), torch.zeros_like(labels))
    assert kl_loss(logits, labels).item() == pytest.approx(terms.sum().item() / 2, abs=1e-6)


def test_kl_is_zero_when_prediction_equals_label():
    labels = torch.tensor([0.1, 0.2, 0.7])
    assert kl_loss(labels.log(), labels).item() == pytest.approx(0.0, abs=1e-6)


def test_pointer_loss_adds_suppression_only_when_asked():
    logits = torch.tensor([[0.0, 1.0, 2.0]])
    labels = torch.tensor([[0.0, 0.5, 0.5]])
    in_box = torch.tensor([False, True, True])
    both, parts = pointer_loss(logits, labels, in_box)
    alone, _ = pointer_loss(logits, labels, in_box, suppression=False)
    p_out = logits.softmax(-1)[0, 0].item()
    assert parts["out_of_box_mass"].item() == pytest.approx(p_out)
    assert both.item() == pytest.approx(alone.item() + p_out)
    assert alone.item() == pytest.approx(parts["kl"].item())


def test_mismatched_shapes_are_an_error():
    with pytest.raises(ValueError, match="same image grid"):
        suppression_loss(torch.zeros(1, 4), torch.zeros(5, dtype=torch.bool))
