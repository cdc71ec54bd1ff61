"""The cost of the tool-call bounds: this tree's BFCL replay against an older core, one process.

``--baseline DIR`` is a copy of another ``aworld_rl_core`` source tree (e.g. the commit before
the bounds: ``git archive 0c54eed packages/core/src | tar -x -C /tmp/base``, then
``--baseline /tmp/base/packages/core/src``). It is copied under another package name, so both
versions load side by side; the two replay the 800 multi-turn ground truths alternately (with
and without judging), and each keeps its best CPU time. The result strings must be identical.

Run: ``python packages/core/benchmarks/call_bounds.py --baseline DIR [--repeats 15]``.
"""

from __future__ import annotations

import argparse
import importlib
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from aworld_rl_core.benchmarking import parse_args

NAME = "aworld_rl_core_baseline"


def load_baseline(src: Path) -> Any:
    """The baseline tree as package ``aworld_rl_core_baseline`` (its own imports rewritten)."""
    root = Path(tempfile.mkdtemp(prefix="core-baseline-"))
    shutil.copytree(src / "aworld_rl_core", root / NAME)
    for path in (root / NAME).rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        path.write_text(re.sub(r"\baworld_rl_core\b", NAME, text), encoding="utf-8")
    sys.path.insert(0, str(root))
    return importlib.import_module(f"{NAME}.tooluse.bfcl")


def replay(bfcl: Any, entries: list[Any], judge: bool) -> list[list[str]]:
    importlib.import_module(f"{bfcl.__name__}.episode").clear_parse_cache()
    out = []
    for entry in entries:
        with bfcl.MultiTurnEpisode(entry, judge=judge) as episode:
            for calls in entry.ground_truth:
                out.append(episode.execute(calls))
                episode.end_turn()
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="an aworld_rl_core src/ (required)")
    parser.add_argument("--repeats", type=int, default=15, help="alternating rounds (best kept)")
    here = Path(__file__).resolve().parents[1] / "src"
    args = parse_args(parser, argv, short={"repeats": 1, "baseline": here}, known=True)
    if args.baseline is None:
        print("call_bounds: skipped (give --baseline DIR, an older aworld_rl_core src/)")
        return
    import aworld_rl_core.tooluse.bfcl as current

    sides = {"baseline": load_baseline(args.baseline), "current": current}
    entries = {
        name: [e for c in bfcl.MULTI_TURN_CATEGORIES for e in bfcl.load_category(c)]
        for name, bfcl in sides.items()
    }
    results = [replay(bfcl, entries[name], False) for name, bfcl in sides.items()]
    assert results[0] == results[1], "the two trees render some result differently"
    for judge in (False, True):
        best = dict.fromkeys(sides, float("inf"))
        for round_ in range(args.repeats):
            order = list(sides) if round_ % 2 else list(sides)[::-1]
            for name in order:
                start = time.process_time()
                replay(sides[name], entries[name], judge)
                best[name] = min(best[name], time.process_time() - start)
        per_s = {name: len(entries[name]) / seconds for name, seconds in best.items()}
        label = "execution + judging" if judge else "execution"
        print(
            f"{label:20} baseline {per_s['baseline']:7.0f}/s  current {per_s['current']:7.0f}/s"
            f"  current/baseline {per_s['current'] / per_s['baseline']:.3f}"
        )


if __name__ == "__main__":
    main()
