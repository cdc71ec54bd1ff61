"""kill -9 of a process rendering with chromium leaves no browser behind (issue 29, item 7):
main orphaned chromedriver and every chromium process (976 MiB)."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from aworld_rl_v2p.synthetic import browser_available

pytestmark = pytest.mark.skipif(
    not browser_available() or not sys.platform.startswith("linux"),
    reason="chromium + chromedriver not installed (or not Linux)",
)

RENDERING = textwrap.dedent(
    """
    import random, sys, time
    from pathlib import Path
    from aworld_rl_v2p.synthetic import ChromiumRenderer, make_page

    out = Path(sys.argv[1])
    renderer = ChromiumRenderer()
    renderer.render(make_page(random.Random(0), "form", 320, 240), out / "page.png")
    (out / "driver").write_text(str(renderer.driver.service.process.pid))
    while True:  # rendering on, until killed
        renderer.render(make_page(random.Random(1), "menu", 320, 240), out / "page.png")
        time.sleep(0.2)
    """
)


def group_members(group: int) -> list[int]:
    """Live (non-zombie) processes in process group ``group``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def test_kill_9_while_rendering_ends_chromedriver_and_chromium(tmp_path):
    script = tmp_path / "render.py"
    script.write_text(RENDERING)
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path)], stderr=subprocess.PIPE)
    group = None
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "driver").exists():
            assert proc.poll() is None, proc.stderr.read().decode()[-3000:]
            assert time.monotonic() < deadline, "chromium never rendered a page"
            time.sleep(0.1)
        group = int((tmp_path / "driver").read_text())
        browser = group_members(group)
        assert group in browser and len(browser) >= 3  # chromedriver, chromium and its helpers
        os.kill(proc.pid, signal.SIGKILL)  # a real kill -9: no close(), no atexit
        proc.wait(timeout=30)
        deadline = time.monotonic() + 30
        while group_members(group) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert group_members(group) == []
    finally:
        proc.kill()
        if group is not None and group_members(group):
            os.killpg(group, signal.SIGKILL)
