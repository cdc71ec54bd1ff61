"""``core.bfcl-check``: replay BFCL ground truth through the tool-use runtime and the judges.

Needs no model. Every chosen entry's ground truth is replayed as if a model had written it
(multi-turn: through :class:`MultiTurnEpisode`; single-turn: rendered as a python call list and
judged by the native AST checker; irrelevance: an abstaining reply), optionally judged again by
bfcl-eval's own checkers to measure agreement. Reports pass counts per category, agreement,
throughput and the BFCL version; writes ``failures.jsonl`` and ``summary.json``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, Literal

from aworld_rl_core.config import limit_option, option
from aworld_rl_core.report import percent
from aworld_rl_core.runs import Run, RunResult
from aworld_rl_core.tooluse.bfcl.loader import (
    IRRELEVANCE_CATEGORIES,
    MULTI_TURN_CATEGORIES,
    SINGLE_TURN_CATEGORIES,
)

DEFAULT_CATEGORIES = SINGLE_TURN_CATEGORIES + IRRELEVANCE_CATEGORIES + MULTI_TURN_CATEGORIES
"""Every category with a known right answer (``live_relevance`` accepts any call: left out)."""


@dataclass(frozen=True, kw_only=True)
class DataConfig:
    """Which BFCL entries to replay."""

    categories: tuple[str, ...] = option(
        DEFAULT_CATEGORIES, help="BFCL categories (single-turn AST, irrelevance, multi-turn)"
    )
    limit: int | None = limit_option("first N entries per category")


@dataclass(frozen=True, kw_only=True)
class JudgeConfig:
    """How the replays are judged."""

    irrelevance_check: bool = option(
        True,
        help="multi-turn: turns with empty ground truth must have no call (BFCL's irrelevance "
        "checker); false mirrors bfcl-eval 2026.3.23's eval runner, which skips it",
    )
    positional: Literal["drop", "bind", "reject"] = option(
        "drop", help="single-turn positional arguments: drop (BFCL's decoder), bind, reject"
    )
    cross_check: bool = option(
        True, help="also judge with bfcl-eval's own checkers and report agreement"
    )


@dataclass(frozen=True, kw_only=True)
class BfclCheckConfig:
    """Replay BFCL ground truth through MultiTurnEpisode and the judges (no model)."""

    data: DataConfig = option(factory=DataConfig, help="entries to replay")
    judge: JudgeConfig = option(factory=JudgeConfig, help="judging options")


def _replayed_output(entry: Any) -> Any:
    """What a perfect model answers: ground-truth calls, or nothing where it should abstain."""
    from aworld_rl_core.tooluse.bfcl import ground_truth_text

    return entry.ground_truth if entry.is_multi_turn else ground_truth_text(entry)


def _judge(entry: Any, output: Any, cfg: JudgeConfig) -> Any:
    from aworld_rl_core.tooluse.bfcl import judge_multi_turn, judge_single_turn

    if entry.is_multi_turn:
        return judge_multi_turn(entry, output, irrelevance_check=cfg.irrelevance_check)
    return judge_single_turn(entry, output, positional=cfg.positional)


def _reference_verdict(reference: Any, entry: Any, output: Any, cfg: JudgeConfig) -> bool:
    if entry.is_multi_turn:
        return reference.multi_turn_valid(entry, output, irrelevance_check=cfg.irrelevance_check)
    return reference.single_turn_valid(entry, output)


def _load_reference(run: Run) -> tuple[Any, str]:
    """bfcl-eval's checkers, or None with the reason they are unavailable."""
    try:
        from aworld_rl_core.tooluse.bfcl.reference import BfclReference

        return BfclReference(run.dir / "bfcl-eval"), ""
    except ImportError as exc:
        return None, f"bfcl-eval's checkers do not import here ({exc})"


def _check_category(
    name: str, cfg: BfclCheckConfig, run: Run, reference: Any, failures: Any
) -> dict[str, float]:
    from aworld_rl_core.tooluse.bfcl import load_category

    entries = load_category(name, limit=cfg.data.limit)
    passed = agreed = 0
    ours_s = ref_s = 0.0
    for entry in run.progress(entries, total=len(entries), desc=name):
        output = _replayed_output(entry)
        start = time.perf_counter()
        verdict = _judge(entry, output, cfg.judge)
        ours_s += time.perf_counter() - start
        passed += verdict.valid
        record: dict[str, Any] = {"id": entry.id, "valid": verdict.valid}
        if reference is not None:
            start = time.perf_counter()
            theirs = _reference_verdict(reference, entry, output, cfg.judge)
            ref_s += time.perf_counter() - start
            agreed += theirs == verdict.valid
            record["bfcl_eval_valid"] = theirs
        if not verdict.valid or record.get("bfcl_eval_valid", verdict.valid) != verdict.valid:
            record.update(reason=verdict.reason, error_type=verdict.error_type)
            failures.write(json.dumps(record) + "\n")
    n = len(entries)
    stats = {"total": n, "passed": passed, "pass_rate": passed / n if n else 0.0}
    stats["entries_per_s"] = n / ours_s if ours_s else 0.0
    if reference is not None:
        stats["agreement"] = agreed / n if n else 0.0
        stats["bfcl_eval_entries_per_s"] = n / ref_s if ref_s else 0.0
    return stats


def _table_markdown(rows: dict[str, dict[str, float]], cross: bool) -> str:
    head = "| category | passed | total | pass rate | entries/s |"
    rule = "|---|---:|---:|---:|---:|"
    if cross:
        head += " agreement | bfcl-eval entries/s |"
        rule += "---:|---:|"
    lines = [head, rule]
    for name, s in rows.items():
        line = (
            f"| {name} | {s['passed']} | {s['total']} | {percent(s['pass_rate'], 2)} | "
            f"{s['entries_per_s']:.0f} |"
        )
        if cross:
            line += f" {percent(s['agreement'], 2)} | {s['bfcl_eval_entries_per_s']:.0f} |"
        lines.append(line)
    return "\n".join(lines)


def _print_table(rows: dict[str, dict[str, float]], cross: bool, title: str) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    columns = ["category", "passed", "total", "rate", "ours/s"]
    if cross:
        columns += ["agree", "bfcl/s"]
    for column in columns:
        if column == "category":
            table.add_column(column, no_wrap=True)
        else:
            table.add_column(column, justify="right")
    for name, s in rows.items():
        cells = [name, str(s["passed"]), str(s["total"]), percent(s["pass_rate"])]
        cells.append(f"{s['entries_per_s']:.0f}")
        if cross:
            cells += [percent(s["agreement"]), f"{s['bfcl_eval_entries_per_s']:.0f}"]
        table.add_row(*cells)
    Console().print(table)


def run(cfg: BfclCheckConfig, run: Run) -> RunResult:
    """Replay the chosen categories; metrics per category plus overall pass rate/agreement."""
    import importlib

    from aworld_rl_core.tooluse.bfcl import canonical_category, version
    from aworld_rl_core.tooluse.bfcl.apis import OFFLINE_CLASSES, api_class

    categories = [canonical_category(name) for name in cfg.data.categories]
    importlib.import_module("aworld_rl_core.tooluse.bfcl.judges")  # import before timing
    for name in sorted(OFFLINE_CLASSES):  # and the API modules (mpmath, ...)
        api_class(name)
    bfcl_version = version()
    reference, unavailable = _load_reference(run) if cfg.judge.cross_check else (None, "")
    rows: dict[str, dict[str, float]] = {}
    if run.resume:  # a resumed check replays every category again: each logs its row once
        run.rewind(-1)
    failures_path = run.dir / "failures.jsonl"
    with failures_path.open("w", encoding="utf-8") as failures:
        for step, name in enumerate(categories):
            rows[name] = _check_category(name, cfg, run, reference, failures)
            run.log({f"{k}/{name}": float(v) for k, v in rows[name].items()}, step=step)
    total = sum(s["total"] for s in rows.values())
    metrics: dict[str, float] = {
        f"{key}/{name}": float(value) for name, s in rows.items() for key, value in s.items()
    }
    metrics["entries"] = float(total)
    metrics["pass_rate"] = sum(s["passed"] for s in rows.values()) / total if total else 0.0
    cross = reference is not None
    if cross:
        agreed = sum(s["agreement"] * s["total"] for s in rows.values())
        metrics["agreement"] = agreed / total if total else 0.0
    title = f"BFCL ground-truth replay (bfcl-eval {bfcl_version})"
    note = f"\n\n{unavailable}" if unavailable else ""
    run.add_section(title, _table_markdown(rows, cross) + note)
    if not run.quiet:
        _print_table(rows, cross, title)
    summary = {"bfcl_eval_version": bfcl_version, "categories": rows, **metrics}
    summary_path = run.dir / "summary.json"
    summary_path.write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return RunResult(
        metrics=metrics,
        outputs={"summary": summary_path, "failures": failures_path},
        headline=["entries", "pass_rate", "agreement"],
    )
