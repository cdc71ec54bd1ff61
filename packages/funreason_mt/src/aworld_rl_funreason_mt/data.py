"""Reading synthesized data back: trajectories, BFCL-shaped entries and records, from any of
the files ``funreason_mt.synthesize`` writes (``package:relative/path`` names packaged files)."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from aworld_rl_core.records import ToolUseRecord
from aworld_rl_funreason_mt.export import to_record
from aworld_rl_funreason_mt.trajectory import Trajectory

DEMO_TRAJECTORIES = "aworld_rl_funreason_mt:data/demo_trajectories.jsonl"
"""Trajectories the demo preset made (a pipeline demo: oracle-written queries and reasoning)."""


def resolve(path: str) -> Path:
    """A file path, or ``package:relative/path`` inside an installed package."""
    if ":" in path and not Path(path).exists():
        package, _, relative = path.partition(":")
        return Path(str(resources.files(package).joinpath(relative)))
    return Path(path)


def json_lines(file: Path) -> list[dict[str, Any]]:
    """One JSON object per non-empty line (an error names the file and line)."""
    rows = []
    for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{file}:{number}: not a JSON line ({exc.msg})") from None
    return rows


def _rows(path: str) -> list[dict[str, Any]]:
    """The file's rows; the pipeline's own file (``synthesis.jsonl``) gives its kept
    trajectories."""
    rows = []
    for row in _file_rows(path):
        if _kind(row) == "pipeline":
            if row["passed"]:
                rows.append(row["item"]["trajectory"])
        else:
            rows.append(row)
    return rows


def _file_rows(path: str) -> list[dict[str, Any]]:
    file = resolve(path)
    if file.is_dir():
        file = file / "trajectories.jsonl"
    if not file.is_file():
        raise FileNotFoundError(
            f"no data at {path}: give trajectories.jsonl (or the run directory) of "
            "funreason_mt.synthesize, its records.jsonl, or a BFCL-shaped entries file"
        )
    return json_lines(file)


def _kind(row: dict[str, Any]) -> str:
    if "status" in row and "item" in row and "trail" in row:
        return "pipeline"
    if "rounds" in row:
        return "trajectory"
    if "messages" in row:
        return "record"
    if "question" in row and "ground_truth" in row:
        return "entry"
    raise ValueError(f"unknown row (keys {sorted(row)[:8]}): not a trajectory, record or entry")


def read_records(path: str, *, with_tools: bool = False) -> list[ToolUseRecord]:
    """Training records from trajectories or records files."""
    out = []
    for row in _rows(path):
        kind = _kind(row)
        if kind == "trajectory":
            out.append(to_record(Trajectory.from_dict(row), with_tools=with_tools))
        elif kind == "record":
            record = ToolUseRecord.from_dict(row)
            out.append(record if with_tools else ToolUseRecord.from_dict({**row, "tools": []}))
        else:
            raise ValueError(
                f"{path} holds BFCL entries, not conversations: SFT needs trajectories"
            )
    return out


def read_entries(path: str) -> list[dict[str, Any]]:
    """BFCL-shaped entries from trajectories, records (``metadata.bfcl_entry``) or entry files."""
    out = []
    for row in _rows(path):
        kind = _kind(row)
        if kind == "trajectory":
            out.append(Trajectory.from_dict(row).bfcl_entry())
        elif kind == "record":
            entry = (row.get("metadata") or {}).get("bfcl_entry")
            if entry is None:
                raise ValueError(f"a record in {path} has no metadata.bfcl_entry")
            out.append(entry)
        else:
            out.append(row)
    return out


def trajectories_dataset(
    path: str = DEMO_TRAJECTORIES, *, with_tools: bool = False, drop_error_responses: bool = False
) -> list[ToolUseRecord]:
    """``funreason_mt.trajectories``: synthesized trajectories as core records (dataset builder)."""
    records = read_records(path, with_tools=with_tools)
    if drop_error_responses:
        records = [r for r in records if not r.metadata.get("error_tool_response")]
    return records
