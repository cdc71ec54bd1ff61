import pytest
import torch
import torch.nn.functional as F
from PIL import Image, ImageDraw

from aworld_rl_v2p.inference import Grounder
from aworld_rl_v2p.loss import compute_loss


def batch_for(model, tok, proc, boxes):
    images = []
    for x1, y1, x2, y2 in boxes:
        img = Image.new("RGB", (224, 168), (235, 235, 235))
        ImageDraw.Draw(img).rectangle((x1 * 224, y1 * 168, x2 * 224, y2 * 168), fill=(200, 0, 0))
        images.append(img)
    batch = Grounder(model, tok, proc, max_pixels=224 * 224).encode(
        images, ["click red"] * len(boxes)
    )
    start = tok.convert_tokens_to_ids("<|recipient|>")
    labels = batch["input_ids"].clone()
    for row in labels:  # supervise from <|recipient|> on (the assistant's action)
        row[: int((row == start).nonzero()[0])] = -100
    labels[batch["attention_mask"] == 0] = -100
    batch["labels"] = labels
    batch["pointer_boxes"] = [torch.tensor([b]) for b in boxes]
    return batch


def test_loss_terms_and_metrics(tiny_v2p):
    model, tok, proc = tiny_v2p
    batch = batch_for(model, tok, proc, [(0.1, 0.1, 0.4, 0.5), (0.5, 0.5, 0.9, 0.9)])
    loss, metrics = compute_loss(model, batch, lm_weight=1.0, label_style="all")
    assert set(metrics) == {
        "lm_loss",
        "pointer_loss",
        "pointer_kl",
        "out_of_box_mass",
        "top1_patch_in_box",
    }
    assert loss.item() == pytest.approx(metrics["lm_loss"] + metrics["pointer_loss"], rel=1e-5)
    # pointer loss = KL + out-of-box mass (averaged over the two samples)
    assert metrics["pointer_loss"] == pytest.approx(
        metrics["pointer_kl"] + metrics["out_of_box_mass"], rel=1e-5
    )
    # an untrained head attends almost uniformly: each box touches 4 x 3 of the 8 x 6 patches
    assert metrics["out_of_box_mass"] == pytest.approx(36 / 48, abs=0.05)


def test_lm_loss_ignores_pointer_end_and_is_plain_ce(tiny_v2p):
    model, tok, proc = tiny_v2p
    batch = batch_for(model, tok, proc, [(0.1, 0.1, 0.4, 0.5)])
    _, metrics = compute_loss(model, batch, pointer_weight=0.0)
    with torch.no_grad():
        logits = model(
            **{k: v for k, v in batch.items() if k not in ("labels", "pointer_boxes")}
        ).logits
    labels = batch["labels"].clone()
    labels[batch["input_ids"] == tok.convert_tokens_to_ids("<|pointer_end|>")] = -100
    expected = F.cross_entropy(logits[0, :-1], labels[0, 1:], ignore_index=-100)
    assert metrics["lm_loss"] == pytest.approx(expected.item(), rel=1e-4)


def test_warm_up_skips_lm_loss_and_bad_options_are_errors(tiny_v2p):
    model, tok, proc = tiny_v2p
    batch = batch_for(model, tok, proc, [(0.1, 0.1, 0.4, 0.5)])
    loss, metrics = compute_loss(model, batch, lm_weight=-1, suppression=False)
    assert "lm_loss" not in metrics
    assert loss.item() == pytest.approx(metrics["pointer_kl"], rel=1e-5)
    with pytest.raises(ValueError, match="unknown v2p.pointer loss option"):
        compute_loss(model, batch, sigma=2)
    batch["pointer_boxes"] = [torch.tensor([[0.1, 0.1, 0.4, 0.5]] * 2)]
    with pytest.raises(ValueError, match="1 pointer token"):
        compute_loss(model, batch)


def test_head_steps_lower_out_of_box_mass(tiny_v2p):
    model, tok, proc = tiny_v2p
    head = model.multi_patch_pointer_head
    saved = {k: v.clone() for k, v in head.state_dict().items()}
    batch = batch_for(model, tok, proc, [(0.05, 0.1, 0.35, 0.45)])
    opt = torch.optim.Adam(head.parameters(), lr=1e-3)
    first = None
    try:
        for _ in range(15):
            loss, metrics = compute_loss(model, batch, lm_weight=-1)
            first = first if first is not None else metrics["out_of_box_mass"]
            opt.zero_grad()
            loss.backward()
            opt.step()
        _, metrics = compute_loss(model, batch, lm_weight=-1)
        assert metrics["out_of_box_mass"] < first - 0.2
        assert metrics["top1_patch_in_box"] == 1.0
    finally:
        head.load_state_dict(saved)
        model.zero_grad(set_to_none=True)


def test_registered_as_a_model_level_loss_with_options(tiny_v2p):
    from aworld_rl_core import registry
    from aworld_rl_core.losses import resolve_loss

    assert registry.get_loss("v2p.pointer").meta["kind"] == "model"
    loss = resolve_loss("v2p.pointer", {"label_style": "all", "lm_weight": -1})
    assert loss.kind == "model"
    model, tok, proc = tiny_v2p
    batch = batch_for(model, tok, proc, [(0.1, 0.1, 0.4, 0.5)])
    with torch.no_grad():
        value, metrics = loss.fn(model, batch)  # hf-sft's call: compute_loss(model, batch)
        direct, _ = compute_loss(model, batch, label_style="all", lm_weight=-1)
        gauss, _ = compute_loss(model, batch, lm_weight=-1)
    assert "lm_loss" not in metrics
    assert value.item() == pytest.approx(direct.item(), rel=1e-6)
    assert value.item() != pytest.approx(gauss.item(), rel=1e-3)  # the options were bound
