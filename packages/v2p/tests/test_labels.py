import math

import pytest
import torch

from aworld_rl_v2p.labels import box_mask, patch_labels


def phi(z):
    return 0.5 * (1 + math.erf(z / math.sqrt(2)))


def test_gauss_three_patch_box_matches_hand_computed_masses():
    # box = patches 1..3 of a 1x5 grid; f = 4.1325: edges at 2.066 sigma
    got = patch_labels((28, 0, 112, 28), (28, 140), style="gauss", sigma_factor=4.1325)
    assert got.shape == (1, 5)
    # 1-D: edge .2261, centre .5092, edge .2261 (then normalised over .9614)
    assert got[0].tolist() == pytest.approx([0, 0.2352, 0.5296, 0.2352, 0], abs=1e-4)
    # f = 1: almost flat (.125 / .132 / .125 before normalisation)
    flat = patch_labels((28, 0, 112, 28), (28, 140), style="gauss", sigma_factor=1.0)
    assert flat[0].tolist() == pytest.approx([0, 0.3272, 0.3457, 0.3272, 0], abs=1e-4)


def test_gauss_partial_cover_is_mass_inside_patch_and_box():
    # box x in [10, 50] on a 2x3 grid of 28 px; y in [0, 56] covers both rows evenly
    box, f = (10.0, 0.0, 50.0, 56.0), 2.0
    mx, sx = 30.0, 40.0 / f
    cell0 = phi((28 - mx) / sx) - phi((10 - mx) / sx)
    cell1 = phi((50 - mx) / sx) - phi((28 - mx) / sx)
    my, sy = 28.0, 56.0 / f
    row = phi((28 - my) / sy) - phi((0 - my) / sy)
    raw = torch.tensor([[cell0, cell1, 0.0], [cell0, cell1, 0.0]]) * row
    got = patch_labels(box, (56, 84), style="gauss", sigma_factor=f)
    torch.testing.assert_close(got, (raw / raw.sum()).float(), atol=1e-6, rtol=0)
    assert float(got.sum()) == pytest.approx(1.0)


def test_all_and_center_styles():
    box = (30.0, 5.0, 60.0, 50.0)  # touches columns 1-2, rows 0-1
    every = patch_labels(box, (84, 112), style="all")
    expected = torch.zeros(3, 4)
    expected[0:2, 1:3] = 0.25
    assert torch.equal(every, expected)
    centre = patch_labels(box, (84, 112), style="center")  # centre (45, 27.5) -> row 0, col 1
    assert centre.nonzero().tolist() == [[0, 1]] and float(centre.sum()) == 1.0
    assert box_mask(box, (84, 112)).sum() == 4


def test_box_touching_only_an_edge_is_not_in_the_next_patch():
    got = patch_labels((0, 0, 28, 28), (56, 56), style="all")
    assert got.tolist() == [[1.0, 0.0], [0.0, 0.0]]


def test_peak_at_centre_and_zero_outside_box():
    got = patch_labels((50, 60, 300, 200), (280, 336), style="gauss", sigma_factor=4.1325)
    assert float(got.sum()) == pytest.approx(1.0)
    assert got.argmax().item() == got.flatten().argmax().item()
    r, c = divmod(got.argmax().item(), got.shape[1])
    assert (r, c) == (130 // 28, 175 // 28)
    assert got[~box_mask((50, 60, 300, 200), (280, 336))].abs().max() == 0


def test_peak_to_edge_ratio_grows_with_sigma_factor():
    ratios = []
    for f in (1.0, 2.0, 4.1325):
        row = patch_labels((28, 0, 112, 28), (28, 140), style="gauss", sigma_factor=f)[0]
        ratios.append(float(row[2] / row[1]))
    assert ratios == sorted(ratios) and ratios[0] == pytest.approx(1.0566, abs=1e-3)


def test_matches_a_per_patch_scipy_loop():
    norm = pytest.importorskip("scipy.stats").norm
    box, size, f = (37.5, 12.25, 190.0, 101.0), (140, 224), 1.7
    rows, cols = size[0] // 28, size[1] // 28
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    sx, sy = (box[2] - box[0]) / f, (box[3] - box[1]) / f
    ref = torch.zeros(rows, cols, dtype=torch.float64)
    for r in range(rows):
        for c in range(cols):
            px1, py1, px2, py2 = c * 28, r * 28, c * 28 + 28, r * 28 + 28
            if px2 <= box[0] or px1 >= box[2] or py2 <= box[1] or py1 >= box[3]:
                continue
            mx = norm.cdf(min(px2, box[2]), cx, sx) - norm.cdf(max(px1, box[0]), cx, sx)
            my = norm.cdf(min(py2, box[3]), cy, sy) - norm.cdf(max(py1, box[1]), cy, sy)
            ref[r, c] = mx * my
    got = patch_labels(box, size, style="gauss", sigma_factor=f)
    torch.testing.assert_close(got.double(), ref / ref.sum(), atol=1e-6, rtol=0)


@pytest.mark.parametrize(
    ("box", "size", "message"),
    [
        ((0, 0, 10, 10), (30, 56), "multiples of patch"),
        ((10, 0, 10, 10), (28, 56), "x1 < x2"),
        ((0, 0, 60, 10), (28, 56), "not inside"),
        ((0, 0, 10), (28, 56), "four|\\(x1, y1, x2, y2\\)"),
    ],
)
def test_bad_input_is_a_clear_error(box, size, message):
    with pytest.raises(ValueError, match=message):
        patch_labels(box, size)


def test_unknown_style_and_bad_sigma():
    with pytest.raises(ValueError, match="unknown label style"):
        patch_labels((0, 0, 10, 10), (28, 28), style="uniform")
    with pytest.raises(ValueError, match="sigma_factor"):
        patch_labels((0, 0, 10, 10), (28, 28), sigma_factor=0)
