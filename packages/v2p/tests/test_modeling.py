import pytest
import torch
from PIL import Image, ImageDraw

from aworld_rl_v2p.inference import Grounder
from aworld_rl_v2p.modeling import ActionHead, V2PForConditionalGeneration, new_token_rows
from aworld_rl_v2p.prompts import POINTER_PAD, SPECIAL_TOKENS, to_pointer_action


def screenshot(width, height, box, color=(220, 40, 40)):
    img = Image.new("RGB", (width, height), (240, 240, 240))
    ImageDraw.Draw(img).rectangle(box, fill=color)
    return img


def test_head_shapes_and_parameter_count():
    d = 32
    head = ActionHead(d, heads=8)
    logits = head(torch.randn(63, d), torch.randn(2, d))
    assert logits.shape == (2, 63)
    # MHA 4d^2 + 4d, LayerNorm 2d, two MLPs of two d x d layers with bias: 4d^2 + 4d
    assert sum(p.numel() for p in head.parameters()) == 8 * d * d + 8 * d + 2 * d
    logits.sum().backward()
    assert all(p.grad is not None for p in head.parameters())


def test_head_logits_are_scaled_dot_products():
    head = ActionHead(8, heads=2, dropout=0.0).eval()
    patches, queries = torch.randn(5, 8), torch.randn(1, 8)
    x = patches.unsqueeze(0)
    mixed, _ = head.self_attention(x, x, x)
    keys = head.projection_enc(head.layer_norm(x + mixed).squeeze(0))
    expected = head.projection_dec(queries) @ keys.T / 8**0.5
    torch.testing.assert_close(head(patches, queries), expected)


def test_pointer_tokens_get_mean_rows(tiny_v2p):
    model, tok, _ = tiny_v2p
    ids = [tok.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS]
    assert len(set(ids)) == 5 and model.config.pointer_pad_token_id == tok.convert_tokens_to_ids(
        POINTER_PAD
    )
    weight = model.get_input_embeddings().weight
    mean = weight[: min(ids)].mean(0)
    for token_id in ids:
        torch.testing.assert_close(weight[token_id], mean)
    assert new_token_rows(model).nonzero().flatten().tolist() == sorted(ids)


def test_save_and_load_round_trip(tiny_v2p, tmp_path):
    model, tok, proc = tiny_v2p
    model.save_pretrained(tmp_path)
    again = V2PForConditionalGeneration.from_pretrained(tmp_path).eval()
    img = screenshot(224, 168, (20, 20, 80, 60))
    a = Grounder(model, tok, proc, max_pixels=224 * 224).attention([img], ["click red"])
    b = Grounder(again, tok, proc, max_pixels=224 * 224).attention([img], ["click red"])
    torch.testing.assert_close(torch.tensor(a[0]), torch.tensor(b[0]))
    assert again.config.pointer_pad_token_id == model.config.pointer_pad_token_id


def test_batched_inference_equals_one_at_a_time(tiny_v2p):
    model, tok, proc = tiny_v2p
    grounder = Grounder(model, tok, proc, max_pixels=224 * 224)
    images = [screenshot(224, 168, (10, 10, 60, 50)), screenshot(140, 196, (50, 90, 120, 150))]
    texts = ["click the red box", "press the red rectangle near the bottom please"]
    batched = grounder.attention(images, texts)
    for img, text, got in zip(images, texts, batched, strict=True):
        (alone,) = grounder.attention([img], [text])
        assert got.shape == alone.shape
        torch.testing.assert_close(torch.tensor(got), torch.tensor(alone), atol=1e-5, rtol=1e-4)
    assert batched[0].shape == (6, 8) and batched[1].shape == (7, 5)
    assert abs(batched[0].sum() - 1) < 1e-5


def test_mm_token_types_matter(tiny_v2p):
    model, tok, proc = tiny_v2p
    grounder = Grounder(model, tok, proc, max_pixels=224 * 224)
    batch = grounder.encode([screenshot(224, 168, (10, 10, 60, 50))], ["click"])
    with_types = model.pointer_logits(model.encode(**batch))[0]
    batch.pop("mm_token_type_ids")
    derived = model.pointer_logits(model.encode(**batch))[0]  # derived from input_ids
    torch.testing.assert_close(with_types, derived)


def test_sample_without_image_is_an_error(tiny_v2p):
    model, tok, proc = tiny_v2p
    grounder = Grounder(model, tok, proc, max_pixels=224 * 224)
    batch = grounder.encode([screenshot(56, 56, (0, 0, 10, 10))], ["x"])
    with pytest.raises(ValueError, match="exactly one image"):
        model.encode(
            input_ids=batch["input_ids"][:, :5],
            attention_mask=batch["attention_mask"][:, :5],
            pixel_values=None,
            image_grid_thw=None,
        )


def test_coordinates_become_pointer_tokens():
    text, points = to_pointer_action("pyautogui.click(x=0.23, y=0.0001)")
    assert text == "pyautogui.click(<|pointer_start|><|pointer_pad|><|pointer_end|>)"
    assert points == [(0.23, 0.001)]
