import pytest

from aworld_rl_v2p.boxes import (
    detect_format,
    normalize_box,
    point_in_box,
    resized_size,
    to_resized_pixels,
)


def test_each_format_normalises_to_the_same_box():
    size = (200, 100)
    expected = (0.1, 0.2, 0.5, 0.6)
    assert normalize_box((20, 20, 100, 60), "xyxy", size) == pytest.approx(expected)
    assert normalize_box((20, 20, 80, 40), "xywh", size) == pytest.approx(expected)
    assert normalize_box(expected, "xyxy_norm", size) == pytest.approx(expected)
    assert normalize_box((0.1, 0.2, 0.4, 0.4), "xywh_norm", size) == pytest.approx(expected)


def test_rounding_past_the_border_is_clipped_but_outside_is_an_error():
    assert normalize_box((0, 0, 200.6, 100), "xyxy", (200, 100)) == pytest.approx((0, 0, 1, 1))
    with pytest.raises(ValueError, match="not inside the 200x100 image"):
        normalize_box((150, 10, 260, 50), "xyxy", (200, 100))
    with pytest.raises(ValueError, match="unknown box format"):
        normalize_box((0, 0, 1, 1), "cxcywh", (10, 10))


def test_detect_format_from_a_whole_dataset():
    sizes = [(1000, 500)] * 3
    # x2 < x1 in the second box: only xywh explains it
    assert detect_format([(10, 10, 50, 40), (300, 20, 40, 30), (5, 5, 6, 6)], sizes) == "xywh"
    # 900 + 600 would leave the image as xywh
    assert detect_format([(900, 10, 990, 40), (10, 10, 600, 400)], sizes[:2]) == "xyxy"
    assert detect_format([(0.5, 0.1, 0.2, 0.3)], sizes[:1]) == "xywh_norm"
    with pytest.raises(ValueError, match="pass box_format"):
        detect_format([(10, 10, 50, 40)], sizes[:1])  # valid either way
    with pytest.raises(ValueError, match="fit neither"):
        detect_format([(900, 10, 500, 40), (10, 10, 999, 400)], sizes[:2])


def test_smart_resize_matches_qwen_rules():
    assert resized_size(1920, 1080, min_pixels=3136, max_pixels=12845056) == (1932, 1092)
    assert resized_size(1920, 1080, min_pixels=3136, max_pixels=256 * 28 * 28) == (588, 336)
    w, h = resized_size(3200, 1800, min_pixels=3136, max_pixels=5720064)
    assert w % 28 == 0 and h % 28 == 0 and w * h <= 5720064


def test_point_boxes_widen_to_a_pixel():
    assert to_resized_pixels((0.5, 0.5, 0.5, 0.5), (56, 28)) == pytest.approx(
        (27.5, 13.5, 28.5, 14.5)
    )
    assert to_resized_pixels((1.0, 0.0, 1.0, 0.0), (56, 28)) == pytest.approx((55, 0, 56, 1))


def test_point_in_box_includes_edges():
    assert point_in_box((0.1, 0.2), (0.1, 0.2, 0.3, 0.4))
    assert not point_in_box((0.31, 0.2), (0.1, 0.2, 0.3, 0.4))
