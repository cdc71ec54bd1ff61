"""Helpers for the ``benchmarks/`` scripts: best of N alternating runs per side, then ratios.

Each side is timed in CPU seconds of the process (``time.process_time``, so other load on a
shared machine counts for neither side) next to wall-clock seconds. The sides alternate run by
run, which spreads any remaining load evenly, and each keeps its fastest run.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

SHORT_HELP = (
    "CI's short mode: tiny inputs and one repeat, so that the script's code runs end to end; "
    "its figures mean nothing (explicit options still win)"
)


def parse_args(
    parser: argparse.ArgumentParser,
    argv: Sequence[str] | None = None,
    *,
    short: Mapping[str, Any],
    known: bool = False,
) -> argparse.Namespace:
    """``parser``'s arguments plus ``--short``: with it, the defaults become ``short`` (tiny
    inputs, one repeat; CI runs every benchmark this way so that an API change breaking one fails
    CI). ``known``: ignore unknown arguments (``parse_known_args``). ``args.short`` says which."""
    parser.add_argument("--short", action="store_true", help=SHORT_HELP)
    dests = {a.dest for a in parser._actions}
    unknown = sorted(set(short) - dests)
    if unknown:
        raise ValueError(f"short values for options the parser lacks: {', '.join(unknown)}")
    if parser.parse_known_args(argv)[0].short:
        parser.set_defaults(**short)
    return parser.parse_known_args(argv)[0] if known else parser.parse_args(argv)


@dataclass(frozen=True)
class Measured:
    """One timed run: what it returned and the CPU and wall seconds it took."""

    result: Any
    cpu_s: float
    wall_s: float

    def figures(self, per_cpu_s: Iterable[str] = ()) -> dict[str, Any]:
        """``cpu_s``, ``wall_s``, the result's items (a dict result) and ``<key>_per_cpu_s``."""
        items = self.result if isinstance(self.result, Mapping) else {}
        rates = {f"{key}_per_cpu_s": items[key] / self.cpu_s for key in per_cpu_s}
        return {"cpu_s": self.cpu_s, "wall_s": self.wall_s, **items, **rates}


def measure(fn: Callable[[], Any]) -> Measured:
    """Call ``fn()`` and time it."""
    cpu, wall = time.process_time(), time.perf_counter()
    result = fn()
    return Measured(result, time.process_time() - cpu, time.perf_counter() - wall)


def best_of(
    sides: Mapping[str, Callable[[int], Any]],
    repeats: int,
    after: Callable[[str, Any], None] | None = None,
) -> dict[str, Measured]:
    """Each side's fastest run (fewest CPU seconds) of ``repeats`` runs, the sides alternating.

    A side is called with the repeat number (0, 1, ...). It returns either a :class:`Measured`
    (when only part of its work is to be timed, see :func:`measure`) or any result, and then the
    whole call is timed. ``after(side, result)`` runs after each call, outside the timing.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    best: dict[str, Measured] = {}
    for repeat in range(repeats):
        for name, side in sides.items():
            run = measure(partial(side, repeat))
            if isinstance(run.result, Measured):
                run = run.result
            if name not in best or run.cpu_s < best[name].cpu_s:
                best[name] = run
            if after is not None:
                after(name, run.result)
    return best


def compare(
    best: Mapping[str, Measured], side: str, baseline: str, per_cpu_s: Iterable[str] = ()
) -> dict[str, Any]:
    """Each side's :meth:`Measured.figures`, then ``ratio_cpu`` and ``ratio_wall``.

    A ratio is the baseline's seconds over ``side``'s (above 1: ``side`` is faster).
    """
    figures: dict[str, Any] = {name: run.figures(per_cpu_s) for name, run in best.items()}
    figures["ratio_cpu"] = best[baseline].cpu_s / best[side].cpu_s
    figures["ratio_wall"] = best[baseline].wall_s / best[side].wall_s
    return figures


def report(figures: Mapping[str, Any], path: str | Path | None = None, echo: bool = True) -> None:
    """Print ``figures`` as JSON (unless ``echo`` is false) and write them to ``path`` if given."""
    text = json.dumps(figures, indent=2)
    if echo:
        print(text)
    if path:
        Path(path).write_text(text + "\n", encoding="utf-8")


def compare_rollouts(
    play: Callable[[int, int | None], Any], args: Any, per_cpu_s: Iterable[str]
) -> dict[str, Any]:
    """Batched rollouts against one episode at a time (the baseline), printed and returned.

    ``play(repeat, batch_size)`` plays the episodes with ``batch_size=None`` (all active
    episodes in one ``generate`` call per turn) or ``1``. ``args`` carries ``model``,
    ``episodes``, ``turns``, ``max_new_tokens``, ``repeats`` and ``json`` (an output path or None).
    """
    import torch

    best = best_of(
        {
            "batched": lambda repeat: play(repeat, None),
            "one_at_a_time": lambda repeat: play(repeat, 1),
        },
        args.repeats,
    )
    result = {
        "model": args.model,
        "episodes": args.episodes,
        "turns": args.turns,
        "max_new_tokens": args.max_new_tokens,
        "torch_threads": torch.get_num_threads(),
        **compare(best, "batched", baseline="one_at_a_time", per_cpu_s=per_cpu_s),
    }
    report(result, args.json)
    return result
