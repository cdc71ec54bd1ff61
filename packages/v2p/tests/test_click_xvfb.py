"""A real click: Xvfb, a Tk window with a button, pyautogui moving the X pointer."""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aworld_rl_v2p.click import click_instruction
from aworld_rl_v2p.inference import Grounder

TK_APP = r"""
import sys, tkinter as tk
out = open(sys.argv[1], "w", buffering=1)
root = tk.Tk()
root.overrideredirect(True)
root.geometry("320x240+0+0")
def pressed(event):
    out.write(f"press {event.x_root} {event.y_root}\n")
button = tk.Button(root, text="Save", bg="#1976d2", fg="white", font=("sans", 24))
button.bind("<ButtonRelease-1>", pressed)
button.place(x=0, y=0, width=320, height=240)
root.after(300, lambda: out.write("ready\n"))  # mapped and drawn by then
root.after(30000, root.destroy)
root.mainloop()
"""


def _wait_for(path: Path, text: str, seconds: float = 15.0) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        content = path.read_text() if path.exists() else ""
        if text in content:
            return content
        time.sleep(0.05)
    raise AssertionError(f"{text!r} never appeared in {path}: {content!r}")


@pytest.fixture
def xvfb(tmp_path, monkeypatch):
    if shutil.which("Xvfb") is None:
        pytest.skip("Xvfb is not installed (apt-get install xvfb; .ci/run installs it)")
    number = next(n for n in range(90, 200) if not Path(f"/tmp/.X11-unix/X{n}").exists())
    server = subprocess.Popen(
        ["Xvfb", f":{number}", "-screen", "0", "320x240x24", "-nolisten", "tcp"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    socket = Path(f"/tmp/.X11-unix/X{number}")
    deadline = time.monotonic() + 10
    while not socket.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    auth = tmp_path / "Xauthority"
    auth.touch()
    monkeypatch.setenv("DISPLAY", f":{number}")
    monkeypatch.setenv("XAUTHORITY", str(auth))
    yield number
    server.terminate()
    server.wait(timeout=10)


def test_click_presses_a_real_tk_button(xvfb, tmp_path, tiny_v2p):
    model, tokenizer, image_processor = tiny_v2p
    log = tmp_path / "events.txt"
    app = subprocess.Popen([sys.executable, "-c", TK_APP, str(log)], env=os.environ.copy())
    try:
        _wait_for(log, "ready")
        grounder = Grounder(model, tokenizer, image_processor, max_pixels=320 * 240)
        result = click_instruction(grounder, "click the Save button")
        assert result.clicked and result.reason == "clicked"
        content = _wait_for(log, "press")
        x, y = (int(v) for v in content.split("press ")[1].split()[:2])
        assert (x, y) == result.pixels  # the button saw the click where the model pointed
        assert result.pixels == result.point.to_pixels(320, 240)
    finally:
        app.terminate()
        app.wait(timeout=10)


def test_low_confidence_abstains_without_clicking(xvfb, tiny_v2p):
    model, tokenizer, image_processor = tiny_v2p
    grounder = Grounder(model, tokenizer, image_processor, max_pixels=320 * 240)
    result = click_instruction(grounder, "click Save", min_confidence=1.01)
    assert not result.clicked and result.pixels is None and "confidence" in result.reason


def test_fail_safe_stops_the_click_when_the_mouse_is_in_a_corner(xvfb, tiny_v2p):
    from aworld_rl_v2p.click import _pyautogui

    gui = _pyautogui()
    assert gui.FAILSAFE is True
    if "pyautogui._pyautogui_x11" in sys.modules:  # imported under an earlier test's server
        from Xlib.display import Display

        sys.modules["pyautogui._pyautogui_x11"]._display = Display(os.environ["DISPLAY"])
    gui.FAILSAFE = False  # put the mouse in the corner without tripping it ourselves
    gui.moveTo(0, 0)
    model, tokenizer, image_processor = tiny_v2p
    grounder = Grounder(model, tokenizer, image_processor, max_pixels=320 * 240)
    result = click_instruction(grounder, "click Save")  # _pyautogui() turns it back on
    assert not result.clicked and result.reason.startswith("fail-safe")
