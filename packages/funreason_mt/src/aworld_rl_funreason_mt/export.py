"""Kept trajectories as training data: core records, the per-turn split, LLaMA-Factory, verl, BFCL.

- :func:`to_record`: one trajectory as a core :class:`~aworld_rl_core.records.ToolUseRecord`
  (the FunReason-MT system prompt with the tools, every round's messages, the per-turn ground
  truth, ``metadata.error_tool_response`` as on the released dataset, the BFCL entry);
- :func:`split_per_turn`: the paper's training split (MT-v2 5.1): one record per assistant
  response, ending with it, so that only that response is trained on (core's hf-sft does this
  itself with ``trainer.sft.per_turn``; LLaMA-Factory needs ``mask_history: true``);
- :func:`write_exports`: records, split records, sharegpt (through core's converter), verl
  parquet rows for RL, and the BFCL entries with a ``possible_answer`` file.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from aworld_rl_core.records import ToolUseRecord, bfcl_function_to_tool, write_jsonl
from aworld_rl_funreason_mt.trajectory import Trajectory

DATA_SOURCE = "funreason_mt"
FORMATS = ("records", "split", "sharegpt", "verl", "bfcl")
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


def rl_rows(trajectories: Iterable[Trajectory]) -> list[dict[str, Any]]:
    """RL rows: the opening messages and the BFCL entry the environment plays (JSON)."""
    rows = []
    for trajectory in trajectories:
        messages = trajectory.messages()
        rows.append(
            {
                "prompt": messages[:2],
                "entry_id": trajectory.entry_id,
                "bfcl_entry": json.dumps(trajectory.bfcl_entry(), ensure_ascii=False),
                "data_source": DATA_SOURCE,
            }
        )
    return rows


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
    formats: Sequence[str] = FORMATS,
    name: str = "funreason_mt",
    tools_in_template: bool = False,
) -> dict[str, Path]:
    """Write the chosen ``formats`` under ``directory``; returns name -> path."""
    from aworld_rl_core.records import write_sharegpt, write_verl_parquet

    unknown = sorted(set(formats) - set(FORMATS))
    if unknown:
        raise ValueError(f"unknown export formats {unknown}; choose from {', '.join(FORMATS)}")
    if not trajectories:
        return {}
    out_dir = Path(directory)
    records = [to_record(t, with_tools=tools_in_template) for t in trajectories]
    split = [part for r in records for part in split_per_turn(r)]
    paths: dict[str, Path] = {}
    if "records" in formats:
        paths["records"] = write_jsonl(records, out_dir / "records.jsonl")
    if "split" in formats:
        paths["split"] = write_jsonl(split, out_dir / "records_per_turn.jsonl")
    if "sharegpt" in formats:
        sharegpt = out_dir / "sharegpt"
        keys = FLAG_COLUMNS
        paths["sharegpt"] = write_sharegpt(records, sharegpt, name, metadata_keys=keys)
        paths["sharegpt_per_turn"] = write_sharegpt(
            split, sharegpt, f"{name}_per_turn", metadata_keys=keys
        )
    if "verl" in formats:
        rl = [_rl_record(t, r) for t, r in zip(trajectories, records, strict=True)]
        paths["verl"] = write_verl_parquet(rl, out_dir / "verl" / "train.parquet")
    if "bfcl" in formats:
        paths.update(write_bfcl(trajectories, out_dir / "bfcl", f"BFCL_v4_multi_turn_{name}"))
    return paths


def _rl_record(trajectory: Trajectory, record: ToolUseRecord) -> ToolUseRecord:
    """The record verl rows come from: the prompt, and the entry as the environment's input."""
    entry = trajectory.bfcl_entry()
    metadata: Mapping[str, Any] = {
        "interaction_kwargs": {"entry_id": entry["id"], "bfcl_entry": json.dumps(entry)},
        "error_tool_response": trajectory.error_tool_response,
    }
    return ToolUseRecord(
        id=record.id,
        messages=record.messages[:2],
        tools=record.tools,
        ground_truth=record.ground_truth,
        data_source=DATA_SOURCE,
        metadata=dict(metadata),
    )
