"""BFCL replay benchmark: our tool-use runtime vs bfcl-eval's executor and checkers.

Same process, same entries, best of ``--repeats`` alternating runs each, timed in CPU seconds of
this process (``time.process_time``) so that other load on a shared machine counts for neither:

1. execution: all 800 multi-turn ground truths, turn by turn, through ``MultiTurnEpisode``
   (``judge=False``) vs ``execute_multi_turn_func_call``; the result strings must be identical;
2. execution + judging: ``judge_multi_turn`` vs ``multi_turn_checker`` (+ its irrelevance
   checker) on the ground truths; the verdicts must be identical;
3. single-turn judging: every python single-turn possible answer rendered as model output,
   ``judge_single_turn`` vs bfcl-eval's decoder + ``ast_checker``; identical verdicts. Ours reads
   these plain call lists with its token scanner; bfcl-eval spends most of its time in Python's
   ``ast.parse``;
3b. the same outputs with a trailing ``# comment``, which our scanner leaves to its ``ast``
   reader (the worst case for us: scanning first, then ``ast.parse`` as bfcl-eval does);
4. the AST check alone on already-decoded calls;
5. memory still allocated after one execution pass (tracemalloc).

Run: ``python packages/core/benchmarks/bfcl_replay.py [--repeats 5] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import gc
import tempfile
import tracemalloc
import uuid
from collections.abc import Callable
from typing import Any

from aworld_rl_core.benchmarking import best_of, parse_args, report
from aworld_rl_core.tooluse import format_python_calls
from aworld_rl_core.tooluse.bfcl import (
    MULTI_TURN_CATEGORIES,
    PYTHON_AST_CATEGORIES,
    MultiTurnEpisode,
    ground_truth_calls,
    judge_multi_turn,
    judge_single_turn,
    language_of,
    load_category,
    version,
)
from aworld_rl_core.tooluse.bfcl.episode import clear_parse_cache
from aworld_rl_core.tooluse.bfcl.reference import BfclReference


def ours_execute(entries: list[Any]) -> list[list[list[str]]]:
    clear_parse_cache()  # each timed pass starts cold: only repeats within the pass are reused
    out = []
    for entry in entries:
        with MultiTurnEpisode(entry, judge=False) as episode:
            turns = []
            for calls in entry.ground_truth:
                turns.append(episode.execute(calls))
                episode.end_turn()
        out.append(turns)
    return out


def bfcl_execute(ref: BfclReference, entries: list[Any]) -> list[list[list[str]]]:
    """bfcl-eval's executor; its cached instances are dropped after the timed loop."""
    execute = ref._utils.execute_multi_turn_func_call
    names, out = [], []
    for entry in entries:
        name = f"bench{uuid.uuid4().hex}"
        names.append(name)
        raw = entry.raw
        out.append(
            [
                execute(
                    list(calls),
                    raw["initial_config"],
                    raw["involved_classes"],
                    name,
                    entry.id,
                    long_context=entry.long_context,
                )[0]
                for calls in entry.ground_truth
            ]
        )
    return out, names


def paired(
    ours: Callable[[], Any],
    theirs: Callable[[], Any],
    repeats: int,
    after: Callable[[Any], None] | None = None,
):
    """Best CPU seconds of each side over ``repeats`` alternating runs, and those runs' results.

    ``after(result)`` runs on each result of ``theirs``, outside the timing.
    """

    def after_theirs(side: str, result: Any) -> None:
        if side == "theirs" and after is not None:
            after(result)

    best = best_of({"ours": lambda _: ours(), "theirs": lambda _: theirs()}, repeats, after_theirs)
    return best["ours"].cpu_s, best["theirs"].cpu_s, best["ours"].result, best["theirs"].result


def retained_bytes(fn: Callable[[], Any]) -> int:
    """Bytes still allocated (tracemalloc) after ``fn`` returned and its result was dropped."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        fn()
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs per measurement (best kept)")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--entries", type=int, default=None, help="first N per category (all)")
    args = parse_args(parser, argv, short={"repeats": 1, "entries": 3})

    ref = BfclReference(tempfile.mkdtemp(prefix="bfcl-bench-"))
    multi = [e for c in MULTI_TURN_CATEGORIES for e in load_category(c)[: args.entries]]
    single = [e for c in PYTHON_AST_CATEGORIES for e in load_category(c)[: args.entries]]
    texts = [format_python_calls(ground_truth_calls(e)) for e in single]

    def forget(result: Any) -> None:
        for name in result[1]:
            ref._forget(name)

    # 1. execution only
    forget(bfcl_execute(ref, multi))  # warm up both sides (imports, per-entry JSON state)
    ours_execute(multi)
    t_ours_exec, t_bfcl_exec, ours_results, (bfcl_results, _) = paired(
        lambda: ours_execute(multi), lambda: bfcl_execute(ref, multi), args.repeats, forget
    )
    identical = ours_results == bfcl_results

    # 2. execution + judging
    t_ours_judge, t_bfcl_judge, ours_verdicts, bfcl_verdicts = paired(
        lambda: clear_parse_cache() or [judge_multi_turn(e, e.ground_truth).valid for e in multi],
        lambda: [ref.multi_turn_valid(e, e.ground_truth) for e in multi],
        args.repeats,
    )

    # 3. single-turn judging
    pairs = list(zip(single, texts, strict=True))
    t_ours_ast, t_bfcl_ast, ours_ast, bfcl_ast = paired(
        lambda: [judge_single_turn(e, t).valid for e, t in pairs],
        lambda: [ref.single_turn_valid(e, t) for e, t in pairs],
        args.repeats,
    )

    # 3b. outputs that our scanner leaves to the ast reader
    commented = [(e, t + "  # done") for e, t in pairs]
    t_ours_fb, t_bfcl_fb, ours_fb, bfcl_fb = paired(
        lambda: [judge_single_turn(e, t).valid for e, t in commented],
        lambda: [ref.single_turn_valid(e, t) for e, t in commented],
        args.repeats,
    )

    from aworld_rl_core.tooluse.bfcl.ast_checker import ast_check
    from aworld_rl_core.tooluse.bfcl.framing import decode_single_turn

    ours_decoded = [[{c.name: c.arguments} for c in decode_single_turn(t)] for t in texts]
    bfcl_decoded = [ref._decode(t) for t in texts]
    t_ours_chk, t_bfcl_chk, ours_chk, bfcl_chk = paired(
        lambda: [
            ast_check(e.functions, d, e.ground_truth, e.category)[0]
            for e, d in zip(single, ours_decoded, strict=True)
        ],
        lambda: [
            ref._ast.ast_checker(
                e.functions,
                d,
                e.ground_truth,
                ref._languages[language_of(e.category)][0],
                e.category,
                "bench",
            )["valid"]
            for e, d in zip(single, bfcl_decoded, strict=True)
        ],
        args.repeats,
    )

    rows = {
        "multi-turn execution (800 GT)": (len(multi), t_ours_exec, t_bfcl_exec, identical),
        "multi-turn execution + judging": (
            len(multi),
            t_ours_judge,
            t_bfcl_judge,
            ours_verdicts == bfcl_verdicts,
        ),
        f"single-turn AST judging ({len(single)})": (
            len(single),
            t_ours_ast,
            t_bfcl_ast,
            ours_ast == bfcl_ast,
        ),
        "  same + comment (ours: ast reader)": (
            len(single),
            t_ours_fb,
            t_bfcl_fb,
            ours_fb == bfcl_fb == ours_ast,
        ),
        "  of which the AST check alone": (
            len(single),
            t_ours_chk,
            t_bfcl_chk,
            ours_chk == bfcl_chk,
        ),
    }
    figures: dict[str, Any] = {"bfcl_eval_version": version(), "repeats": args.repeats}
    print(f"bfcl-eval {version()}, best of {args.repeats}")
    print(f"{'measurement':36} {'ours/s':>9} {'bfcl/s':>9} {'ratio':>6}  identical")
    for label, (n, ours_s, bfcl_s, same) in rows.items():
        ratio = bfcl_s / ours_s
        print(f"{label:36} {n / ours_s:9.0f} {n / bfcl_s:9.0f} {ratio:5.2f}x  {same}")
        figures[label] = {
            "entries": n,
            "ours_per_s": round(n / ours_s, 1),
            "bfcl_eval_per_s": round(n / bfcl_s, 1),
            "ratio": round(ratio, 3),
            "identical": same,
        }
    # 5. memory left behind by one pass over the 800 entries (bfcl-eval keeps every instance in
    # its executor module's globals until someone deletes them)
    kept: list[str] = []
    ours_kept = retained_bytes(lambda: ours_execute(multi))
    bfcl_kept = retained_bytes(lambda: kept.extend(bfcl_execute(ref, multi)[1]))
    cached = sum(1 for k in vars(ref._utils) if k.startswith(tuple(kept)))
    for name in kept:
        ref._forget(name)
    print(
        f"memory kept after one pass: ours {ours_kept / 2**20:.2f} MiB, "
        f"bfcl-eval {bfcl_kept / 2**20:.2f} MiB ({cached} API instances left in module globals)"
    )
    figures["retained_mib"] = {
        "ours": round(ours_kept / 2**20, 3),
        "bfcl_eval": round(bfcl_kept / 2**20, 3),
        "bfcl_eval_cached_instances": cached,
    }
    report(figures, args.json, echo=False)
    if not all(same for *_, same in rows.values()):
        raise SystemExit("results differ between our runtime and bfcl-eval")
    return figures


if __name__ == "__main__":
    main()
