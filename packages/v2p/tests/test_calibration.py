import numpy as np
import pytest

from aworld_rl_v2p.calibration import Calibration, find, fit, reliability
from aworld_rl_v2p.click import away_from_corners, click_instruction
from aworld_rl_v2p.inference import Grounding
from aworld_rl_v2p.readout import predict_points


def test_platt_fit_recovers_known_parameters():
    rng = np.random.default_rng(0)
    conf = rng.uniform(0, 1, 20000)
    truth = Calibration(a=6.0, b=-3.0)
    hits = rng.uniform(size=conf.size) < np.array([truth.apply(c) for c in conf])
    calib = fit(conf, hits)
    assert (calib.a, calib.b) == pytest.approx((6.0, -3.0), abs=0.2)
    rows = reliability(list(conf), list(hits), calib)
    assert all(abs(r["predicted"] - r["observed"]) < 0.03 for r in rows)


def test_calibration_round_trip(tmp_path):
    Calibration(a=2.0, b=-1.0, samples=7).save(tmp_path / "calibration.json")
    assert find(tmp_path) == Calibration(2.0, -1.0, 7)
    assert find(tmp_path / "nothing") is None
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "calibration.json").write_text("{}")
    with pytest.raises(ValueError, match="not a calibration file"):
        find(tmp_path / "bad")


class FlatGrounder:
    """A grounder whose map is flat: an untrained head's."""

    def predict(self, images, instructions):
        attn = np.full((4, 6), 1 / 24)
        return [Grounding(predict_points(attn), attn, (168, 112)) for _ in images]


def test_a_flat_map_abstains(monkeypatch):
    import aworld_rl_v2p.click as click

    monkeypatch.setattr(
        click, "grab_screen", lambda: __import__("PIL.Image").Image.new("RGB", (168, 112))
    )
    monkeypatch.setattr(click, "_pyautogui", lambda: pytest.fail("a flat map must not click"))
    result = click_instruction(FlatGrounder(), "click Save", min_confidence=0.2)
    assert not result.clicked and result.pixels is None
    assert result.reason == "confidence 0.000 < 0.2"


def test_a_file_screenshot_never_clicks():
    from PIL import Image

    with pytest.raises(ValueError, match="never drives the live screen"):
        click_instruction(FlatGrounder(), "click", screenshot=Image.new("RGB", (8, 8)))
    dry = click_instruction(
        FlatGrounder(), "click", screenshot=Image.new("RGB", (8, 8)), dry_run=True
    )
    assert dry.reason == "dry run" and not dry.clicked


def test_corner_points_move_inwards_so_the_fail_safe_is_not_tripped():
    assert away_from_corners(0, 0, 320, 240) == (1, 1)
    assert away_from_corners(319, 239, 320, 240) == (318, 238)
    assert away_from_corners(0, 100, 320, 240) == (0, 100)  # an edge is not a corner
