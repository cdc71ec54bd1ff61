import json
from collections import Counter
from pathlib import Path

import pytest
from PIL import Image

from aworld_rl_v2p.data import GroundingSample, file_hashes, read, read_aguvis, sample_across
from aworld_rl_v2p.evaluation import judge
from aworld_rl_v2p.readout import Point
from aworld_rl_v2p.training import to_record


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
    skipped = Counter()
    assert read("screenspot_pro", tmp_path, skipped=skipped) == []  # no image file yet
    assert skipped == {"image file missing": 1}
    blank(tmp_path / "images" / "vscode" / "1.png", (8, 8))
    (sample,) = read("screenspot_pro", tmp_path)
    assert sample.id == "v1" and sample.group == "Dev" and sample.source == "vscode"
    assert sample.image == tmp_path / "images" / "vscode" / "1.png"
    assert sample.box == pytest.approx((10 / 3840, 20 / 2160, 110 / 3840, 60 / 2160))
    assert set(file_hashes(tmp_path)) == {"annotations/vscode_windows.json"}


def test_bad_rows_are_skipped_and_counted_by_reason(tmp_path):
    ok = {
        "img_filename": "a.png",
        "bbox": [10, 20, 50, 60],
        "instruction": "x",
        "img_size": [3840, 2160],
    }
    rows = [
        ok,
        {**ok, "bbox": [10, 20, 5000, 60]},  # past the right edge
        {**ok, "bbox": [10, 20, 10, 60]},  # no area
        {**ok, "instruction": ""},
    ]
    write(tmp_path / "annotations" / "mixed.json", rows)
    blank(tmp_path / "images" / "a.png", (8, 8))
    skipped = Counter()
    (sample,) = read("screenspot_pro", tmp_path, skipped=skipped)
    assert sample.box == pytest.approx((10 / 3840, 20 / 2160, 50 / 3840, 60 / 2160))
    assert skipped == {
        "box outside the image or without area": 2,
        "no img_filename, bbox or instruction": 1,
    }


def aguvis_row(x=0.3, image="s.png"):
    return {
        "image": image,
        "conversations": [
            {"from": "human", "value": "<image>click ok"},
            {
                "from": "gpt",
                "value": f"pyautogui.click(x={x}, y=0.4)",
                "bbox_gt": [0.2, 0.3, 0.4, 0.5],
            },
        ],
    }


def test_aguvis_rows_and_a_click_outside_its_box_is_skipped(tmp_path):
    blank(tmp_path / "s.png", (100, 50))
    (sample,) = read("aguvis", write(tmp_path / "train.json", [aguvis_row()]))
    assert sample.instruction == "click ok" and sample.box == pytest.approx((0.2, 0.3, 0.4, 0.5))
    skipped = Counter()
    rows = [aguvis_row(), aguvis_row(x=0.9), aguvis_row(image="gone.png"), {"image": ""}]
    assert len(read("aguvis", write(tmp_path / "bad.json", rows), skipped=skipped)) == 1
    assert skipped == {"click outside its bbox_gt": 1, "image file missing": 1, "no image": 1}


def test_multi_turn_conversations_are_kept_whole(tmp_path):
    blank(tmp_path / "s.png", (100, 50))
    row = aguvis_row()
    row["conversations"] += [
        {"from": "human", "value": "then cancel"},
        {"from": "gpt", "value": "pyautogui.click(x=0.7, y=0.8)", "bbox_gt": [0.6, 0.7, 0.8, 0.9]},
    ]
    turns = read_aguvis(write(tmp_path / "mt.json", [row]))
    assert [t.instruction for t in turns] == ["click ok", "then cancel"]  # evaluation: per turn
    (whole,) = read_aguvis(tmp_path / "mt.json", whole=True)
    assert whole.instruction == "then cancel" and whole.box == pytest.approx((0.6, 0.7, 0.8, 0.9))
    assert whole.history == (("click ok", pytest.approx((0.2, 0.3, 0.4, 0.5))),)
    record = to_record(whole)
    roles = [m["role"] for m in record["messages"]]
    assert roles == ["system", "user", "assistant", "user", "assistant"]
    assert record["pointer_boxes"] == [
        pytest.approx([0.2, 0.3, 0.4, 0.5]),
        pytest.approx([0.6, 0.7, 0.8, 0.9]),
    ]
    assert record["messages"][3]["content"] == [{"type": "text", "text": "then cancel"}]


def test_limit_samples_across_platforms():
    def s(i, group):
        return GroundingSample(f"{group}{i}", Path("x.png"), "x", (0, 0, 1, 1), (8, 8), group=group)

    samples = (
        [s(i, "desktop") for i in range(10)]
        + [s(i, "mobile") for i in range(3)]
        + [s(i, "web") for i in range(5)]
    )
    chosen = sample_across(samples, 6, seed=0)
    assert Counter(c.group for c in chosen) == {"desktop": 2, "mobile": 2, "web": 2}
    assert chosen == sample_across(samples, 6, seed=0)  # deterministic
    assert [samples.index(c) for c in chosen] == sorted(samples.index(c) for c in chosen)
    assert Counter(c.group for c in sample_across(samples, 12)) == {
        "desktop": 5,
        "mobile": 3,
        "web": 4,
    }
    assert sample_across(samples, None) == samples
    with pytest.raises(ValueError, match="0 no longer means all"):
        sample_across(samples, 0)


def test_screenspot_v2_parquet_in_the_hub_schema(tmp_path):
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq
    from PIL import Image

    def png(size):
        buf = io.BytesIO()
        Image.new("RGB", size).save(buf, format="PNG")
        return buf.getvalue()

    table = pa.table(
        {
            "image": [
                {"bytes": png((200, 100)), "path": "m1.png"},
                {"bytes": png((400, 300)), "path": "w1.png"},
            ],
            "instruction": ["open menu", "search"],
            "bbox": [[100.0, 10.0, 160.0, 30.0], [240.0, 30.0, 360.0, 90.0]],  # xyxy px
            "data_type": ["icon", "text"],
            "data_source": ["android", "shop"],
        }
    )
    file = tmp_path / "test-00000-of-00001.parquet"
    pq.write_table(table, file)
    a, b = read("screenspot_v2_parquet", file)
    assert (a.group, a.ui_type, a.source, a.image_size) == ("mobile", "icon", "android", (200, 100))
    assert a.box == pytest.approx((0.5, 0.1, 0.8, 0.3)) and a.image.is_file()
    assert b.group == "web" and b.box == pytest.approx((0.6, 0.1, 0.9, 0.3))
    assert Image.open(b.image).size == (400, 300)


def test_osworld_g_bbox_polygon_and_refusal(tmp_path):
    rows = [
        {
            "id": "b",
            "image_path": "1.png",
            "image_size": [1000, 500],
            "instruction": "ok",
            "box_type": "bbox",
            "box_coordinates": [100, 50, 200, 100],
            "GUI_types": ["Button"],
        },
        {
            "id": "p",
            "image_path": "1.png",
            "image_size": [1000, 500],
            "instruction": "tri",
            "box_type": "polygon",
            "box_coordinates": [0, 0, 400, 0, 0, 400],
            "GUI_types": [],
        },
        {
            "id": "r",
            "image_path": "1.png",
            "image_size": [1000, 500],
            "instruction": "none",
            "box_type": "refusal",
            "box_coordinates": [],
            "GUI_types": [],
        },
    ]
    skipped = Counter()
    b, p = read("osworld_g", write(tmp_path / "OSWorld-G.json", rows), skipped=skipped)
    assert skipped == {"refusal (nothing to click)": 1}
    assert b.box == pytest.approx((0.1, 0.1, 0.3, 0.3)) and b.group == "Button"
    assert p.polygon == pytest.approx((0, 0, 0.4, 0, 0, 0.8)) and p.box == pytest.approx(
        (0, 0, 0.4, 0.8)
    )

    def pt(x, y):
        return Point(x=x, y=y, confidence=1.0, score=1.0, patches=1)

    # (0.3, 0.5) is in the triangle's bounding box but not in the triangle
    assert judge(p, [pt(0.1, 0.2)]).hit_top1 and not judge(p, [pt(0.3, 0.5)]).hit_top1


def test_missing_paths_and_kinds_are_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="not found"):
        read("screenspot_v2", tmp_path / "nowhere")
    with pytest.raises(ValueError, match="unknown dataset kind"):
        read("mind2web", tmp_path)
    with pytest.raises(FileNotFoundError, match="no screenspot_"):
        read("screenspot", tmp_path)
