import numpy as np
import pytest
import torch

from aworld_rl_v2p.readout import predict_points


def blob(rows, cols, cy, cx, scale=1.0, spread=0.6):
    y, x = np.indices((rows, cols))
    return scale * np.exp(-((y - cy) ** 2 + (x - cx) ** 2) / (2 * spread**2))


def test_single_patch_gives_its_centre():
    attn = np.zeros((4, 5))
    attn[2, 3] = 1.0
    (point,) = predict_points(attn)
    assert (point.x, point.y) == pytest.approx((3.5 / 5, 2.5 / 4))
    assert point.confidence == pytest.approx(1.0) and point.patches == 1


def test_weighted_centroid_of_a_two_patch_region():
    attn = np.array([[0.0, 0.75, 0.25, 0.0]])
    (point,) = predict_points(attn, threshold=0.3)
    # 0.25 > 0.3 * 0.75: both patches, centroid (0.75*1.5 + 0.25*2.5) / 1 / 4 cols
    assert point.x == pytest.approx((0.75 * 1.5 + 0.25 * 2.5) / 4)
    assert point.y == pytest.approx(0.5)


def test_diagonal_patches_are_separate_regions():
    attn = np.array([[0.4, 0.0], [0.0, 0.6]])
    points = predict_points(attn, topk=3)
    assert [round(p.x, 3) for p in points] == [0.75, 0.25]
    # peakedness: (share - 1/4) / (1 - 1/4) for one patch of four
    assert [p.confidence for p in points] == pytest.approx([0.35 / 0.75, 0.15 / 0.75])


def test_max_rule_and_mean_rule_rank_differently():
    attn = np.zeros((1, 9))
    attn[0, 0:3] = [0.2, 0.5, 0.2]  # max .5, mean .3
    attn[0, 5:8] = [0.4, 0.4, 0.4]  # max .4, mean .4
    max_first = predict_points(attn, region_score="max")[0]
    mean_first = predict_points(attn, region_score="mean")[0]
    assert max_first.x == pytest.approx(1.5 / 9)
    assert mean_first.x == pytest.approx(6.5 / 9)


def test_topk_limits_and_orders_blobs():
    attn = blob(20, 30, 5, 5, 1.0) + blob(20, 30, 15, 25, 0.8) + blob(20, 30, 10, 15, 0.6)
    attn = attn / attn.sum()
    points = predict_points(torch.tensor(attn), threshold=0.3, topk=2)
    assert len(points) == 2
    assert (points[0].x, points[0].y) == pytest.approx((5.5 / 30, 5.5 / 20), abs=1e-3)
    assert (points[1].x, points[1].y) == pytest.approx((25.5 / 30, 15.5 / 20), abs=1e-3)
    assert points[0].confidence > points[1].confidence


def test_equal_regions_keep_raster_order():
    attn = np.zeros((3, 3))
    attn[0, 2] = attn[2, 0] = 0.5
    first, second = predict_points(attn)
    assert (first.x, first.y) == pytest.approx((2.5 / 3, 0.5 / 3))
    assert (second.x, second.y) == pytest.approx((0.5 / 3, 2.5 / 3))


def test_to_pixels_stays_on_screen():
    (point,) = predict_points(np.array([[0.0, 1.0]]))
    assert point.to_pixels(200, 100) == (150, 50)


@pytest.mark.parametrize(
    ("attn", "kwargs", "message"),
    [
        (np.zeros((2, 2)), {}, "no positive mass"),
        (np.ones(4), {}, "2-D"),
        (np.array([[np.nan, 1.0]]), {}, "finite"),
        (np.ones((2, 2)), {"threshold": 1.5}, "threshold"),
        (np.ones((2, 2)), {"topk": 0}, "topk"),
        (np.ones((2, 2)), {"region_score": "sum"}, "region_score"),
    ],
)
def test_bad_maps_and_options_are_clear_errors(attn, kwargs, message):
    with pytest.raises(ValueError, match=message):
        predict_points(attn, **kwargs)


def test_a_flat_map_has_zero_confidence_and_a_peaked_one_near_one():
    (flat,) = predict_points(np.full((6, 8), 1 / 48))
    assert flat.patches == 48 and flat.confidence == 0.0  # the region's share was 1.0
    noisy = np.random.default_rng(0).uniform(0.9, 1.1, (6, 8))
    assert predict_points(noisy / noisy.sum())[0].confidence < 0.05
    peaked = np.full((6, 8), 0.01 / 47)
    peaked[2, 3] = 0.99
    assert predict_points(peaked)[0].confidence == pytest.approx((0.99 - 1 / 48) / (1 - 1 / 48))


def test_fallback_moves_a_centroid_that_falls_between_elements():
    # one 4-connected U-shaped region: its weighted centre is the empty middle of the U
    attn = np.zeros((3, 3))
    attn[:, 0] = attn[:, 2] = 0.1
    attn[2, 1] = 0.1
    attn[0, 2] = 0.3  # the peak
    attn /= attn.sum()
    (plain,) = predict_points(attn)
    (moved,) = predict_points(attn, fallback=True)
    assert plain.patches == moved.patches == 7
    cx, cy = int(plain.x * 3), int(plain.y * 3)
    assert attn[cy, cx] == 0  # the released readout points between the region's patches
    assert (moved.x, moved.y) == pytest.approx((2.5 / 3, 0.5 / 3))  # the peak patch
    (inside,) = predict_points(np.array([[0.1, 0.8, 0.1]]), fallback=True)
    assert inside.x == pytest.approx(0.5)  # a centroid on the region is kept as it is
