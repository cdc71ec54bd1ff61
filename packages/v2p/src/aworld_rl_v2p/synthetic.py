"""A synthetic GUI grounding dataset: seeded HTML pages rendered by a real browser.

Each page is one of five layouts (form, toolbar, menu, icon grid, dense desktop) at one of the
configured resolutions. Chromium (Debian's ``chromium`` + ``chromium-driver``, driven by
selenium) lays the page out; the boxes of the clickable elements are read from the DOM
(``getBoundingClientRect``) and the screenshot is taken at exactly the viewport size. Without
a browser the PIL renderer draws comparable pages itself. Instructions come from the
elements' text, role, colour and position.

Samples are written as GUI-Actor/AGUVIS JSON (``data.json`` + ``images/``), the format the
training reader takes: ``pyautogui.click(x=, y=)`` at the box centre and ``bbox_gt`` normalised.
"""

from __future__ import annotations

import html
import json
import random
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from aworld_rl_core.children import reap_group_with_parent, release, tethered_popen_kwargs

LAYOUTS = ("form", "toolbar", "menu", "icons", "desktop")
Renderer = Literal["auto", "chromium", "pil"]
WORDS = [
    "Save",
    "Open",
    "Close",
    "Print",
    "Share",
    "Export",
    "Import",
    "Undo",
    "Redo",
    "Search",
    "Help",
    "Settings",
    "Login",
    "Logout",
    "Submit",
    "Cancel",
    "Delete",
    "Rename",
    "Copy",
    "Paste",
    "Upload",
    "Download",
    "Refresh",
    "Back",
    "Next",
    "Finish",
    "Send",
    "Reply",
    "Archive",
    "Filter",
    "Sort",
    "Zoom",
    "Edit",
    "View",
    "Insert",
    "Format",
    "Tools",
    "Window",
    "Profile",
    "Cart",
    "Checkout",
    "Home",
]
COLORS = {
    "red": "#d32f2f",
    "green": "#388e3c",
    "blue": "#1976d2",
    "orange": "#f57c00",
    "purple": "#7b1fa2",
    "teal": "#00897b",
    "pink": "#c2185b",
    "brown": "#5d4037",
}
SHAPES = ("square", "circle")


@dataclass(frozen=True)
class Element:
    """A clickable element: what an instruction can say about it, and where it is."""

    role: str  # button / link / textbox / checkbox / menu item / icon
    text: str
    color: str
    box: tuple[float, float, float, float]  # pixels, xyxy
    kind: str = "text"  # ScreenSpot's data_type: text or icon


@dataclass(frozen=True)
class Page:
    layout: str
    width: int
    height: int
    html: str
    elements: list[Element] = field(default_factory=list)


def make_page(rng: random.Random, layout: str, width: int, height: int) -> Page:
    """A seeded page (HTML and what the PIL renderer needs); boxes come from rendering."""
    words = rng.sample(WORDS, 12)
    colors = rng.sample(list(COLORS), len(COLORS))
    items: list[tuple[str, str, str, str]] = []  # role, text, colour, kind
    if layout == "form":
        items = [("textbox", w, "gray", "text") for w in words[:3]]
        items += [("checkbox", words[3], "gray", "text")]
        items += [("button", w, c, "text") for w, c in zip(words[4:6], colors, strict=False)]
    elif layout == "toolbar":
        items = [("button", w, c, "text") for w, c in zip(words[:6], colors, strict=False)]
        items += [("link", w, "none", "text") for w in words[6:8]]
    elif layout == "menu":
        items = [("menu item", w, "gray", "text") for w in words[:7]]
    elif layout == "icons":
        items = [
            ("icon", f"{c} {rng.choice(SHAPES)}", c, "icon") for c in colors[: rng.randint(4, 8)]
        ]
    elif layout == "desktop":
        items = [("button", w, c, "text") for w, c in zip(words[:4], colors, strict=False)]
        items += [("icon", f"{c} {rng.choice(SHAPES)}", c, "icon") for c in colors[4:8]]
        items += [("link", w, "none", "text") for w in words[8:12]]
    else:
        raise ValueError(f"unknown layout {layout!r}: use one of {', '.join(LAYOUTS)}")
    rng.shuffle(items)
    scale = max(0.6, min(width, height) / 400)
    body = "".join(
        _html_item(i, role, text, color, kind) for i, (role, text, color, kind) in enumerate(items)
    )
    page = _PAGE.format(
        font=round(14 * scale),
        pad=round(8 * scale),
        icon=round(36 * scale),
        columns=rng.choice((2, 3, 4)) if layout in ("icons", "desktop") else 1,
        direction="row" if layout in ("toolbar",) else "column",
        justify=rng.choice(("flex-start", "center", "space-between", "flex-end")),
        align=rng.choice(("flex-start", "center", "flex-end")),
        margin=rng.randint(0, max(1, height // 4)),
        body=body,
        layout=layout,
    )
    placeholders = [
        Element(role, text, color, (0, 0, 0, 0), kind) for role, text, color, kind in items
    ]
    return Page(layout, width, height, page, placeholders)


_PAGE = """<!doctype html><html><head><meta charset="utf-8"><style>
html, body {{ margin: 0; height: 100%; background: #f4f4f4; font: {font}px sans-serif;
  overflow: hidden; }}
#page {{ display: flex; flex-direction: {direction}; flex-wrap: wrap; justify-content: {justify};
  align-items: {align}; gap: {pad}px; padding: {pad}px; margin-top: {margin}px; }}
.icons, .desktop {{ display: grid !important; grid-template-columns: repeat({columns}, auto); }}
.t {{ padding: {pad}px; border-radius: 4px; color: white; cursor: pointer; }}
.button {{ border: none; font: inherit; }}
.link {{ color: #1565c0 !important; text-decoration: underline; }}
.textbox {{ color: #333 !important; background: white; border: 1px solid #888; min-width: 8em; }}
.checkbox {{ color: #333 !important; }}
.menu-item {{ color: #222 !important; background: #e0e0e0; min-width: 10em; }}
.icon {{ width: {icon}px; height: {icon}px; padding: 0; }}
.circle {{ border-radius: 50%; }}
</style></head><body><div id="page" class="{layout}">{body}</div></body></html>"""


def _html_item(i: int, role: str, text: str, color: str, kind: str) -> str:
    css = role.replace(" ", "-")
    attrs = f'data-v2p="{i}" class="t {css}'
    if kind == "icon":
        shape = text.split()[-1]
        title = html.escape(text)
        return f'<div {attrs} {shape}" style="background:{COLORS[color]}" title="{title}"></div>'
    style = f' style="background:{COLORS[color]}"' if color in COLORS else ""
    label = html.escape(text)
    if role == "textbox":
        return f'<div {attrs}"{style}>{label}...</div>'
    if role == "checkbox":
        return f'<label {attrs}"{style}>&#9744; {label}</label>'
    tag = "button" if role == "button" else "div"
    return f'<{tag} {attrs}"{style}>{label}</{tag}>'


_BOXES_JS = """
return Array.from(document.querySelectorAll('[data-v2p]')).map(e => {
  const r = e.getBoundingClientRect();
  return [Number(e.dataset.v2p), r.left, r.top, r.right, r.bottom];
});"""


def _screenshot(driver: Any, url: str, attempts: int = 3) -> str:
    """Load ``url`` and capture it (base64 PNG). Headless chromium now and then aborts the
    capture as racing a navigation ("timeout from aborted by navigation"): load it again."""
    from selenium.common.exceptions import TimeoutException

    for attempt in range(attempts):
        driver.get(url)
        try:
            return str(driver.execute_cdp_cmd("Page.captureScreenshot", {"format": "png"})["data"])
        except TimeoutException:
            if attempt == attempts - 1:
                raise
    raise ValueError(f"attempts must be >= 1, got {attempts}")


class ChromiumRenderer:
    """Headless chromium through selenium (one browser for many pages)."""

    name = "chromium"

    def __init__(self, binary: str | None = None, driver: str | None = None) -> None:
        from selenium import webdriver

        options = webdriver.ChromeOptions()
        for arg in (
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
        ):
            options.add_argument(arg)
        options.binary_location = binary or _which("chromium", "chromium-browser", "google-chrome")
        self.service = _tethered_service(  # chromedriver and chromium die with this process
            executable_path=driver or _which("chromedriver"), popen_kw=tethered_popen_kwargs()
        )
        self.driver = webdriver.Chrome(options=options, service=self.service)

    def render(self, page: Page, path: Path) -> list[Element]:
        import base64

        d = self.driver
        d.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": page.width, "height": page.height, "deviceScaleFactor": 1, "mobile": False},
        )
        url = "data:text/html;base64," + base64.b64encode(page.html.encode()).decode()
        path.write_bytes(base64.b64decode(_screenshot(d, url)))
        out = []
        for index, x1, y1, x2, y2 in d.execute_script(_BOXES_JS):
            el = page.elements[int(index)]
            box = (
                max(0.0, x1),
                max(0.0, y1),
                min(float(page.width), x2),
                min(float(page.height), y2),
            )
            if box[2] - box[0] >= 2 and box[3] - box[1] >= 2:  # visible on the page
                out.append(Element(el.role, el.text, el.color, box, el.kind))
        return out

    def close(self) -> None:
        self.driver.quit()
        release(self.service.watchdog)


def _tethered_service(**kwargs: Any) -> Any:
    """selenium's chromedriver service, whose process group (chromedriver and the chromium it
    starts) a watchdog kills when this process dies, kill -9 included (core's ``children``)."""
    from selenium.webdriver.chrome.service import Service

    class TetheredService(Service):
        def start(self) -> None:
            super().start()  # before the session starts chromium: no window to orphan it
            self.watchdog = reap_group_with_parent(self.process.pid)

    return TetheredService(**kwargs)


class PilRenderer:
    """No browser: draws the page's elements itself in a simple flow layout."""

    name = "pil"

    def render(self, page: Page, path: Path) -> list[Element]:
        from PIL import Image, ImageDraw

        img = Image.new("RGB", (page.width, page.height), (244, 244, 244))
        draw = ImageDraw.Draw(img)
        scale = max(0.6, min(page.width, page.height) / 400)
        pad, x, y, row = round(8 * scale), round(8 * scale), round(8 * scale), 0
        out = []
        for el in page.elements:
            w = round(36 * scale) if el.kind == "icon" else round((len(el.text) * 8 + 24) * scale)
            h = round(36 * scale) if el.kind == "icon" else round(30 * scale)
            if x + w > page.width - pad:
                x, y = pad, y + row + pad
                row = 0
            if y + h > page.height:
                break
            fill = COLORS.get(el.color, "#e0e0e0")
            box = (float(x), float(y), float(x + w), float(y + h))
            if el.kind == "icon":
                (draw.ellipse if el.text.endswith("circle") else draw.rectangle)(box, fill=fill)
            else:
                draw.rectangle(box, fill=fill, outline="#888888")
                ink = "white" if el.color in COLORS else "black"
                draw.text((x + 6, y + h / 4), el.text, fill=ink)
            out.append(Element(el.role, el.text, el.color, box, el.kind))
            x, row = x + w + pad, max(row, h)
        img.save(path)
        return out

    def close(self) -> None:
        pass


def _which(*names: str) -> str:
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    raise FileNotFoundError(
        f"none of {', '.join(names)} is on PATH: install Debian's chromium and chromium-driver "
        "(apt-get install chromium chromium-driver) or use renderer=pil"
    )


def browser_available() -> bool:
    try:
        _which("chromium", "chromium-browser", "google-chrome")
        _which("chromedriver")
        import selenium  # noqa: F401
    except (FileNotFoundError, ImportError):
        return False
    return True


def open_renderer(name: Renderer) -> ChromiumRenderer | PilRenderer:
    if name == "pil" or (name == "auto" and not browser_available()):
        return PilRenderer()
    return ChromiumRenderer()


def instructions(
    target: Element, elements: Sequence[Element], width: int, height: int, rng: random.Random
) -> str:
    """An instruction that singles out ``target`` among ``elements``: by text, colour or place."""
    same_text = [e for e in elements if e.text == target.text]
    cx, cy = (target.box[0] + target.box[2]) / 2, (target.box[1] + target.box[3]) / 2
    where = f"{'top' if cy < height / 3 else 'bottom' if cy > 2 * height / 3 else 'middle'} " + (
        "left" if cx < width / 3 else "right" if cx > 2 * width / 3 else "centre"
    )
    if target.kind == "icon" and len(same_text) == 1:
        return rng.choice((f"click the {target.text} icon", f"select the {target.text}"))
    if len(same_text) == 1:
        return rng.choice(
            (
                f"click the '{target.text}' {target.role}",
                f"press {target.text}",
                f"open the {target.role} labelled {target.text}",
            )
        )
    return f"click the {target.text} {target.role} in the {where} of the screen"


@dataclass(frozen=True, kw_only=True)
class GenerateOptions:
    pages: int = 20
    resolutions: tuple[tuple[int, int], ...] = ((448, 336),)
    layouts: tuple[str, ...] = LAYOUTS
    targets_per_page: int = 2
    seed: int = 0
    renderer: Renderer = "auto"


def generate(out_dir: Path, options: GenerateOptions, progress: Any = None) -> dict[str, Any]:
    """Render ``options.pages`` pages into ``out_dir`` and write ``data.json``; a summary."""
    unknown = sorted(set(options.layouts) - set(LAYOUTS))
    if unknown:
        raise ValueError(f"unknown layouts {unknown}: use {', '.join(LAYOUTS)}")
    rng = random.Random(options.seed)
    images = Path(out_dir) / "images"
    images.mkdir(parents=True, exist_ok=True)
    renderer = open_renderer(options.renderer)
    samples: list[dict[str, Any]] = []
    try:
        for index in progress(range(options.pages)) if progress else range(options.pages):
            layout = options.layouts[index % len(options.layouts)]
            width, height = options.resolutions[rng.randrange(len(options.resolutions))]
            page = make_page(rng, layout, width, height)
            name = f"images/page{index:05d}.png"
            elements = renderer.render(page, Path(out_dir) / name)
            for target in rng.sample(elements, min(options.targets_per_page, len(elements))):
                samples.append(_sample(name, target, elements, width, height, layout, rng))
    finally:
        renderer.close()
    if not samples:
        raise RuntimeError("the generator rendered no clickable element: check the renderer")
    (Path(out_dir) / "data.json").write_text(json.dumps(samples, indent=1), encoding="utf-8")
    return {"pages": options.pages, "samples": len(samples), "renderer": renderer.name}


def _sample(
    image: str,
    target: Element,
    elements: list[Element],
    width: int,
    height: int,
    layout: str,
    rng: random.Random,
) -> dict[str, Any]:
    x1, y1, x2, y2 = target.box
    box = [round(x1 / width, 5), round(y1 / height, 5), round(x2 / width, 5), round(y2 / height, 5)]
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return {
        "image": image,
        "conversations": [
            {
                "from": "human",
                "value": "<image>" + instructions(target, elements, width, height, rng),
            },
            {
                "from": "gpt",
                "value": f"pyautogui.click(x={cx:.4f}, y={cy:.4f})",
                "recipient": "os",
                "end_turn": True,
                "bbox_gt": box,
            },
        ],
        "data_type": target.kind,
        "data_source": layout,
        "img_size": [width, height],
        "elements": len(elements),
    }


def iter_pages(options: GenerateOptions) -> Iterator[Page]:
    """The pages ``generate`` would render (for inspection and tests), same seed, same order."""
    rng = random.Random(options.seed)
    for index in range(options.pages):
        layout = options.layouts[index % len(options.layouts)]
        width, height = options.resolutions[rng.randrange(len(options.resolutions))]
        yield make_page(rng, layout, width, height)
