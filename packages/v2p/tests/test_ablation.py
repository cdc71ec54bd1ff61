"""The CPU ablation (``aworld_rl_v2p.ablation``): its pieces, and its short deterministic form."""

import torch

from aworld_rl_v2p.ablation import (
    PALETTE,
    AblationOptions,
    GroundingNet,
    head_logits,
    make_screens,
    run,
)


def test_batched_head_is_the_package_head():
    net = GroundingNet(AblationOptions(d_model=32), seed=0)
    net.head.eval()
    patches, queries = torch.randn(3, 20, 32), torch.randn(3, 1, 32)
    batched = head_logits(net.head, patches, queries)
    for i in range(3):
        assert torch.allclose(batched[i], net.head(patches[i], queries[i]), atol=1e-5)


def test_screens_are_seeded_and_the_target_colour_is_unique():
    a, b = make_screens(20, seed=3), make_screens(20, seed=3)
    assert torch.equal(a.images, b.images) and a.boxes == b.boxes
    assert a.images.shape == (20, 3, 96, 96)
    for image, colour, (x1, y1, x2, y2) in zip(a.images, a.targets, a.boxes, strict=True):
        assert 0 <= x1 < x2 <= 1 and 0 <= y1 < y2 <= 1
        rgb = torch.tensor(PALETTE[int(colour)], dtype=torch.float32) / 255
        same = (image - rgb[:, None, None]).abs().amax(0) < 1e-6
        ys, xs = same.nonzero(as_tuple=True)
        # every pixel of the target's colour is inside the target's box
        assert xs.min() >= x1 * 96 - 1e-6 and xs.max() < x2 * 96 + 1e-6
        assert ys.min() >= y1 * 96 - 1e-6 and ys.max() < y2 * 96 + 1e-6


def test_gaussian_labels_beat_all_patch_labels_at_a_fixed_seed():
    """The short form of benchmarks/ablation.py: same backbone, head, data, seed and budget;
    only the label style differs (no suppression). Deterministic (one thread, seeded)."""
    short = dict(suppression=False, steps=100, batch_size=16, train_screens=500, val_screens=0,
                 test_screens=150)  # fmt: skip
    all_patch = run(AblationOptions(label_style="all", **short), seed=0)
    gauss = run(AblationOptions(label_style="gauss", sigma_factor=1.0, **short), seed=0)
    assert gauss["top1"] > all_patch["top1"] + 0.05  # measured: 0.22 vs 0.10
    assert gauss["out_of_box_mass"] < all_patch["out_of_box_mass"]
