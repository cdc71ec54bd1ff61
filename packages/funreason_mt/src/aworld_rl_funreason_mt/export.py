"""Kept trajectories as training data: core records, the per-turn split, LLaMA-Factory, verl, BFCL.

- :func:`to_record`: one trajectory as a core :class:`~aworld_rl_core.records.ToolUseRecord`
  (the FunReason-MT system prompt with the tools, every round's messages, the per-turn ground
  truth, ``metadata.error_tool_response`` as on the released dataset, the BFCL entry);
- :func:`split_per_turn`: the paper's training split (MT-v2 5.1): one record per assistant
  response, ending with it, so that only that response is trained on (core's hf-sft does this
  itself with ``trainer.sft.per_turn``); the export holds references (:func:`per_turn_refs`:
  record id and prefix length), so a long system prompt is stored once per conversation;
- :func:`write_exports`: records, split records, sharegpt (through core's converter), verl
  parquet rows for RL, and the BFCL entries with a ``possible_answer`` file.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from aworld_rl_core.records import ToolUseRecord, write_jsonl
from aworld_rl_core.tooluse.bfcl.records import bfcl_function_to_tool
from aworld_rl_funreason_mt.round_env import ToolDocs
from aworld_rl_funreason_mt.trajectory import Trajectory

DATA_SOURCE = "funreason_mt"
FORMATS = ("records", "split", "sharegpt", "sharegpt_per_turn", "verl", "bfcl")
DEFAULT_FORMATS = ("records", "split", "sharegpt", "verl", "bfcl")
"""Written by default. ``sharegpt_per_turn`` (one LLaMA-Factory sample per assistant turn, each
with the whole system prompt and history) is on request: with causal attention, training a whole
conversation's assistant turns at once gives each turn the same loss and context."""
FLAG_COLUMNS = ("error_tool_response",)
"""Record flags every export carries (the dataset card: drop rows where it is true)."""


def to_record(trajectory: Trajectory, *, with_tools: bool = True) -> ToolUseRecord:
    """One trajectory as a core record (``with_tools=False``: the tool schemas live only in the
    system prompt, the paper's prompt-based format, so chat templates do not add them again)."""
    tools = [bfcl_function_to_tool(d) for d in trajectory.function_docs] if with_tools else []
    return ToolUseRecord(
        id=trajectory.entry_id,
        messages=trajectory.messages(),
        tools=tools,
        ground_truth=trajectory.ground_truth(),
        data_source=DATA_SOURCE,
        metadata={
            "error_tool_response": trajectory.error_tool_response,
            "classes": list(trajectory.classes),
            "targets": [r.target for r in trajectory.rounds],
            "attempts": [r.attempts for r in trajectory.rounds],
            "bfcl_entry": trajectory.bfcl_entry(),
        },
    )


def split_per_turn(record: ToolUseRecord) -> list[ToolUseRecord]:
    """One record per assistant message, ending with it (``metadata.supervised_turn`` = its
    index among the assistant messages); earlier messages are context."""
    out = []
    for n, index in enumerate(record.assistant_indices()):
        metadata = {k: v for k, v in record.metadata.items() if k != "bfcl_entry"}
        out.append(
            ToolUseRecord(
                id=f"{record.id}#{n}",
                messages=record.messages[: index + 1],
                tools=record.tools,
                ground_truth=record.ground_truth,
                data_source=record.data_source,
                metadata={**metadata, "supervised_turn": n},
            )
        )
    return out


def per_turn_refs(record: ToolUseRecord) -> list[dict[str, Any]]:
    """The per-turn split of a record as references (what ``records_per_turn.jsonl`` holds):
    each sample names its record and how many of its messages it keeps, so the system prompt
    and the history are stored once (:func:`expand_per_turn` rebuilds the samples)."""
    return [
        {
            "id": part.id,
            "record": record.id,
            "messages": len(part.messages),
            "supervised_turn": part.metadata["supervised_turn"],
            "error_tool_response": bool(record.metadata.get("error_tool_response")),
        }
        for part in split_per_turn(record)
    ]


def expand_per_turn(
    records: Iterable[ToolUseRecord], refs: Iterable[Mapping[str, Any]]
) -> list[ToolUseRecord]:
    """The per-turn samples ``refs`` name, cut from ``records`` (an unknown record or a length
    that does not end on an assistant message is an error naming the sample)."""
    by_id = {r.id: r for r in records}
    out = []
    for ref in refs:
        record = by_id.get(ref["record"])
        if record is None:
            raise ValueError(
                f"per-turn sample {ref['id']!r} names unknown record {ref['record']!r}"
            )
        messages = record.messages[: int(ref["messages"])]
        if not messages or messages[-1]["role"] != "assistant":
            raise ValueError(f"per-turn sample {ref['id']!r} does not end on an assistant message")
        metadata = {k: v for k, v in record.metadata.items() if k != "bfcl_entry"}
        out.append(
            ToolUseRecord(
                id=ref["id"],
                messages=messages,
                tools=record.tools,
                ground_truth=record.ground_truth,
                data_source=record.data_source,
                metadata={**metadata, "supervised_turn": ref["supervised_turn"]},
            )
        )
    return out


def rl_row(entry: Mapping[str, Any], *, tool_docs: ToolDocs = "json") -> dict[str, Any]:
    """The RL row of one BFCL-shaped entry (the one place rows are built): the FunReason-MT
    opening (system prompt with the tools, first user turn) and the entry the environment plays,
    as JSON (verl's parquet keeps it as one string)."""
    from aworld_rl_funreason_mt.round_env import system_prompt

    opening = [{"role": "system", "content": system_prompt(entry["function"], tool_docs)}]
    opening += [dict(m) for m in entry["question"][0]]
    return {
        "prompt": opening,
        "entry_id": entry["id"],
        "bfcl_entry": json.dumps(entry, ensure_ascii=False),
        "data_source": DATA_SOURCE,
    }


def rl_rows(
    items: Iterable[Trajectory | Mapping[str, Any]], *, tool_docs: ToolDocs = "json"
) -> list[dict[str, Any]]:
    """RL rows of trajectories or BFCL-shaped entries (:func:`rl_row`)."""
    return [
        rl_row(i.bfcl_entry() if isinstance(i, Trajectory) else i, tool_docs=tool_docs)
        for i in items
    ]


def write_bfcl(trajectories: Sequence[Trajectory], directory: Path, name: str) -> dict[str, Path]:
    """BFCL's layout: ``<name>.json`` (question entries, one per line) and
    ``possible_answer/<name>.json`` (``{"id", "ground_truth"}``)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "possible_answer").mkdir(exist_ok=True)
    questions, answers = directory / f"{name}.json", directory / "possible_answer" / f"{name}.json"
    with questions.open("w", encoding="utf-8") as q, answers.open("w", encoding="utf-8") as a:
        for t in trajectories:
            entry = t.bfcl_entry()
            q.write(json.dumps(entry, ensure_ascii=False) + "\n")
            a.write(json.dumps({"id": entry["id"], "ground_truth": entry["ground_truth"]}) + "\n")
    return {"bfcl": questions, "bfcl_answers": answers}


def write_exports(
    trajectories: Sequence[Trajectory],
    directory: str | Path,
    *,
    formats: Sequence[str] = DEFAULT_FORMATS,
    name: str = "funreason_mt",
    tools_in_template: bool = False,
) -> dict[str, Path]:
    """Write the chosen ``formats`` under ``directory``; returns name -> path."""
    from aworld_rl_core.backends.verl.rows import write_verl_parquet
    from aworld_rl_core.records import write_sharegpt

    unknown = sorted(set(formats) - set(FORMATS))
    if unknown:
        raise ValueError(f"unknown export formats {unknown}; choose from {', '.join(FORMATS)}")
    if not trajectories:
        return {}
    out_dir = Path(directory)
    records = [to_record(t, with_tools=tools_in_template) for t in trajectories]
    paths: dict[str, Path] = {}
    if "records" in formats:
        paths["records"] = write_jsonl(records, out_dir / "records.jsonl")
    if "split" in formats:
        refs = [ref for r in records for ref in per_turn_refs(r)]
        paths["split"] = _write_rows(refs, out_dir / "records_per_turn.jsonl")
    sharegpt = out_dir / "sharegpt"
    if "sharegpt" in formats:
        paths["sharegpt"] = write_sharegpt(records, sharegpt, name, metadata_keys=FLAG_COLUMNS)
    if "sharegpt_per_turn" in formats:
        split = [part for r in records for part in split_per_turn(r)]
        paths["sharegpt_per_turn"] = write_sharegpt(
            split, sharegpt, f"{name}_per_turn", metadata_keys=FLAG_COLUMNS
        )
    if "verl" in formats:
        rl = [_rl_record(t, r) for t, r in zip(trajectories, records, strict=True)]
        paths["verl"] = write_verl_parquet(rl, out_dir / "verl" / "train.parquet")
    if "bfcl" in formats:
        paths.update(write_bfcl(trajectories, out_dir / "bfcl", f"BFCL_v4_multi_turn_{name}"))
    return paths


def _write_rows(rows: Iterable[Mapping[str, Any]], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(dict(row), ensure_ascii=False) + "\n")
    return path


def _rl_record(trajectory: Trajectory, record: ToolUseRecord) -> ToolUseRecord:
    """The record verl rows come from: the RL row's prompt, and the entry as the environment's
    input."""
    row = rl_row(trajectory.bfcl_entry())
    metadata: Mapping[str, Any] = {
        "interaction_kwargs": {"entry_id": row["entry_id"], "bfcl_entry": row["bfcl_entry"]},
        "error_tool_response": trajectory.error_tool_response,
    }
    return ToolUseRecord(
        id=record.id,
        messages=row["prompt"],
        tools=record.tools,
        ground_truth=record.ground_truth,
        data_source=DATA_SOURCE,
        metadata=dict(metadata),
    )
