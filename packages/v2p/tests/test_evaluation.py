from pathlib import Path

import pytest

from aworld_rl_v2p.data import GroundingSample
from aworld_rl_v2p.evaluation import judge, markdown, summarize
from aworld_rl_v2p.readout import Point


def sample(group, ui_type, box=(0.4, 0.4, 0.6, 0.6), size=(1000, 500)):
    return GroundingSample("id", Path("x.png"), "click", box, size, group, ui_type)


def pt(x, y, c=0.5):
    return Point(x, y, c, c, 1)


def test_hit_edges_top_k_and_corrected_overlap():
    s = sample("web", "text")
    assert judge(s, [pt(0.4, 0.6)]).hit_top1  # edges count
    miss = judge(s, [pt(0.61, 0.5), pt(0.5, 0.5)])
    assert not miss.hit_top1 and miss.hit_topk
    # 0.61 is 10 px right of the box on a 1000 px screenshot: within +-14 px
    assert miss.overlap_top1
    far = judge(s, [pt(0.62, 0.5)])  # 20 px away: no overlap under the corrected rule
    assert not far.overlap_top1
    # (the released rule, +-14 normalised units, would call every point an overlap)


def test_micro_and_macro_averages_by_hand():
    outcomes = (
        [judge(sample("mobile", "text"), [pt(0.5, 0.5)])] * 3
        + [judge(sample("mobile", "icon"), [pt(0.9, 0.9)])]
        + [judge(sample("web", "icon"), [pt(0.9, 0.9)])] * 2
    )
    s = summarize(outcomes)
    assert s["hit_top1_micro"] == pytest.approx(3 / 6)
    assert s["hit_top1_macro"] == pytest.approx((3 / 4 + 0 / 2) / 2)
    assert s["by_group_type"]["mobile/text"]["hit_top1"] == 1.0
    assert s["by_type"]["icon"] == {"samples": 3, "hit_top1": 0.0}
    assert s["by_size"] == {"1-5%": {"samples": 6, "hit_top1": 0.5}}  # each box is 4% of the image


def test_confidence_lets_an_agent_abstain():
    outcomes = [
        judge(sample("web", "text"), [pt(0.5, 0.5, c=0.9)]),
        judge(sample("web", "text"), [pt(0.9, 0.9, c=0.15)]),
    ]
    rows = {r["threshold"]: r for r in summarize(outcomes)["by_confidence"]}
    assert rows[0.0] == {"threshold": 0.0, "coverage": 1.0, "hit_top1": 0.5}
    assert rows[0.2] == {"threshold": 0.2, "coverage": 0.5, "hit_top1": 1.0}
    assert rows[0.9]["coverage"] == 0.5 and rows[0.5]["hit_top1"] == 1.0


def test_markdown_has_both_averages_and_the_sweep():
    s = summarize([judge(sample("web", "text"), [pt(0.5, 0.5)])])
    text = markdown(s, {50176: s, 25088: s})
    assert "| hit_top1 | 100.0 | 100.0 |" in text and "| 25088 | 100.0 | 100.0 |" in text


def test_empty_is_an_error():
    with pytest.raises(ValueError, match="no outcomes"):
        summarize([])


def test_screenspot_pro_is_resized_to_3200x1800_as_the_released_scripts_do():
    from PIL import Image
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    from aworld_rl_v2p.inference import PAPER_MAX_PIXELS, PAPER_MIN_PIXELS
    from aworld_rl_v2p.recipes.evaluate import PRO_PIXELS, resize_to

    shot = Image.new("RGB", (1920, 1080))
    assert resize_to(shot, PRO_PIXELS).size == (3200, 1800)  # upscaled, aspect kept
    assert resize_to(Image.new("RGB", (3840, 2160)), PRO_PIXELS).size == (3200, 1800)
    assert resize_to(shot, 0) is shot  # the native-size flag
    processor = Qwen2VLImageProcessorPil()
    size = {"shortest_edge": PAPER_MIN_PIXELS, "longest_edge": PAPER_MAX_PIXELS}

    def tokens(image):
        grid = processor(images=[image], size=size, return_tensors="pt")["image_grid_thw"][0]
        return int(grid.prod()) // 4

    assert tokens(resize_to(shot, PRO_PIXELS)) == 7296  # the published protocol
    assert tokens(shot) == 2691  # native: what the package evaluated before
