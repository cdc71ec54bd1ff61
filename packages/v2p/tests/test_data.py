import json

import pytest
from PIL import Image

from aworld_rl_v2p.data import file_hashes, read


def write(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rows))
    return path


def blank(path, size):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size).save(path)


def test_screenspot_v1_xywh_with_domains_from_file_names(tmp_path):
    rows = [
        {
            "img_filename": "a.png",
            "bbox": [100, 50, 40, 20],
            "instruction": "open",
            "data_type": "text",
            "data_source": "ios",
        },
        {
            "img_filename": "a.png",
            "bbox": [300, 10, 10, 10],
            "instruction": "x",
            "data_type": "icon",
            "data_source": "android",
        },
        {
            "img_filename": "a.png",
            "bbox": [390, 190, 10, 10],
            "instruction": "y",
            "data_type": "icon",
            "data_source": "ios",
        },
    ]
    write(tmp_path / "screenspot_mobile.json", rows)
    blank(tmp_path / "images" / "a.png", (400, 200))
    samples = read("screenspot", tmp_path)
    assert [s.group for s in samples] == ["mobile"] * 3
    assert samples[0].box == pytest.approx((0.25, 0.25, 0.35, 0.35))
    assert samples[0].image == tmp_path / "images" / "a.png" and samples[0].image_size == (400, 200)
    assert [s.ui_type for s in samples] == ["text", "icon", "icon"]


def test_screenspot_v2_reexport_in_xyxy_is_detected(tmp_path):
    rows = [
        {
            "img_filename": "p.png",
            "bbox": [910, 78, 954, 112],
            "instruction": "close",
            "img_size": [960, 540],
            "platform": "windows",
            "ui_type": "icon",
            "group": "desktop",
        },
        {
            "img_filename": "p.png",
            "bbox": [1, 434, 68, 500],
            "instruction": "help",
            "img_size": [960, 540],
            "platform": "windows",
            "ui_type": "text",
            "group": "desktop",
        },
    ]
    write(tmp_path / "screenspot_desktop_v2.json", rows)
    (sample, _) = read("screenspot_v2", tmp_path)
    assert sample.box == pytest.approx((910 / 960, 78 / 540, 954 / 960, 112 / 540))
    assert sample.group == "desktop" and sample.ui_type == "icon"


def test_screenspot_pro_groups_and_pixel_boxes(tmp_path):
    rows = [
        {
            "img_filename": "vscode/1.png",
            "bbox": [10, 20, 110, 60],
            "instruction": "run",
            "id": "v1",
            "application": "vscode",
            "platform": "windows",
            "img_size": [3840, 2160],
            "ui_type": "icon",
            "group": "Dev",
        },
    ]
    write(tmp_path / "annotations" / "vscode_windows.json", rows)
    (sample,) = read("screenspot_pro", tmp_path)
    assert sample.id == "v1" and sample.group == "Dev" and sample.source == "vscode"
    assert sample.image == tmp_path / "images" / "vscode" / "1.png"
    assert sample.box == pytest.approx((10 / 3840, 20 / 2160, 110 / 3840, 60 / 2160))
    assert set(file_hashes(tmp_path)) == {"annotations/vscode_windows.json"}


def test_box_outside_the_image_names_the_entry(tmp_path):
    rows = [
        {
            "img_filename": "a.png",
            "bbox": [10, 20, 5000, 60],
            "instruction": "x",
            "img_size": [3840, 2160],
        }
    ]
    write(tmp_path / "annotations" / "bad.json", rows)
    with pytest.raises(ValueError, match="bad.json: entry 0: box"):
        read("screenspot_pro", tmp_path)


def test_aguvis_rows_and_click_outside_box_is_an_error(tmp_path):
    good = {
        "image": "s.png",
        "conversations": [
            {"from": "human", "value": "<image>click ok"},
            {
                "from": "gpt",
                "value": "pyautogui.click(x=0.3, y=0.4)",
                "bbox_gt": [0.2, 0.3, 0.4, 0.5],
            },
        ],
    }
    blank(tmp_path / "s.png", (100, 50))
    (sample,) = read("aguvis", write(tmp_path / "train.json", [good]))
    assert sample.instruction == "click ok" and sample.box == pytest.approx((0.2, 0.3, 0.4, 0.5))
    good["conversations"][1]["value"] = "pyautogui.click(x=0.9, y=0.4)"
    with pytest.raises(ValueError, match="outside bbox_gt"):
        read("aguvis", write(tmp_path / "bad.json", [good]))


def test_missing_paths_and_kinds_are_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="not found"):
        read("screenspot_v2", tmp_path / "nowhere")
    with pytest.raises(ValueError, match="unknown dataset kind"):
        read("mind2web", tmp_path)
    with pytest.raises(FileNotFoundError, match="no screenspot_"):
        read("screenspot", tmp_path)
