import json
import random

import pytest
from PIL import Image

from aworld_rl_v2p.synthetic import COLORS, GenerateOptions, browser_available, generate, make_page

needs_browser = pytest.mark.skipif(
    not browser_available(), reason="chromium + chromedriver not installed"
)


def colour_at(image, box):
    x1, y1, x2, y2 = box
    w, h = image.size
    return image.getpixel((int((x1 + x2) / 2 * w), int((y1 + y2) / 2 * h)))


def hex_rgb(value):
    return tuple(int(value[i : i + 2], 16) for i in (1, 3, 5))


@needs_browser
def test_chromium_boxes_come_from_the_dom(synthetic_dir):
    rows = json.loads((synthetic_dir / "data.json").read_text())
    assert len(rows) == 20
    checked = 0
    for row in rows:
        image = Image.open(synthetic_dir / row["image"]).convert("RGB")
        assert image.size == tuple(row["img_size"])
        text = row["conversations"][0]["value"]
        box = row["conversations"][1]["bbox_gt"]
        for name, value in COLORS.items():  # an icon's colour is in its instruction
            if row["data_type"] == "icon" and f" {name} " in f" {text} ":
                got = colour_at(image, box)
                assert max(abs(a - b) for a, b in zip(got, hex_rgb(value), strict=True)) < 40
                checked += 1
    assert checked >= 1  # the box centre is painted in the element's colour


@needs_browser
def test_same_seed_same_pages_and_boxes(tmp_path):
    options = GenerateOptions(pages=3, seed=7, resolutions=((392, 280),))
    generate(tmp_path / "a", options)
    generate(tmp_path / "b", options)
    assert (tmp_path / "a" / "data.json").read_text() == (tmp_path / "b" / "data.json").read_text()


def test_pil_fallback_writes_the_same_format(tmp_path):
    summary = generate(tmp_path, GenerateOptions(pages=5, renderer="pil", seed=3))
    rows = json.loads((tmp_path / "data.json").read_text())
    assert summary == {"pages": 5, "samples": len(rows), "renderer": "pil"}
    for row in rows:
        x1, y1, x2, y2 = row["conversations"][1]["bbox_gt"]
        cx, cy = (x1 + x2) / 2, (y1 + y2) / 2
        assert row["conversations"][1]["value"] == f"pyautogui.click(x={cx:.4f}, y={cy:.4f})"
        assert 0 <= x1 < x2 <= 1 and 0 <= y1 < y2 <= 1


def test_every_layout_renders_html_with_its_elements():
    for layout in ("form", "toolbar", "menu", "icons", "desktop"):
        page = make_page(random.Random(0), layout, 640, 400)
        assert page.html.count("data-v2p=") == len(page.elements) >= 4
    with pytest.raises(ValueError, match="unknown layout"):
        make_page(random.Random(0), "wizard", 640, 400)


def test_a_capture_aborted_by_a_navigation_loads_the_page_again():
    """CI saw chromium time out one capture ("aborted by navigation"); the renderer reloads."""
    pytest.importorskip("selenium")
    from selenium.common.exceptions import TimeoutException

    from aworld_rl_v2p.synthetic import _screenshot

    class FlakyDriver:  # test double of selenium's driver: the first `fails` captures time out
        def __init__(self, fails):
            self.fails, self.loads = fails, []

        def get(self, url):
            self.loads.append(url)

        def execute_cdp_cmd(self, cmd, params):
            assert (cmd, params) == ("Page.captureScreenshot", {"format": "png"})
            if len(self.loads) <= self.fails:
                raise TimeoutException("timeout from aborted by navigation")
            return {"data": "UE5H"}

    driver = FlakyDriver(fails=1)
    assert _screenshot(driver, "data:x") == "UE5H"
    assert driver.loads == ["data:x", "data:x"]
    with pytest.raises(TimeoutException):
        _screenshot(FlakyDriver(fails=3), "data:x")
