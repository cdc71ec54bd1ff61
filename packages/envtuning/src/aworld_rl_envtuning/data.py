"""The EnvTuning data split of BFCL's 800 multi-turn entries, and its training rows.

The paper trains on 100 entries of each of the four multi-turn categories, validates on 100 of
the remaining entries and evaluates on the rest. The split here is deterministic from a seed:
each category's ids are shuffled with ``random.Random(f"{seed}:{category}")``; the first
``train_per_category`` are training, the next ``validation_per_category`` validation, the rest
held out. BFCL's ``multi_turn_<category>_N`` of the four categories are variants of one task N
(the same first user turn in 501 of 600 pairs with the base entry), so that split puts variants
of one task on both sides; ``by="task"`` shuffles the task numbers once
(``random.Random(f"{seed}:task")``) and gives every category the same numbers per split.
``write_split`` saves the chosen ids (``split.json``) in the run directory.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from aworld_rl_core.atomic import write_atomic
from aworld_rl_core.config import option
from aworld_rl_core.tooluse.bfcl.loader import MULTI_TURN_CATEGORIES

if TYPE_CHECKING:
    from aworld_rl_core.tooluse.bfcl import BfclEntry

CATEGORIES = MULTI_TURN_CATEGORIES
SPLITS = ("train", "validation", "held_out")
SPLIT_FILE = "split.json"
ABILITY = "multi_turn_function_calling"


@dataclass(frozen=True, kw_only=True)
class SplitConfig:
    """How the 800 multi-turn entries are split."""

    seed: int = option(0, help="seed of the per-category shuffles")
    train_per_category: int = option(
        100, help="training entries per category (paper: 100, 400 in all)"
    )
    validation_per_category: int = option(
        25, help="validation entries per category (paper: 100 in all)"
    )
    by: Literal["category", "task"] = option(
        "category",
        help="shuffle each category on its own (paper) or the task numbers N shared by "
        "multi_turn_<category>_N (no task on both sides of the split)",
    )
    source: Literal["bfcl", "microworld"] = option(
        "bfcl",
        help="BFCL's 800 multi-turn entries (paper), or core's micro-world (its own split by "
        "template: held-out templates and slot combinations; the per-category counts and "
        "`by` do not apply)",
    )


@dataclass(frozen=True)
class Split:
    """Entry ids per split and category, in shuffled order."""

    seed: int
    ids: dict[str, dict[str, list[str]]]

    def of(self, split: str, categories: Sequence[str] = CATEGORIES) -> list[str]:
        """Ids of ``split`` for ``categories`` (category order, then shuffled order)."""
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r}; use one of {', '.join(SPLITS)}")
        unknown = [c for c in categories if c not in CATEGORIES]
        if unknown:
            raise ValueError(f"unknown categories {unknown}; use some of {', '.join(CATEGORIES)}")
        return [i for c in categories for i in self.ids[split][c]]

    def to_dict(self) -> dict[str, Any]:
        counts = {s: sum(len(v) for v in self.ids[s].values()) for s in SPLITS}
        return {"seed": self.seed, "counts": counts, "ids": self.ids}


def split_ids(ids_by_category: dict[str, Sequence[str]], cfg: SplitConfig) -> Split:
    """The deterministic split of ``ids_by_category`` (see the module docstring)."""
    if cfg.train_per_category < 0 or cfg.validation_per_category < 0:
        raise ValueError("train_per_category and validation_per_category must be >= 0")
    need = cfg.train_per_category + cfg.validation_per_category
    pools = {c: sorted(ids_by_category.get(c, ()), key=_natural) for c in CATEGORIES}
    for category, pool in pools.items():
        if need > len(pool):
            raise ValueError(
                f"{category} has {len(pool)} entries, fewer than train_per_category + "
                f"validation_per_category = {need}"
            )
    order = _task_order(pools, cfg.seed) if cfg.by == "task" else None
    ids: dict[str, dict[str, list[str]]] = {s: {} for s in SPLITS}
    for category, pool in pools.items():
        if order is None:
            random.Random(f"{cfg.seed}:{category}").shuffle(pool)
        else:
            pool.sort(key=lambda entry_id: order[_natural(entry_id)[1]])
        ids["train"][category] = pool[: cfg.train_per_category]
        ids["validation"][category] = pool[cfg.train_per_category : need]
        ids["held_out"][category] = pool[need:]
    return Split(cfg.seed, ids)


def _task_order(pools: dict[str, list[str]], seed: int) -> dict[int, int]:
    """Each task number's place in one seeded shuffle; every category must have the same ones."""
    numbers = {c: sorted(_natural(i)[1] for i in pool) for c, pool in pools.items()}
    first, *rest = numbers.values()
    if any(n != first for n in rest) or -1 in first:
        raise ValueError(
            "split.by=task needs every category to number its entries 0..N-1 alike "
            "(multi_turn_<category>_N); use split.by=category"
        )
    random.Random(f"{seed}:task").shuffle(first)
    return {number: place for place, number in enumerate(first)}


def _natural(entry_id: str) -> tuple[str, int]:
    head, _, tail = entry_id.rpartition("_")
    return (head, int(tail)) if tail.isdigit() else (entry_id, -1)


def bfcl_split(cfg: SplitConfig) -> Split:
    """The split of the installed bfcl-eval's multi-turn entries (``source=microworld``: of
    core's micro-world, see :func:`micro_split`)."""
    if cfg.source == "microworld":
        return micro_split(cfg.seed)
    from aworld_rl_core.tooluse.bfcl import load_category

    return split_ids({c: [e.id for e in load_category(c)] for c in CATEGORIES}, cfg)


def micro_split(seed: int) -> Split:
    """Core's micro-world split (``aworld_rl_core.tooluse.microworld.split``): whole templates
    held out or kept for validation, the training templates' slot combinations shared out with
    ``seed``; its entries are in ``multi_turn_base`` and ``multi_turn_miss_param``."""
    from aworld_rl_core.tooluse.microworld import split

    parts = split(seed)
    return Split(seed, {p: {c: list(parts[p].get(c, [])) for c in CATEGORIES} for p in SPLITS})


def write_split(split: Split, directory: Path) -> Path:
    path = Path(directory) / SPLIT_FILE
    write_atomic(path, json.dumps(split.to_dict(), indent=1))
    return path


def read_split(path: Path) -> Split:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return Split(int(data["seed"]), data["ids"])


# -- records and rows ----------------------------------------------------------------------------


def entry_record(entry: BfclEntry, split: str, **env_options: Any) -> Any:
    """The entry as a core ``ToolUseRecord``: the environment's opening messages, the first
    turn's tools, per-turn ground truth, and what an environment needs to rebuild the episode."""
    from aworld_rl_core.records import ToolUseRecord
    from aworld_rl_core.tooluse.bfcl import to_openai_tools
    from aworld_rl_envtuning.env import EnvTuningEnv

    env = EnvTuningEnv(entry, **env_options)
    try:
        opening = env.reset()
    finally:
        env.close()
    later_turns = [[dict(m) for m in turn] for turn in entry.turns[1:]]
    return ToolUseRecord(
        id=entry.id,
        data_source=entry.category,
        messages=opening,
        tools=to_openai_tools(entry.functions),
        ground_truth=entry.ground_truth,
        metadata={
            "entry_id": entry.id,
            "category": entry.category,
            "split": split,
            "involved_classes": entry.involved_classes,
            "interaction_kwargs": {
                "name": "envtuning",
                "entry_id": entry.id,
                "initial_config": json.dumps(entry.raw.get("initial_config", {})),
                "involved_classes": entry.involved_classes,
                "ground_truth": json.dumps(entry.ground_truth),
                "processed_question": json.dumps(later_turns),
            },
        },
    )


def records_for(ids: Iterable[str], split: str, **env_options: Any) -> list[Any]:
    from aworld_rl_envtuning.env import get_entry

    return [entry_record(get_entry(i), split, **env_options) for i in ids]


def training_rows(records: Iterable[Any]) -> list[dict[str, Any]]:
    """Rows for core's backends: TRL ``prompt`` rows plus ``entry_id``/``category`` columns.

    The tool list is already in the system prompt, so the ``tools`` column is left out (the
    chat template would list the tools a second time).
    """
    from aworld_rl_core.records import to_trl_row

    rows = []
    for record in records:
        row = to_trl_row(record, "prompt")
        row.pop("tools", None)
        row["entry_id"] = record.metadata["entry_id"]
        row["category"] = record.metadata["category"]
        rows.append(row)
    return rows


def export_split(
    split: Split, directory: Path, *, splits: Sequence[str] = SPLITS, **env_options: Any
) -> dict[str, Path]:
    """Write each split as verl parquet (``<split>.parquet``) and TRL rows (``<split>.jsonl``)."""
    from aworld_rl_core.backends.verl.rows import write_verl_parquet
    from aworld_rl_core.records import to_trl_rows

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    out: dict[str, Path] = {}
    for name in splits:
        records = records_for(split.of(name), name, **env_options)
        if not records:
            continue
        out[f"{name}_parquet"] = write_verl_parquet(
            records,
            directory / f"{name}.parquet",
            split=name,
            ability="multi_turn_function_calling",
        )
        jsonl = directory / f"{name}.jsonl"
        with jsonl.open("w", encoding="utf-8") as handle:
            for row in to_trl_rows(records, "prompt"):
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        out[f"{name}_jsonl"] = jsonl
    return out


def easy_subset(ids: Sequence[str], size: int) -> list[str]:
    """The ``size`` entries with the fewest ground-truth calls (ties: fewest turns, then id):
    stage 1's "easy, small volume" data."""
    from aworld_rl_envtuning.env import get_entry

    def cost(entry_id: str) -> tuple[int, int, tuple[str, int]]:
        gt = get_entry(entry_id).ground_truth or []
        return sum(len(t) for t in gt), len(gt), _natural(entry_id)

    return sorted(ids, key=cost)[:size]


def split_records(cfg: SplitConfig | None = None, split: str = "train") -> list[Any]:
    """Registered dataset builder: the records of one part of the split."""
    return records_for(bfcl_split(cfg or SplitConfig()).of(split), split)
