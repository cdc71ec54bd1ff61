"""Records and RL rows -> verl ``RLHFDataset`` parquet rows (verl 0.9): the one row writer.

The verl backend writes its training data with :func:`to_verl_row`, and so does a paper package
exporting records (:func:`write_verl_parquet`), so an exported file runs on core's verl backend:
give it rewards (and an environment) and every row carries the episode spec the agent loop and
``compute_score`` read.

A row: ``data_source``, ``prompt`` (the messages before the first assistant turn, as ``{"role",
"content"}``), ``ability``, ``reward_model`` (``{"style": "rule", "ground_truth": ...}``: a
string as is, anything else as a JSON string; :func:`verl_ground_truth` reads it back),
``extra_info`` (``index``, ``split``; for records ``id``, ``tools`` and ``metadata`` as JSON
strings, plus ``tools_kwargs`` / ``need_tools_kwargs`` / ``interaction_kwargs`` when the
metadata holds non-empty ones; the episode spec under ``extra_info["aworld"]``) and
``agent_name``.

Nested values whose shape varies between rows (ground truth, tool schemas, metadata) are JSON
strings: Arrow aligns structs across rows and would fill missing keys with nulls. Empty dicts
are omitted (Arrow cannot write an empty struct).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from aworld_rl_core.records.record import RecordError, ToolUseRecord, as_record, text_content

SINGLE_TURN_LOOP = "single_turn_agent"
"""verl's own agent loop, for rows without an environment."""
_PASSTHROUGH = ("tools_kwargs", "interaction_kwargs")


def _prompt(row: Mapping[str, Any], where: str) -> list[dict[str, str]]:
    prompt = row.get("prompt")
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    if (
        isinstance(prompt, Sequence)
        and prompt
        and all(isinstance(m, Mapping) and "role" in m for m in prompt)
    ):
        return [{"role": str(m["role"]), "content": text_content(m, where)} for m in prompt]
    raise RecordError(
        f"{where} has no 'prompt' (a string or a list of chat messages with 'role' and "
        "'content'); RL rows need one"
    )


def _ground_truth(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def to_verl_row(
    item: ToolUseRecord | Mapping[str, Any],
    index: int,
    *,
    split: str = "train",
    spec: Any = None,
    agent_name: str | None = None,
    ability: str | None = None,
) -> dict[str, Any]:
    """One record (``messages``...) or RL row (``prompt`` + columns) as a verl row.

    ``spec`` (a ``backends.verl.specs.EpisodeSpec``) travels in ``extra_info``; a row whose spec
    has an environment runs ``agent_name`` (default ``aworld_env``), other rows verl's
    single-turn loop.
    """
    from aworld_rl_core.backends.verl.specs import SPEC_KEY

    extra: dict[str, Any] = {"index": index, "split": split}
    if isinstance(item, ToolUseRecord) or "messages" in item:
        record = as_record(item)
        where = f"record {record.id!r}" if record.id else f"record {index}"
        prompt = [
            {"role": m["role"], "content": text_content(m, where)} for m in record.prompt_messages()
        ]
        if not prompt:
            raise RecordError(
                f"{where}: no prompt (it starts with an assistant message); an RL row needs the "
                "opening user message"
            )
        extra.update(
            id=record.id,
            tools=json.dumps(record.tools, ensure_ascii=False),
            metadata=json.dumps(record.metadata, ensure_ascii=False),
        )
        for key in _PASSTHROUGH:
            if record.metadata.get(key):
                extra[key] = record.metadata[key]
        if "tools_kwargs" in extra:
            extra["need_tools_kwargs"] = True
        source, truth = record.data_source, record.ground_truth
        default_ability = "tool_use"
    else:
        prompt = _prompt(item, f"row {index}")
        source, truth = str(item.get("data_source") or ""), item.get("ground_truth", "")
        default_ability = str(item.get("ability") or "agent")
    if spec is not None:
        extra[SPEC_KEY] = spec.dumps()
    row = {
        "data_source": source or "aworld_rl",
        "prompt": prompt,
        "ability": ability or default_ability,
        "reward_model": {"style": "rule", "ground_truth": _ground_truth(truth)},
        "extra_info": extra,
    }
    if spec is not None:
        row["agent_name"] = (agent_name or "aworld_env") if spec.env else SINGLE_TURN_LOOP
    elif agent_name:
        row["agent_name"] = agent_name
    return row


def write_parquet(rows: Sequence[Mapping[str, Any]], path: str | Path) -> Path:
    """Write rows as parquet (pyarrow; the file verl's RLHFDataset reads)."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ModuleNotFoundError:
        raise RecordError(
            "writing verl parquet needs pyarrow: pip install pyarrow (it comes with "
            "aworld-rl-core[trl] and [verl])"
        ) from None
    path = Path(path)
    if not rows:
        raise RecordError(f"no rows to write to {path}: the set is empty")
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist([dict(r) for r in rows]), path)
    return path


def write_verl_parquet(
    records: Iterable[ToolUseRecord | Mapping[str, Any]],
    path: str | Path,
    *,
    split: str = "train",
    ability: str | None = None,
    agent_name: str | None = None,
    env: Any = None,
    rewards: Sequence[Any] = (),
    weights: Sequence[float] = (),
) -> Path:
    """Write records as a verl parquet file (``data.train_files`` / ``data.val_files``).

    With ``rewards`` (registered names, ``Ref``s or module-level functions) and/or ``env``, each
    row carries the episode spec core's verl backend runs (its ``task``: the record's ground
    truth, tools, id and metadata, as the rewards' columns).
    """
    from aworld_rl_core.backends.verl.specs import EpisodeSpec, reward_refs
    from aworld_rl_core.refs import Ref

    refs = reward_refs(rewards)
    env_ref = Ref.of(env, "environment") if env is not None else None
    rows = []
    for i, item in enumerate(records):
        spec = None
        if refs or env_ref is not None:
            record = as_record(item)
            task = {k: v for k, v in record.to_dict().items() if k != "messages"}
            task["prompt"] = record.prompt_messages()
            spec = EpisodeSpec(task=task, env=env_ref, rewards=refs, weights=tuple(weights))
        row = to_verl_row(item, i, split=split, spec=spec, agent_name=agent_name, ability=ability)
        rows.append(row)
    if not rows:
        raise RecordError(f"write_verl_parquet({str(path)!r}): no records to write")
    return write_parquet(rows, path)


def verl_ground_truth(value: Any) -> Any:
    """``reward_model.ground_truth`` as written by :func:`to_verl_row`: a JSON value decoded,
    a plain string as is (a string that happens to be JSON reads back decoded)."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value
