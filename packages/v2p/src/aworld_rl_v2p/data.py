"""Readers for grounding data on local disk; every box comes out normalised xyxy and checked.

- GUI-Actor / AGUVIS training JSON: ``{"image", "conversations": [human "<image>...",
  gpt "pyautogui.click(x=, y=)" with "bbox_gt" (normalised)]}`` (also what ``synthetic`` writes);
- ScreenSpot (v1) and ScreenSpot-v2: ``screenspot_{mobile,desktop,web}[_v2].json`` with
  ``img_filename, bbox, instruction, data_type, data_source`` (xywh pixels in the original
  release; re-exports use xyxy: the format is detected over the whole file);
- ScreenSpot-Pro: ``annotations/*.json`` with ``img_filename, bbox (xyxy px), instruction, id,
  application, platform, img_size, ui_type, group``, images under ``images/``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from aworld_rl_v2p.boxes import BoxFormat, detect_format, normalize_box
from aworld_rl_v2p.prompts import to_pointer_action

DOMAINS = {  # ScreenSpot's data_source -> domain
    "ios": "mobile",
    "android": "mobile",
    "windows": "desktop",
    "macos": "desktop",
    "tool": "web",
    "shop": "web",
    "gitlab": "web",
    "forum": "web",
}
Kind = Literal["aguvis", "screenspot", "screenspot_v2", "screenspot_pro"]
KINDS = ("aguvis", "screenspot", "screenspot_v2", "screenspot_pro")


@dataclass(frozen=True)
class GroundingSample:
    """One instruction on one screenshot, with its ground-truth box (normalised xyxy)."""

    id: str
    image: Path
    instruction: str
    box: tuple[float, float, float, float]
    image_size: tuple[int, int]  # (width, height) of the original screenshot
    group: str = "all"  # ScreenSpot domain (mobile/desktop/web) or Pro group (Dev, CAD, ...)
    ui_type: str = "text"  # text or icon
    source: str = ""  # data_source / platform / application


def read(
    kind: Kind,
    path: str | Path,
    *,
    box_format: BoxFormat | Literal["auto"] = "auto",
    images: str | Path | None = None,
) -> list[GroundingSample]:
    """Read a dataset of ``kind`` from ``path`` (a file or the dataset's folder)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{kind} data not found at '{path}': give the local file or folder")
    if kind == "aguvis":
        return read_aguvis(path, images=images)
    if kind in ("screenspot", "screenspot_v2"):
        return read_screenspot(path, images=images, box_format=box_format)
    if kind == "screenspot_pro":  # pixel xyxy by its dataset card
        fmt = "xyxy" if box_format == "auto" else box_format
        return read_screenspot_pro(path, images=images, box_format=fmt)
    raise ValueError(f"unknown dataset kind {kind!r}: use one of {', '.join(KINDS)}")


def read_aguvis(path: Path, *, images: str | Path | None = None) -> list[GroundingSample]:
    """GUI-Actor/AGUVIS JSON (a list, or JSONL); one sample per gpt turn with a ``bbox_gt``."""
    root = Path(images) if images else path.parent
    rows = _load_rows(path)
    out = []
    for n, row in enumerate(rows):
        image = row.get("image")
        if isinstance(image, list):
            if len(image) != 1:
                continue  # multi-image conversations are not single-screenshot grounding
            image = image[0]
        if not image:
            raise ValueError(f"{path}: row {n} has no 'image'")
        turns = row.get("conversations") or []
        instruction = ""
        for t, turn in enumerate(turns):
            if turn.get("from") in ("human", "user"):
                instruction = str(turn.get("value", "")).replace("<image>", "").strip()
            elif turn.get("from") in ("gpt", "assistant") and turn.get("bbox_gt") is not None:
                size = tuple(row["img_size"]) if row.get("img_size") else _image_size(root / image)
                _, points = to_pointer_action(str(turn.get("value", "")))
                box = normalize_box(turn["bbox_gt"], "xyxy_norm", size)
                if points and not _inside(points[0], box):
                    raise ValueError(
                        f"{path}: row {n}: the click {points[0]} is outside bbox_gt {box}"
                    )
                out.append(
                    GroundingSample(
                        id=str(row.get("id", f"{n}-{t}")),
                        image=root / image,
                        instruction=instruction,
                        box=box,
                        image_size=(int(size[0]), int(size[1])),
                        group=str(row.get("data_source", "all")),
                        ui_type=str(row.get("data_type", "text")),
                        source=str(row.get("data_source", "")),
                    )
                )
    return out


def read_screenspot(
    path: Path,
    *,
    images: str | Path | None = None,
    box_format: BoxFormat | Literal["auto"] = "auto",
) -> list[GroundingSample]:
    """ScreenSpot v1 / v2: a folder of ``screenspot_*.json`` (or one such file)."""
    files = sorted(path.glob("screenspot_*.json")) if path.is_dir() else [path]
    if not files:
        raise FileNotFoundError(f"no screenspot_*.json under '{path}'")
    out = []
    for file in files:
        domain = next((d for d in ("mobile", "desktop", "web") if d in file.stem), "all")
        root = Path(images) if images else _image_dir(file.parent)
        for row, sample in _annotated(file, root, box_format):
            source = str(row.get("data_source", row.get("platform", "")))
            group = row.get("group") or DOMAINS.get(source, domain)
            ui_type = row.get("data_type", row.get("ui_type", "text"))
            out.append(replace(sample, group=str(group), ui_type=str(ui_type), source=source))
    return out


def read_screenspot_pro(
    path: Path,
    *,
    images: str | Path | None = None,
    box_format: BoxFormat | Literal["auto"] = "xyxy",
) -> list[GroundingSample]:
    """ScreenSpot-Pro: ``annotations/*.json`` (or one file) with pixel xyxy boxes."""
    folder = path / "annotations" if (path / "annotations").is_dir() else path
    files = sorted(folder.glob("*.json")) if folder.is_dir() else [folder]
    if not files:
        raise FileNotFoundError(f"no annotation JSON under '{folder}'")
    base = path if path.is_dir() else path.parent.parent  # <root>/annotations/<app>.json
    root = Path(images) if images else base / "images"
    out = []
    for file in files:
        for row, sample in _annotated(file, root, box_format):
            source = str(row.get("application", row.get("platform", "")))
            group, ui_type = str(row.get("group", "all")), str(row.get("ui_type", "text"))
            out.append(replace(sample, group=group, ui_type=ui_type, source=source))
    return out


def _annotated(file: Path, root: Path, box_format: Any) -> list[tuple[dict, GroundingSample]]:
    """The rows of a ScreenSpot-style file (``img_filename``, ``bbox``, ``instruction``) and
    their samples, with the box format detected over the whole file when ``auto``."""
    rows = _load_rows(file)
    sizes = [
        tuple(r["img_size"]) if r.get("img_size") else _image_size(root / r["img_filename"])
        for r in rows
    ]
    fmt = box_format if box_format != "auto" else detect_format([r["bbox"] for r in rows], sizes)
    return [
        (
            row,
            GroundingSample(
                id=str(row.get("id", f"{file.stem}-{n}")),
                image=root / row["img_filename"],
                instruction=str(row["instruction"]),
                box=_box(row["bbox"], fmt, size, file, n),
                image_size=(int(size[0]), int(size[1])),
            ),
        )
        for n, (row, size) in enumerate(zip(rows, sizes, strict=True))
    ]


def file_hashes(path: str | Path) -> dict[str, str]:
    """SHA-256 of the dataset's annotation files (a folder's JSON files, or the file itself)."""
    path = Path(path)
    files = sorted(path.rglob("*.json")) if path.is_dir() else [path]
    return {str(f.relative_to(path) if path.is_dir() else f.name): _sha256(f) for f in files}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _box(box: Sequence[float], fmt: Any, size: Sequence[int], file: Path, n: int):
    try:
        return normalize_box(box, fmt, size)
    except ValueError as exc:
        raise ValueError(f"{file}: entry {n}: {exc}") from None


def _inside(point: Sequence[float], box: Sequence[float], slack: float = 1e-3) -> bool:
    x, y = point
    return box[0] - slack <= x <= box[2] + slack and box[1] - slack <= y <= box[3] + slack


def _load_rows(path: Path) -> list[dict[str, Any]]:
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        try:
            data = [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError as exc:
            raise ValueError(f"'{path}' is neither JSON nor JSONL: {exc}") from None
    if not isinstance(data, list):
        raise ValueError(f"'{path}' must hold a list of samples, not {type(data).__name__}")
    return data


def _image_dir(folder: Path) -> Path:
    for name in ("images", "screenspotv2_image", "screenspot_imgs", "imgs"):
        if (folder / name).is_dir():
            return folder / name
    return folder


def _image_size(path: Path) -> tuple[int, int]:
    from PIL import Image

    try:
        with Image.open(path) as img:
            return img.size
    except FileNotFoundError:
        raise FileNotFoundError(
            f"image '{path}' is missing: pass images=<folder> or add img_size to the entry"
        ) from None
