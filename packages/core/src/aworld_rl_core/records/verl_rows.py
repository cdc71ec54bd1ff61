"""Records -> verl ``RLHFDataset`` parquet rows (verl 0.9).

A row: ``data_source``, ``prompt`` (the messages before the first assistant turn, as
``{"role", "content"}``), ``ability``, ``reward_model`` (``{"style": "rule", "ground_truth":
<JSON string>}``), ``extra_info`` (``index``, ``split``, ``id``, ``tools`` and ``metadata`` as
JSON strings, plus ``tools_kwargs`` / ``need_tools_kwargs`` / ``interaction_kwargs`` when the
record's metadata holds non-empty ones) and, optionally, ``agent_name``.

Nested values whose shape varies between rows (ground truth, tool schemas, metadata) are JSON
strings: Arrow aligns structs across rows and would fill missing keys with nulls. Empty dicts
are omitted (Arrow cannot write an empty struct).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from aworld_rl_core.records.record import RecordError, ToolUseRecord, as_record

_PASSTHROUGH = ("tools_kwargs", "interaction_kwargs")


def to_verl_row(
    item: ToolUseRecord | Mapping[str, Any],
    index: int,
    *,
    split: str = "train",
    ability: str = "tool_use",
    agent_name: str | None = None,
) -> dict[str, Any]:
    """One record as a verl RLHFDataset row."""
    record = as_record(item)
    prompt = [{"role": m["role"], "content": m["content"]} for m in record.prompt_messages()]
    if not prompt:
        raise RecordError(
            f"record {record.id!r}: no prompt (it starts with an assistant message); an RL row "
            "needs the opening user message"
        )
    extra: dict[str, Any] = {
        "index": index,
        "split": split,
        "id": record.id,
        "tools": json.dumps(record.tools, ensure_ascii=False),
        "metadata": json.dumps(record.metadata, ensure_ascii=False),
    }
    for key in _PASSTHROUGH:
        value = record.metadata.get(key)
        if value:
            extra[key] = value
    if "tools_kwargs" in extra:
        extra["need_tools_kwargs"] = True
    row = {
        "data_source": record.data_source or "aworld_rl",
        "prompt": prompt,
        "ability": ability,
        "reward_model": {
            "style": "rule",
            "ground_truth": json.dumps(record.ground_truth, ensure_ascii=False),
        },
        "extra_info": extra,
    }
    if agent_name:
        row["agent_name"] = agent_name
    return row


def write_verl_parquet(
    records: Iterable[ToolUseRecord | Mapping[str, Any]],
    path: str | Path,
    *,
    split: str = "train",
    ability: str = "tool_use",
    agent_name: str | None = None,
) -> Path:
    """Write records as a verl parquet file (``data.train_files`` / ``data.val_files``)."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ModuleNotFoundError:
        raise RecordError(
            "write_verl_parquet needs pyarrow: pip install pyarrow (it comes with "
            "aworld-rl-core[trl] and [verl])"
        ) from None

    rows = [
        to_verl_row(r, i, split=split, ability=ability, agent_name=agent_name)
        for i, r in enumerate(records)
    ]
    if not rows:
        raise RecordError(f"write_verl_parquet({str(path)!r}): no records to write")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def verl_ground_truth(value: Any) -> Any:
    """Decode ``reward_model.ground_truth`` as written by ``to_verl_row`` (JSON string)."""
    return json.loads(value) if isinstance(value, str) else value
