"""Recipe ``v2p.generate``: the browser-rendered synthetic GUI dataset (seeded)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from aworld_rl_core.config import option
from aworld_rl_core.runs import Run, RunResult
from aworld_rl_v2p.synthetic import LAYOUTS


@dataclass(frozen=True, kw_only=True)
class GenerateConfig:
    """Render seeded HTML GUIs and write GUI-Actor/AGUVIS JSON with DOM boxes."""

    pages: int = option(200, help="pages to render", ge=1)
    resolutions: tuple[str, ...] = option(
        ("1280x800", "1920x1080", "1024x768"),
        help="viewport sizes WIDTHxHEIGHT, one per page at random",
    )
    layouts: tuple[str, ...] = option(LAYOUTS, help=f"page layouts among {', '.join(LAYOUTS)}")
    targets_per_page: int = option(2, help="instructions (samples) per page", ge=1)
    seed: int = option(0, help="random seed: the same seed renders the same pages")
    renderer: Literal["auto", "chromium", "pil"] = option(
        "auto", help="chromium (DOM boxes), pil (no browser) or auto (chromium when installed)"
    )


def parse_resolution(text: str) -> tuple[int, int]:
    try:
        width, height = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise ValueError(f"resolution {text!r} is not WIDTHxHEIGHT, e.g. 1280x800") from None
    if width < 56 or height < 56:
        raise ValueError(f"resolution {text!r} is smaller than 56x56")
    return width, height


def run(cfg: GenerateConfig, run: Run) -> RunResult:
    from aworld_rl_v2p.synthetic import GenerateOptions, generate

    options = GenerateOptions(
        pages=cfg.pages,
        resolutions=tuple(parse_resolution(r) for r in cfg.resolutions),
        layouts=cfg.layouts,
        targets_per_page=cfg.targets_per_page,
        seed=cfg.seed,
        renderer=cfg.renderer,
    )
    out = run.dir / "data"
    summary = generate(out, options, progress=lambda it: run.progress(it, desc="rendering"))
    run.add_section(
        "Synthetic GUI data",
        f"{summary['samples']} samples on {summary['pages']} pages rendered by "
        f"{summary['renderer']} into `data/` (GUI-Actor/AGUVIS JSON: `data/data.json`)",
    )
    metrics = {"pages": float(summary["pages"]), "samples": float(summary["samples"])}
    run.log(metrics)
    return RunResult(
        metrics={**metrics, "renderer": summary["renderer"]}, outputs={"data": out / "data.json"}
    )
