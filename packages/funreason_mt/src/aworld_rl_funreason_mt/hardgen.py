"""HardGen mode: sample toward the tools that both a target and a reference model fail on.

HardGen (arXiv 2601.01498) builds its graph from "failure APIs": tools on which both the target
(Qwen3-4B) and a reference model (Llama-3.2-3B) produce wrong execution results. Here the
evaluation outputs of each model are read from BFCL's result layout (``{"id", "result"}`` lines,
``result`` = turn -> step -> call strings; what ``bfcl generate`` and our evaluations write) or
from BFCL score files (entry-level failures). A tool *fails* for a model in a turn when a
ground-truth call of that turn to the tool is not among the calls the model made in it (calls
compared in canonical keyword form); an entry BFCL's multi-turn judge passes has no failures.
With score files only the failing entries are known, so every ground-truth tool of a failing
entry counts. :func:`hard_tools` keeps the tools both models fail on.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from aworld_rl_core.tooluse import ToolCallParseError, parse_python_calls, signatures_from_tools
from aworld_rl_funreason_mt.contamination import canonical
from aworld_rl_funreason_mt.data import json_lines


def _files(path: str | Path, suffix: str) -> list[Path]:
    path = Path(path)
    if path.is_file():
        return [path]
    if path.is_dir():
        found = sorted(path.rglob(f"*{suffix}"))
        if found:
            return found
    raise FileNotFoundError(
        f"no BFCL {suffix.strip('_.json') or 'result'} files at {path}: give a file or a folder "
        f"holding *{suffix} (BFCL's result/<model>/ or score/<model>/ layout)"
    )


def read_results(path: str | Path) -> dict[str, list[Any]]:
    """Entry id -> model result (turn -> step -> call strings) from BFCL result files."""
    out = {}
    for file in _files(path, "_result.json"):
        for row in json_lines(file):
            if "id" in row and isinstance(row.get("result"), list):
                out[str(row["id"])] = row["result"]
    return out


def read_failed_ids(path: str | Path) -> set[str]:
    """Ids of the entries BFCL's score files mark as failed (lines after the summary)."""
    failed = set()
    for file in _files(path, "_score.json"):
        for row in json_lines(file)[1:]:
            if "id" in row and row.get("valid") is not True:
                failed.add(str(row["id"]))
    return failed


def _flat(turn: Any) -> list[str]:
    """A turn's calls: steps are call-string lists (decoded) or raw model text (BFCL's result
    files for prompting models: ``"[cd(folder='x'), ls()]"``; text that is no call list is
    skipped, as BFCL's eval runner does)."""
    calls: list[str] = []
    for step in turn if isinstance(turn, list) else []:
        items = step if isinstance(step, list) else [step]
        for item in items:
            if not isinstance(item, str):
                continue
            try:
                calls += [c.to_python() for c in parse_python_calls(item.strip())]
            except ToolCallParseError:
                continue
    return calls


def failed_tools(entries: Mapping[str, Any], results: Mapping[str, Sequence[Any]]) -> Counter[str]:
    """How often each tool failed for one model (see the module docstring)."""
    from aworld_rl_core.tooluse.bfcl import judge_multi_turn

    failures: Counter[str] = Counter()
    for entry_id, result in results.items():
        entry = entries.get(entry_id)
        if entry is None or entry.ground_truth is None:
            continue
        turns = [_flat(t) for t in result]
        if judge_multi_turn(entry, turns).valid:
            continue
        signatures = signatures_from_tools([dict(d) for d in entry.functions])
        for index, expected in enumerate(entry.ground_truth):
            made = set(canonical(turns[index], signatures)) if index < len(turns) else set()
            for call in expected:
                if canonical([call], signatures)[0] not in made:
                    failures[parse_python_calls(call)[0].name] += 1
    return failures


def failed_entry_tools(entries: Mapping[str, Any], failed: Iterable[str]) -> Counter[str]:
    """Every ground-truth tool of the failed entries (score files give no per-call detail)."""
    tools: Counter[str] = Counter()
    for entry_id in failed:
        entry = entries.get(entry_id)
        for turn in (entry.ground_truth or []) if entry is not None else []:
            tools.update(parse_python_calls(c)[0].name for c in turn)
    return tools


def model_failures(path: str | Path, entries: Mapping[str, Any]) -> Counter[str]:
    """Failure counts of one model from a results or a score path."""
    try:
        return failed_tools(entries, read_results(path))
    except FileNotFoundError:
        return failed_entry_tools(entries, read_failed_ids(path))


def hard_tools(
    target: str | Path, reference: str | Path, *, categories: Sequence[str] | None = None
) -> list[str]:
    """Tools both models fail on (sorted), from their BFCL multi-turn evaluation outputs."""
    from aworld_rl_core.tooluse.bfcl import MULTI_TURN_CATEGORIES, load_category

    entries = {e.id: e for c in categories or MULTI_TURN_CATEGORIES for e in load_category(c)}
    both = set(model_failures(target, entries)) & set(model_failures(reference, entries))
    return sorted(both)
