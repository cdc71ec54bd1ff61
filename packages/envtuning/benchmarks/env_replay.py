"""EnvTuningEnv throughput: ground-truth episodes/s in the model-text protocol vs bfcl-eval.

Same process, same entries, the two sides alternating, each keeping its best of ``--repeats``
runs timed in CPU seconds of the process (``time.process_time``, so other load on a shared
machine counts for neither):

- ours: every entry's ground truth played through ``EnvTuningEnv`` as model text (one
  ``<tool_call>`` JSON response per turn, then an ``<answer>``; the texts are prepared before
  timing): environment set-up, system prompt, parsing, safe dispatch, augmentation, per-turn
  judging and rewards;
- baseline: the same calls through bfcl-eval's ``execute_multi_turn_func_call`` turn by turn,
  then ``multi_turn_checker`` for the verdict (what an environment built on bfcl-eval, like the
  released EnvTuning code, runs); no text parsing at all.

Both sides must score every entry fully. Run:
``python packages/envtuning/benchmarks/env_replay.py [--repeats 3] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from aworld_rl_core.benchmarking import best_of, parse_args, report
from aworld_rl_core.tooluse.bfcl import MULTI_TURN_CATEGORIES, load_category, version
from aworld_rl_core.tooluse.bfcl.reference import BfclReference
from aworld_rl_envtuning.env import EnvTuningEnv
from aworld_rl_envtuning.replay import ground_truth_responses


def ours(entries: list[Any], texts: list[list[str]]) -> int:
    """Play the prepared model texts (what the model would write: not timed as env work)."""
    passed = 0
    for entry, responses in zip(entries, texts, strict=True):
        env = EnvTuningEnv(entry)
        env.reset()
        for text in responses:
            step = env.step(text)
        env.close()
        passed += step.done and step.info["progress"] == 1.0 and step.info["format_errors"] == 0
    return passed


def baseline(ref: BfclReference, entries: list[Any]) -> int:
    passed = 0
    for entry in entries:
        ref.execute(entry, entry.ground_truth)
        passed += ref.multi_turn_valid(entry, entry.ground_truth)
    return passed


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs per side (best kept)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--entries", type=int, default=None, help="first N per category (all)")
    args = parse_args(parser, argv, short={"repeats": 1, "entries": 2})
    entries = [e for c in MULTI_TURN_CATEGORIES for e in load_category(c)[: args.entries]]
    texts = [[t for turn in ground_truth_responses(e) for t in turn] for e in entries]
    with tempfile.TemporaryDirectory() as root:
        ref = BfclReference(root)
        best = best_of(
            {"ours": lambda _: ours(entries, texts), "bfcl_eval": lambda _: baseline(ref, entries)},
            args.repeats,
        )
    passed = {side: run.result for side, run in best.items()}
    if passed != {"ours": len(entries), "bfcl_eval": len(entries)}:
        raise SystemExit(f"not every entry scored fully: {passed} of {len(entries)}")
    result = {
        "bfcl_eval": version(),
        "entries": len(entries),
        "ours_episodes_per_cpu_s": len(entries) / best["ours"].cpu_s,
        "bfcl_eval_episodes_per_cpu_s": len(entries) / best["bfcl_eval"].cpu_s,
        "ratio": best["bfcl_eval"].cpu_s / best["ours"].cpu_s,
    }
    report(result, args.json)
    return result


if __name__ == "__main__":
    main()
