"""Core records (the tool-use sample) and converters to the training libraries' formats.

- ``ToolUseRecord``: OpenAI chat messages with tool calls, tool schemas, ground truth, metadata.
- ``write_sharegpt`` / ``to_sharegpt``: LLaMA-Factory sharegpt + ``dataset_info.json``.
- ``write_verl_parquet`` / ``to_verl_row``: verl ``RLHFDataset`` parquet rows.
- ``to_trl_rows``: TRL conversational rows (``messages``, ``prompt_completion``, ``prompt``).
- ``from_bfcl``: a BFCL entry as a record.
Pure Python; ``pyarrow`` is imported only by ``write_verl_parquet``.
"""

from aworld_rl_core.records.bfcl import bfcl_function_to_tool, from_bfcl
from aworld_rl_core.records.record import (
    RecordError,
    ToolUseRecord,
    as_record,
    read_jsonl,
    write_jsonl,
)
from aworld_rl_core.records.sharegpt import dataset_info_entry, to_sharegpt, write_sharegpt
from aworld_rl_core.records.trl_rows import to_trl_row, to_trl_rows
from aworld_rl_core.records.verl_rows import to_verl_row, verl_ground_truth, write_verl_parquet

__all__ = [
    "RecordError",
    "ToolUseRecord",
    "as_record",
    "bfcl_function_to_tool",
    "dataset_info_entry",
    "from_bfcl",
    "read_jsonl",
    "to_sharegpt",
    "to_trl_row",
    "to_trl_rows",
    "to_verl_row",
    "verl_ground_truth",
    "write_jsonl",
    "write_sharegpt",
    "write_verl_parquet",
]
