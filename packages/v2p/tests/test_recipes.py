import json

import pytest
from PIL import Image

from aworld_rl_core.testing.contracts import PluginContract, RecipeContract
from aworld_rl_v2p.synthetic import browser_available


class TestPlugin(PluginContract):
    plugin = "v2p"
    expected = {
        "recipes": ["v2p.generate", "v2p.eval", "v2p.click", "v2p.train"],
        "datasets": ["v2p.grounding"],
        "losses": ["v2p.pointer"],
    }


class TestGenerateRecipe(RecipeContract):
    recipe = "v2p.generate"

    def check_result(self, result, run_dir):
        rows = json.loads((run_dir / "data" / "data.json").read_text())
        assert result.metrics["samples"] == len(rows) == 20
        assert result.metrics["renderer"] == ("chromium" if browser_available() else "pil")
        first = rows[0]
        image = Image.open(run_dir / "data" / first["image"])
        assert image.size == tuple(first["img_size"])
        x1, y1, x2, y2 = first["conversations"][1]["bbox_gt"]
        assert 0 <= x1 < x2 <= 1 and 0 <= y1 < y2 <= 1


class TestEvalRecipe(RecipeContract):
    recipe = "v2p.eval"
    run_tiny_cpu = False  # needs a model directory and data: test_eval_tiny_cpu below

    def test_eval_tiny_cpu(self, tmp_path, aworld_home, tiny_v2p_dir, synthetic_dir, tiny_run):
        data = synthetic_dir / "data.json"
        result, run_dir = tiny_run(
            self.recipe, tmp_path, [f"model={tiny_v2p_dir}", f"data.path={data}"]
        )
        rows = [
            json.loads(line) for line in (run_dir / "predictions.jsonl").read_text().splitlines()
        ]
        assert len(rows) == result.metrics["samples"] == len(json.loads(data.read_text()))
        assert all(len(r["points"]) >= 1 for r in rows)
        hits = sum(r["hit_top1"] for r in rows) / len(rows)
        assert result.metrics["hit_top1_micro"] == pytest.approx(hits)
        summary = json.loads((run_dir / "summary.json").read_text())
        assert set(summary["sweep"]) == {"50176", "25088"}
        assert summary["dataset_sha256"]["data.json"]
        report = (run_dir / "report.md").read_text()
        assert "macro (over groups)" in report and summary["dataset_sha256"]["data.json"] in report
        overlays = sorted((run_dir / "overlays").glob("*.png"))
        assert overlays and len(overlays) <= 4


class TestClickRecipe(RecipeContract):
    recipe = "v2p.click"
    run_tiny_cpu = False  # needs a model directory: test_click_dry_run below

    def test_click_dry_run(self, tmp_path, aworld_home, tiny_v2p_dir, synthetic_dir, tiny_run):
        shot = synthetic_dir / "images" / "page00000.png"
        result, run_dir = tiny_run(
            self.recipe, tmp_path, [f"model={tiny_v2p_dir}", f"screenshot={shot}"]
        )
        assert result.metrics["clicked"] == 0.0
        width, height = Image.open(shot).size
        assert result.metrics["pixel_x"] == min(int(result.metrics["x"] * width), width - 1)
        assert 0 <= result.metrics["confidence"] <= 1
        assert Image.open(run_dir / "click.png").size == (width, height)

    def test_empty_instruction_is_an_error(self, tmp_path, aworld_home, tiny_v2p_dir, tiny_run):
        with pytest.raises(ValueError, match="instruction is empty"):
            tiny_run(self.recipe, tmp_path, [f"model={tiny_v2p_dir}", "instruction='  '"])


def test_eval_reads_a_screenspot_v2_folder(
    tmp_path, aworld_home, tiny_v2p_dir, synthetic_dir, tiny_run
):
    rows = json.loads((synthetic_dir / "data.json").read_text())[:6]
    entries = []
    for r in rows:
        w, h = r["img_size"]
        x1, y1, x2, y2 = r["conversations"][1]["bbox_gt"]
        entries.append(
            {
                "img_filename": r["image"].removeprefix("images/"),
                "bbox": [x1 * w, y1 * h, (x2 - x1) * w, (y2 - y1) * h],  # the original xywh
                "instruction": r["conversations"][0]["value"].removeprefix("<image>"),
                "data_type": r["data_type"],
                "data_source": "shop" if len(entries) % 2 else "ios",
            }
        )
    folder = tmp_path / "ScreenSpot-v2"
    folder.mkdir()
    (folder / "screenspot_mixed_v2.json").write_text(json.dumps(entries))
    result, run_dir = tiny_run(
        "v2p.eval",
        tmp_path,
        [
            f"model={tiny_v2p_dir}",
            "data.kind=screenspot_v2",
            f"data.path={folder}",
            f"data.images={synthetic_dir / 'images'}",
            "max_pixels_sweep=[]",
        ],
    )
    summary = json.loads((run_dir / "summary.json").read_text())["summary"]
    assert set(summary["by_group"]) == {"mobile", "web"} and summary["samples"] == 6
    by_group = summary["by_group"]
    macro = (by_group["mobile"]["hit_top1"] + by_group["web"]["hit_top1"]) / 2
    assert result.metrics["hit_top1_macro"] == pytest.approx(macro)


@pytest.mark.parametrize("recipe", ["v2p.eval", "v2p.click"])
def test_an_untrained_head_is_refused_unless_asked(
    recipe, tmp_path, aworld_home, tiny_v2p_dir, synthetic_dir, tiny_run
):
    from aworld_rl_v2p.loading import UntrainedHeadError

    shot = synthetic_dir / "images" / "page00000.png"
    data = [f"data.path={synthetic_dir / 'data.json'}"] if recipe == "v2p.eval" else []
    data = data or [f"screenshot={shot}"]
    with pytest.raises(UntrainedHeadError, match="no trained action head"):
        tiny_run(recipe, tmp_path, [f"model={tiny_v2p_dir}", "allow_untrained_head=false", *data])


def test_click_refuses_a_screenshot_file_on_the_live_screen(
    tmp_path, aworld_home, tiny_v2p_dir, synthetic_dir, tiny_run
):
    shot = synthetic_dir / "images" / "page00000.png"
    with pytest.raises(ValueError, match="never drives the live screen"):
        tiny_run(
            "v2p.click", tmp_path, [f"model={tiny_v2p_dir}", f"screenshot={shot}", "dry_run=false"]
        )
