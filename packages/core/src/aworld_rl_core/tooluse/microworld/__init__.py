"""A BFCL-shaped micro-world small enough for a tiny model to learn on a laptop.

Three API classes with real state (:mod:`.apis`: thermostats and door locks, a bank ledger, a
small file store; seven tools with one-line docs), registered through the plugin hook
``register_tool_apis`` so that BFCL's multi-turn episode, judges, environments and exports run
its entries unchanged, and entries generated from templates with slot values, split by
template (:mod:`.world`). ``world_tokenizer`` trains a small BPE on its text in-process
(:mod:`.tokenizer`).
"""

from aworld_rl_core.tooluse.microworld.world import (
    ABSTAIN,
    BASE,
    SPLITS,
    TEMPLATE_ROLES,
    TEMPLATES,
    MicroEntry,
    Template,
    bfcl_entry,
    entries,
    is_micro_id,
    micro_entry,
    split,
    world_text,
)

__all__ = [
    "ABSTAIN",
    "BASE",
    "SPLITS",
    "TEMPLATES",
    "TEMPLATE_ROLES",
    "MicroEntry",
    "Template",
    "bfcl_entry",
    "entries",
    "is_micro_id",
    "micro_entry",
    "split",
    "world_text",
]
