"""The executor: screenshot -> V2P point -> screen pixels -> a real click with pyautogui.

pyautogui is imported only when a click happens (it needs an X display at import time).
``dry_run`` draws the point on the screenshot instead of clicking; a screenshot passed in
(a file) is only ever a dry run, never a click on the live screen at the file's coordinates.
A point whose confidence (how peaked the map is at its region, calibrated to p(hit) when the
grounder has a calibration) is below ``min_confidence`` is not clicked: the agent abstains; a
flat map has confidence 0. pyautogui's fail-safe stays on (moving the mouse into a screen
corner stops the clicks); a point on a corner pixel is moved one pixel inwards so our own
click never trips it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aworld_rl_v2p.readout import Point


@dataclass(frozen=True)
class ClickResult:
    point: Point | None
    pixels: tuple[int, int] | None  # on the screen (or the screenshot in a dry run)
    clicked: bool
    reason: str


def grab_screen() -> Any:
    """A screenshot of the X display in ``$DISPLAY`` (Pillow's XCB grabber, no scrot needed)."""
    from PIL import ImageGrab

    try:
        return ImageGrab.grab()
    except OSError as exc:
        raise RuntimeError(
            f"cannot take a screenshot ({exc}): set DISPLAY to a running X server (for example "
            "xvfb-run), or pass a screenshot file and dry_run=true"
        ) from None


def screen_size() -> tuple[int, int]:
    width, height = _pyautogui().size()
    return int(width), int(height)


def click_instruction(
    grounder: Any,
    instruction: str,
    *,
    screenshot: Any = None,
    dry_run: bool = False,
    min_confidence: float = 0.0,
    overlay: Path | None = None,
) -> ClickResult:
    """Ground ``instruction`` on ``screenshot`` (default: the screen) and click the top point.

    A ``screenshot`` given here is not the live screen: it needs ``dry_run=True``.
    """
    if screenshot is not None and not dry_run:
        raise ValueError(
            "a screenshot file never drives the live screen (its coordinates are not the "
            "screen's): set dry_run=true, or give no screenshot to ground on the live screen"
        )
    image = screenshot if screenshot is not None else grab_screen()
    (grounding,) = grounder.predict([image], [instruction])
    point = grounding.points[0]
    if overlay is not None:
        from aworld_rl_v2p.overlay import draw_overlay

        draw_overlay(image, grounding.attention, overlay, points=grounding.points)
    if point.confidence < min_confidence:
        return ClickResult(
            point, None, False, f"confidence {point.confidence:.3f} < {min_confidence}"
        )
    if dry_run:
        return ClickResult(point, point.to_pixels(*image.size), False, "dry run")
    width, height = screen_size()  # the screenshot may be scaled (HiDPI): click in screen pixels
    px, py = point.to_pixels(width, height)
    x, y = away_from_corners(px, py, width, height)
    gui = _pyautogui()
    try:
        gui.click(x, y)
    except gui.FailSafeException:
        return ClickResult(point, None, False, "fail-safe: the mouse is in a screen corner")
    return ClickResult(point, (x, y), True, "clicked")


def away_from_corners(x: int, y: int, width: int, height: int) -> tuple[int, int]:
    """The point, moved one pixel inwards if it is a screen corner (pyautogui's fail-safe)."""
    if x in (0, width - 1) and y in (0, height - 1):
        x = 1 if x == 0 else width - 2
        y = 1 if y == 0 else height - 2
    return x, y


def _pyautogui() -> Any:
    try:
        import pyautogui
    except KeyError as exc:  # mouseinfo reads os.environ["DISPLAY"] at import
        raise RuntimeError(f"pyautogui needs an X display: {exc} is not set") from None
    except ImportError:
        raise ImportError("clicking needs pyautogui: pip install 'aworld-rl-v2p[click]'") from None
    pyautogui.FAILSAFE = True  # the user's way out: the mouse into a corner stops the clicks
    return pyautogui
