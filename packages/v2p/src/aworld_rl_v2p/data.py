"""Readers for grounding data on local disk; every box comes out normalised xyxy and checked.

- GUI-Actor / AGUVIS training JSON: ``{"image", "conversations": [human "<image>...",
  gpt "pyautogui.click(x=, y=)" with "bbox_gt" (normalised)]}`` (also what ``synthetic`` writes);
- ScreenSpot (v1) and ScreenSpot-v2: ``screenspot_{mobile,desktop,web}[_v2].json`` with
  ``img_filename, bbox, instruction, data_type, data_source`` (xywh pixels in the original
  release; re-exports use xyxy: the format is detected over the whole file);
- ScreenSpot-Pro: ``annotations/*.json`` with ``img_filename, bbox (xyxy px), instruction, id,
  application, platform, img_size, ui_type, group``, images under ``images/``;
- ScreenSpot-v2 as parquet (the Hub copy GUI-Actor and V2P load, ``HongxinLi/ScreenSpot_v2``):
  ``image`` ({bytes, path}), ``instruction``, ``bbox``, ``data_type``, ``data_source``; the
  images are written once into ``<file>.images/`` (or ``images=``);
- OSWorld-G: a JSON list with ``id, image_path, image_size, instruction, box_type (bbox |
  polygon | refusal), box_coordinates (xywh px, or a flat x, y, x, y, ... polygon), GUI_types``;
  refusal rows (nothing to click) are skipped and counted.

A bad row (no image, a box with no area or outside the image, a click outside its own box, a
missing image file) is skipped and counted by reason in ``skipped`` (a ``Counter``), never
the end of the read. ``sample_across`` takes N samples spread over the groups.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter, defaultdict
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
Kind = Literal[
    "aguvis", "screenspot", "screenspot_v2", "screenspot_v2_parquet", "screenspot_pro", "osworld_g"
]
KINDS = (
    "aguvis",
    "screenspot",
    "screenspot_v2",
    "screenspot_v2_parquet",
    "screenspot_pro",
    "osworld_g",
)


class SkippedRow(ValueError):
    """A row that cannot be a sample; ``reason`` is its short, countable cause."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


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
    # OSWorld-G polygons: normalised (x, y, x, y, ...); the hit rule is then point-in-polygon
    polygon: tuple[float, ...] | None = None
    # the earlier turns of the sample's conversation ((instruction, box), ...), oldest first
    history: tuple[tuple[str, tuple[float, float, float, float]], ...] = ()


def read(
    kind: Kind,
    path: str | Path,
    *,
    box_format: BoxFormat | Literal["auto"] = "auto",
    images: str | Path | None = None,
    skipped: Counter | None = None,
) -> list[GroundingSample]:
    """Read a dataset of ``kind`` from ``path`` (a file or the dataset's folder); bad rows
    are skipped and counted by reason in ``skipped``."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{kind} data not found at '{path}': give the local file or folder")
    skipped = Counter() if skipped is None else skipped
    if kind == "aguvis":
        return read_aguvis(path, images=images, skipped=skipped)
    if kind in ("screenspot", "screenspot_v2"):
        return read_screenspot(path, images=images, box_format=box_format, skipped=skipped)
    if kind == "screenspot_v2_parquet":
        return read_screenspot_parquet(path, images=images, box_format=box_format, skipped=skipped)
    if kind == "screenspot_pro":  # pixel xyxy by its dataset card
        fmt = "xyxy" if box_format == "auto" else box_format
        return read_screenspot_pro(path, images=images, box_format=fmt, skipped=skipped)
    if kind == "osworld_g":
        return read_osworld_g(path, images=images, skipped=skipped)
    raise ValueError(f"unknown dataset kind {kind!r}: use one of {', '.join(KINDS)}")


def read_aguvis(
    path: Path,
    *,
    images: str | Path | None = None,
    skipped: Counter | None = None,
    whole: bool = False,
) -> list[GroundingSample]:
    """GUI-Actor/AGUVIS JSON (a list, or JSONL): one sample per gpt turn with a ``bbox_gt``,
    or with ``whole`` one per conversation (the last turn, earlier ones in ``history``:
    training keeps multi-turn conversations whole, as the released data loader does)."""
    root = Path(images) if images else path.parent
    skipped = Counter() if skipped is None else skipped
    out = []
    for n, row in enumerate(_load_rows(path)):
        try:
            turns = _aguvis_turns(row, n, root, path)
        except SkippedRow as exc:
            skipped[exc.reason] += 1
            continue
        image, size, pairs = turns
        base = dict(
            image=root / image,
            image_size=(int(size[0]), int(size[1])),
            group=str(row.get("data_source", "all")),
            ui_type=str(row.get("data_type", "text")),
            source=str(row.get("data_source", "")),
        )
        if whole:
            instruction, box, t = pairs[-1]
            history = tuple((i, b) for i, b, _ in pairs[:-1])
            sample_id = str(row.get("id", n))
            out.append(
                GroundingSample(
                    id=sample_id, instruction=instruction, box=box, history=history, **base
                )
            )
        else:
            for instruction, box, t in pairs:
                sample_id = str(row.get("id", f"{n}-{t}"))
                if len(pairs) > 1:
                    sample_id = f"{sample_id}-{t}" if "id" in row else sample_id
                out.append(GroundingSample(id=sample_id, instruction=instruction, box=box, **base))
    return out


def _aguvis_turns(row: dict, n: int, root: Path, path: Path):
    """(image, size, [(instruction, box, turn index)]) of one AGUVIS row, or ``SkippedRow``."""
    image = row.get("image")
    if isinstance(image, list):
        if len(image) != 1:
            raise SkippedRow("multi-image conversation")
        image = image[0]
    if not image:
        raise SkippedRow("no image", f"{path}: row {n}")
    if row.get("img_size"):
        size = tuple(row["img_size"])
    else:
        try:
            size = _image_size(root / image)
        except FileNotFoundError:
            raise SkippedRow("image file missing", str(root / image)) from None
    pairs = []
    instruction = ""
    for t, turn in enumerate(row.get("conversations") or []):
        if turn.get("from") in ("human", "user"):
            instruction = str(turn.get("value", "")).replace("<image>", "").strip()
        elif turn.get("from") in ("gpt", "assistant") and turn.get("bbox_gt") is not None:
            _, points = to_pointer_action(str(turn.get("value", "")))
            try:
                box = normalize_box(turn["bbox_gt"], "xyxy_norm", size)
            except ValueError:
                raise SkippedRow("box outside the image or without area") from None
            if points and not _inside(points[0], box):
                raise SkippedRow("click outside its bbox_gt")
            pairs.append((instruction, box, t))
    if not pairs:
        raise SkippedRow("no turn with a bbox_gt")
    return image, size, pairs


def sample_across(
    samples: list[GroundingSample], n: int | None, seed: int = 0
) -> list[GroundingSample]:
    """``n`` samples spread over the groups (round robin over the groups, each group's own
    order shuffled with ``seed``), in the dataset's order; all of them when ``n`` is None or
    more than there are."""
    if n is not None and n < 1:
        raise ValueError(f"n={n}: give N >= 1, or None for all (0 no longer means all)")
    if n is None or n >= len(samples):
        return list(samples)
    groups: dict[str, list[int]] = defaultdict(list)
    for i, s in enumerate(samples):
        groups[f"{s.group}/{s.source}"].append(i)
    rng = random.Random(seed)
    queues = [rng.sample(v, len(v)) for _, v in sorted(groups.items())]
    chosen: list[int] = []
    while len(chosen) < n:
        for q in queues:
            if q and len(chosen) < n:
                chosen.append(q.pop())
    return [samples[i] for i in sorted(chosen)]


def read_screenspot(
    path: Path,
    *,
    images: str | Path | None = None,
    box_format: BoxFormat | Literal["auto"] = "auto",
    skipped: Counter | None = None,
) -> list[GroundingSample]:
    """ScreenSpot v1 / v2: a folder of ``screenspot_*.json`` (or one such file)."""
    files = sorted(path.glob("screenspot_*.json")) if path.is_dir() else [path]
    if not files:
        raise FileNotFoundError(f"no screenspot_*.json under '{path}'")
    out = []
    for file in files:
        domain = next((d for d in ("mobile", "desktop", "web") if d in file.stem), "all")
        root = Path(images) if images else _image_dir(file.parent)
        for row, sample in _annotated(_load_rows(file), file, root, box_format, skipped):
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
    skipped: Counter | None = None,
) -> list[GroundingSample]:
    """ScreenSpot-Pro: ``annotations/*.json`` (or one file) with pixel xyxy boxes; a row
    whose image is missing is skipped and counted."""
    folder = path / "annotations" if (path / "annotations").is_dir() else path
    files = sorted(folder.glob("*.json")) if folder.is_dir() else [folder]
    if not files:
        raise FileNotFoundError(f"no annotation JSON under '{folder}'")
    base = path if path.is_dir() else path.parent.parent  # <root>/annotations/<app>.json
    root = Path(images) if images else base / "images"
    out = []
    for file in files:
        for row, sample in _annotated(_load_rows(file), file, root, box_format, skipped):
            if not sample.image.is_file():
                _skip(skipped, "image file missing")
                continue
            source = str(row.get("application", row.get("platform", "")))
            group, ui_type = str(row.get("group", "all")), str(row.get("ui_type", "text"))
            out.append(replace(sample, group=group, ui_type=ui_type, source=source))
    return out


def _annotated(
    rows: list[dict[str, Any]],
    file: Path,
    root: Path,
    box_format: Any,
    skipped: Counter | None,
    key: str = "img_filename",
) -> list[tuple[dict, GroundingSample]]:
    """The rows of a ScreenSpot-style file (``img_filename``, ``bbox``, ``instruction``) and
    their samples, with the box format detected over the whole file when ``auto``; bad rows
    are skipped and counted."""
    good = []
    for row in rows:
        if not row.get(key) or row.get("bbox") is None or not row.get("instruction"):
            _skip(skipped, f"no {key}, bbox or instruction")
            continue
        if row.get("img_size"):
            size = tuple(row["img_size"])
        else:
            try:
                size = _image_size(root / row[key])
            except FileNotFoundError:
                _skip(skipped, "image file missing")
                continue
        good.append((row, size))
    if not good:
        return []
    fmt = box_format
    if fmt == "auto":
        fmt = detect_format([r["bbox"] for r, _ in good], [z for _, z in good])
    out = []
    for n, (row, size) in enumerate(good):
        try:
            box = normalize_box(row["bbox"], fmt, size)
        except ValueError:
            _skip(skipped, "box outside the image or without area")
            continue
        sample = GroundingSample(
            id=str(row.get("id", f"{file.stem}-{n}")),
            image=root / row[key],
            instruction=str(row["instruction"]),
            box=box,
            image_size=(int(size[0]), int(size[1])),
        )
        out.append((row, sample))
    return out


def _skip(skipped: Counter | None, reason: str) -> None:
    if skipped is not None:
        skipped[reason] += 1


def read_screenspot_parquet(
    path: Path,
    *,
    images: str | Path | None = None,
    box_format: BoxFormat | Literal["auto"] = "auto",
    skipped: Counter | None = None,
) -> list[GroundingSample]:
    """ScreenSpot-v2 as the Hub's parquet (a file, or a folder of ``*.parquet``): each row's
    image bytes are written once to ``images`` (default ``<file>.images/``)."""
    import pyarrow.parquet as pq

    files = sorted(path.glob("**/*.parquet")) if path.is_dir() else [path]
    if not files:
        raise FileNotFoundError(f"no *.parquet under '{path}'")
    out = []
    for file in files:
        root = Path(images) if images else file.with_suffix(".images")
        root.mkdir(parents=True, exist_ok=True)
        rows = []
        for n, row in enumerate(pq.read_table(file).to_pylist()):
            image = row.pop("image", None) or {}
            data = image.get("bytes") if isinstance(image, dict) else None
            if not data:
                _skip(skipped, "no image bytes")
                continue
            name = Path(str(image.get("path") or f"{file.stem}-{n}.png")).name
            target = root / name
            if not target.is_file():
                target.write_bytes(data)
            rows.append({**row, "img_filename": name, "id": row.get("id", f"{file.stem}-{n}")})
        for row, sample in _annotated(rows, file, root, box_format, skipped):
            source = str(row.get("data_source", ""))
            group = DOMAINS.get(source, "all")
            ui_type = str(row.get("data_type", "text"))
            out.append(replace(sample, group=group, ui_type=ui_type, source=source))
    return out


def read_osworld_g(
    path: Path, *, images: str | Path | None = None, skipped: Counter | None = None
) -> list[GroundingSample]:
    """OSWorld-G: ``bbox`` rows (xywh px) and ``polygon`` rows (point-in-polygon); refusal
    rows (the element does not exist) are skipped and counted."""
    file = path if path.is_file() else next(iter(sorted(path.glob("*.json"))), None)
    if file is None:
        raise FileNotFoundError(f"no OSWorld-G JSON under '{path}'")
    root = Path(images) if images else _image_dir(file.parent)
    out = []
    for n, row in enumerate(_load_rows(file)):
        kind = row.get("box_type")
        coords = [float(v) for v in row.get("box_coordinates") or []]
        size = row.get("image_size") or row.get("img_size")
        if kind == "refusal":
            _skip(skipped, "refusal (nothing to click)")
            continue
        if not row.get("image_path") or not row.get("instruction") or not size:
            _skip(skipped, "no image_path, instruction or image_size")
            continue
        width, height = (float(v) for v in size)
        polygon = None
        try:
            if kind == "bbox":
                box = normalize_box(coords, "xywh", (width, height))
            elif kind == "polygon" and len(coords) >= 6 and len(coords) % 2 == 0:
                xs, ys = coords[0::2], coords[1::2]
                box = normalize_box([min(xs), min(ys), max(xs), max(ys)], "xyxy", (width, height))
                polygon = tuple(v / (width if i % 2 == 0 else height) for i, v in enumerate(coords))
            else:
                _skip(skipped, f"unknown box_type {kind!r}")
                continue
        except ValueError:
            _skip(skipped, "box outside the image or without area")
            continue
        types = row.get("GUI_types") or []
        out.append(
            GroundingSample(
                id=str(row.get("id", n)),
                image=root / row["image_path"],
                instruction=str(row["instruction"]),
                box=box,
                image_size=(int(width), int(height)),
                group=str(types[0]) if types else "all",
                ui_type=str(kind),
                source="osworld_g",
                polygon=polygon,
            )
        )
    return out


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
