"""``report.md`` for a run: final metrics, recipe sections and one PNG plot per logged series."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from aworld_rl_core.atomic import write_atomic
from aworld_rl_core.tracking import read_metrics

FRACTIONS = ("accuracy", "agreement", "pass_rate", "success_rate")
"""Metrics whose name (or a ``/``-separated part of it) ends with one of these are fractions in
[0, 1] and are shown as percentages."""


def plot_series(records: list[dict[str, Any]], out_dir: Path) -> list[Path]:
    """One line plot per numeric metric logged more than once; needs matplotlib."""
    series: dict[str, list[tuple[float, float]]] = {}
    for i, rec in enumerate(records):
        x = rec.get("step", i)
        for key, value in rec.items():
            if key in ("time", "step") or isinstance(value, bool):
                continue
            if isinstance(value, (int, float)):
                series.setdefault(key, []).append((x, value))
    series = {k: v for k, v in series.items() if len(v) > 1}
    if not series:
        return []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for key, points in sorted(series.items()):
        fig, ax = plt.subplots(figsize=(5, 3))
        ax.plot([p[0] for p in points], [p[1] for p in points], marker=".")
        ax.set_xlabel("step")
        ax.set_title(key)
        ax.grid(alpha=0.3)
        fig.tight_layout()
        path = out_dir / f"{key.replace('/', '_')}.png"
        fig.savefig(path, dpi=80)
        plt.close(fig)
        paths.append(path)
    return paths


def write_report(
    run_dir: Path,
    *,
    title: str,
    status: str,
    metrics: dict[str, Any],
    sections: list[tuple[str, str]],
) -> Path:
    """Write ``report.md`` (and ``plots/*.png`` when matplotlib is installed)."""
    lines = [f"# {title}", "", f"Status: **{status}**", ""]
    if metrics:
        lines += ["| metric | value |", "|---|---|"]
        lines += [f"| {k} | {format_metric(k, v)} |" for k, v in metrics.items()]
        lines.append("")
    for heading, body in sections:
        lines += [f"## {heading}", "", body.rstrip(), ""]
    try:
        plots = plot_series(read_metrics(run_dir / "metrics.jsonl"), run_dir / "plots")
    except ImportError:
        plots = []
        lines += ["_Plots skipped: install matplotlib (`aworld-rl-core[plots]`)._", ""]
    except OSError as exc:  # a full disk: the report still says how the run ended
        plots = []
        lines += [f"_Plots skipped: {exc}._", ""]
    if plots:
        lines += ["## Curves", ""]
        lines += [f"![{p.stem}](plots/{p.name})" for p in plots]
        lines.append("")
    path = run_dir / "report.md"
    write_atomic(path, "\n".join(lines))
    return path


def percent(fraction: float, digits: int = 1) -> str:
    """``fraction`` as a percentage that never rounds to 100% (or 0%) unless it is exactly that:
    1051 of 1053 is ``99.8%``, 1052 of 1053 ``99.9%`` (not ``100.0%``)."""
    text = f"{fraction:.{digits}%}"
    scale = 10**digits
    if fraction < 1 and text == f"{1:.{digits}%}":
        text = f"{math.floor(fraction * 100 * scale) / scale:.{digits}f}%"
    elif fraction > 0 and text == f"{0:.{digits}%}":
        text = f"{math.ceil(fraction * 100 * scale) / scale:.{digits}f}%"
    return text


def is_fraction(key: str) -> bool:
    """Whether the metric ``key`` names a fraction (see :data:`FRACTIONS`)."""
    return any(part.endswith(FRACTIONS) for part in key.split("/"))


def format_metric(key: str, value: Any) -> str:
    """A metric for people: fractions as percentages, other floats to four digits."""
    if isinstance(value, float) and is_fraction(key) and 0.0 <= value <= 1.0:
        return percent(value)
    return f"{value:.4g}" if isinstance(value, float) else str(value)
