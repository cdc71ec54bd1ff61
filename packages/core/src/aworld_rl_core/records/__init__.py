"""Core records (the tool-use sample) and converters to the training libraries' formats.

- ``ToolUseRecord``: OpenAI chat messages with tool calls, tool schemas, ground truth, metadata.
- ``write_sharegpt`` / ``to_sharegpt``: LLaMA-Factory sharegpt + ``dataset_info.json``.
- ``to_trl_rows``: TRL conversational rows (``messages``, ``prompt_completion``, ``prompt``).
Pure Python. verl's parquet rows are the verl backend's (``backends.verl.rows``), BFCL entries as
records the BFCL adapter's (``tooluse.bfcl.records``): the kernel never reaches up into a wing.
"""

from aworld_rl_core.records.record import (
    RecordError,
    ToolUseRecord,
    as_record,
    read_jsonl,
    write_jsonl,
)
from aworld_rl_core.records.sharegpt import dataset_info_entry, to_sharegpt, write_sharegpt
from aworld_rl_core.records.trl_rows import to_trl_row, to_trl_rows

__all__ = [
    "RecordError",
    "ToolUseRecord",
    "as_record",
    "dataset_info_entry",
    "read_jsonl",
    "to_sharegpt",
    "to_trl_row",
    "to_trl_rows",
    "write_jsonl",
    "write_sharegpt",
]
