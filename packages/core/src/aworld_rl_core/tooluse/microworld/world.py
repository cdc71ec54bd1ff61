"""The micro-world's entries: BFCL-shaped multi-turn entries generated from templates.

A template is one to three user turns with slots (``{room}``, ``{amount}`` ...), the ground-truth
calls of each turn, and, where a call needs a value the user did not give, the state that holds
it (``read_then_set``: the degrees are written in a file; ``move_all``: the amount is the
account's balance). Templates whose ground truth is empty in a turn are the ones where the right
move is to call nothing and say it cannot be done (a room without a thermostat, a transfer
without an amount); they are BFCL's ``multi_turn_miss_param`` category, the rest
``multi_turn_base``. Every entry has the same seven tools of the three classes of
:mod:`.apis` and its own initial state (balances, thermostats and files drawn from the entry's
seed), so entries differ in state as well as in their requests.

:func:`entries` generates every entry (deterministic); :func:`split` assigns them: whole
templates are held out or kept for validation (``TEMPLATE_ROLES``), and the slot combinations
of the training templates are shuffled with the seed into training, validation and held-out
parts. No entry and no (template, slots) pair is in two parts. Each part's ids are dealt one
template at a time, so its first N ids (the held-out points) spread over its templates.
"""

from __future__ import annotations

import functools
import itertools
import json
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aworld_rl_core.tooluse.microworld.apis import ACCOUNTS, DOCS, DOORS, FILES, ROOMS

BASE = "multi_turn_base"
ABSTAIN = "multi_turn_miss_param"
ID_PREFIX = "micro_"
SPLITS = ("train", "validation", "held_out")

_DOMAINS: dict[str, tuple[Any, ...]] = {
    "room": ROOMS,
    "room2": ROOMS,
    "door": DOORS,
    "deg": tuple(range(16, 27)),
    "src": ACCOUNTS,
    "dst": ACCOUNTS,
    "amount": tuple(range(5, 100, 5)),
    "file": FILES,
    "file2": FILES,
}
_DIFFERENT = (("room", "room2"), ("src", "dst"), ("file", "file2"))


def _no_state(slots: Mapping[str, Any], state: dict[str, Any]) -> None:
    return None


@dataclass(frozen=True)
class Template:
    """One request pattern: user turns and ground-truth calls with ``{slot}`` fields."""

    name: str
    turns: tuple[str, ...]
    calls: tuple[tuple[str, ...], ...]
    state: Callable[[Mapping[str, Any], dict[str, Any]], None] = field(
        default=_no_state, compare=False
    )

    @property
    def category(self) -> str:
        return ABSTAIN if any(not turn for turn in self.calls) else BASE

    @property
    def slots(self) -> tuple[str, ...]:
        text = " ".join(self.turns) + " ".join(c for t in self.calls for c in t)
        return tuple(s for s in _DOMAINS if "{" + s + "}" in text)


def _file_holds(key: str) -> Callable[[Mapping[str, Any], dict[str, Any]], None]:
    def put(slots: Mapping[str, Any], state: dict[str, Any]) -> None:
        state["core.micro.files"]["files"][slots["file"]] = str(slots[key])

    return put


def _balance_is_amount(slots: Mapping[str, Any], state: dict[str, Any]) -> None:
    state["core.micro.bank"]["balances"][slots["src"]] = slots["amount"]


SET = "set_thermostat(room='{room}', degrees={deg})"
LOCK = "lock_door(door='{door}')"
GET = "get_thermostat(room='{room}')"
SEND = "transfer(source='{src}', target='{dst}', amount={amount})"

TEMPLATES: tuple[Template, ...] = (
    Template("set_temp", ("Set the {room} thermostat to {deg} degrees.",), ((SET,),)),
    Template("warm_room", ("Make the {room} {deg} degrees, please.",), ((SET,),)),
    Template("lock", ("Lock the {door} door.",), ((LOCK,),)),
    Template("lock_please", ("Please make sure the {door} door is locked.",), ((LOCK,),)),
    Template("balance", ("What is the balance of {src}?",), (("get_balance(account='{src}')",),)),
    Template("transfer", ("Move {amount} dollars from {src} to {dst}.",), ((SEND,),)),
    Template("pay", ("Send {amount} dollars to {dst} from {src}.",), ((SEND,),)),
    Template("read", ("Show me what {file} says.",), (("read_file(name='{file}')",),)),
    Template("delete", ("Delete {file}.",), (("delete_file(name='{file}')",),)),
    Template(
        "read_then_set",
        ("Set the {room} thermostat to the number written in {file}.",),
        (("read_file(name='{file}')", SET),),
        _file_holds("deg"),
    ),
    Template(
        "move_all",
        ("Move everything in {src} to {dst}.",),
        (("get_balance(account='{src}')", SEND),),
        _balance_is_amount,
    ),
    Template(
        "read_then_delete",
        ("Delete the file whose name is written in {file}.",),
        (("read_file(name='{file}')", "delete_file(name='{file2}')"),),
        _file_holds("file2"),
    ),
    Template(
        "lock_then_temp",
        ("Lock the {door} door.", "Now set the {room} thermostat to {deg} degrees."),
        ((LOCK,), (SET,)),
    ),
    Template(
        "check_then_send",
        ("How much is in {src}?", "Send {amount} dollars of it to {dst}."),
        (("get_balance(account='{src}')",), (SEND,)),
    ),
    Template(
        "three_tasks",
        ("Lock the {door} door.", "Move {amount} dollars from {src} to {dst}.", "Delete {file}."),
        ((LOCK,), (SEND,), ("delete_file(name='{file}')",)),
    ),
    Template(
        "temp_then_read",
        ("Set the {room} thermostat to {deg} degrees.", "What is the {room2} set to?"),
        ((SET,), ("get_thermostat(room='{room2}')",)),
    ),
    Template(
        "lock_and_temp",
        ("Lock the {door} door and set the {room} thermostat to {deg} degrees.",),
        ((LOCK, SET),),
    ),
    Template("no_degrees", ("Change the {room} thermostat for me.",), ((),)),
    Template("no_amount", ("Move some money from {src} to {dst}.",), ((),)),
    # the skills the held-out templates recombine, each taught by a training template:
    # reading a thermostat, two calls in one turn, the accounts named target first, and
    # declining a turn that lacks a value and acting once a later turn gives it
    Template("read_temp", ("What is the {room} thermostat set to?",), ((GET,),)),
    Template(
        "lock_and_delete",
        ("Lock the {door} door and delete {file}.",),
        ((LOCK, "delete_file(name='{file}')"),),
    ),
    Template("give", ("Put {amount} dollars into {dst} from {src}.",), ((SEND,),)),
    Template("no_target", ("Take {amount} dollars out of {src}.",), ((),)),
    Template(
        "ask_then_set",
        ("Set the {room} thermostat for me.", "Make it {deg} degrees."),
        ((), (SET,)),
    ),
    Template("no_source", ("Send {amount} dollars to {dst}.",), ((),)),
    Template(
        "ask_then_send",
        ("Transfer money from {src} to {dst}.", "Make it {amount} dollars."),
        ((), (SEND,)),
    ),
)

TEMPLATE_ROLES: dict[str, str] = {
    "lock_please": "validation",
    "no_source": "validation",
    "pay": "held_out",
    "lock_and_temp": "held_out",
    "temp_then_read": "held_out",
    "ask_then_send": "held_out",
}
"""Templates kept whole out of training; every other template is a training template whose
slot combinations are split (:data:`SLOT_SHARES`)."""

SLOT_SHARES = {"train": 0.6, "validation": 0.15, "held_out": 0.25}
"""How the slot combinations of a training template are shared out."""

ENTRIES_PER_TEMPLATE = 24


@dataclass(frozen=True)
class MicroEntry:
    """A generated entry: its BFCL-shaped dict, template and slot values."""

    raw: dict[str, Any]
    template: str
    slots: tuple[tuple[str, Any], ...]

    @property
    def id(self) -> str:
        return str(self.raw["id"])

    @property
    def category(self) -> str:
        return str(self.raw["category"])


def _combinations(template: Template, limit: int) -> list[dict[str, Any]]:
    names = template.slots
    combos = [
        dict(zip(names, values, strict=True))
        for values in itertools.product(*(_DOMAINS[n] for n in names))
    ]
    combos = [c for c in combos if all(c.get(a) != c.get(b) or a not in c for a, b in _DIFFERENT)]
    random.Random(f"combos:{template.name}").shuffle(combos)
    return combos[:limit]


def _initial_state(rng: random.Random) -> dict[str, Any]:
    words = ("call mum", "buy milk", "pay rent", "water plants", "book trip", "fix sink")
    return {
        "core.micro.home": {
            "thermostats": {room: rng.randrange(16, 27) for room in ROOMS},
            "doors": {door: rng.choice(("locked", "unlocked")) for door in DOORS},
        },
        "core.micro.bank": {"balances": {a: rng.randrange(100, 300, 5) for a in ACCOUNTS}},
        "core.micro.files": {"files": {f: rng.choice(words) for f in FILES}},
    }


def _entry(template: Template, index: int, slots: dict[str, Any]) -> MicroEntry:
    entry_id = f"{ID_PREFIX}{template.name}_{index}"
    state = _initial_state(random.Random(entry_id))
    template.state(slots, state)
    functions = [doc for docs in DOCS.values() for doc in docs]
    raw = {
        "id": entry_id,
        "category": template.category,
        "question": [[{"role": "user", "content": t.format(**slots)}] for t in template.turns],
        "ground_truth": [[c.format(**slots) for c in turn] for turn in template.calls],
        "initial_config": state,
        "involved_classes": list(DOCS),
        "function": functions,
    }
    return MicroEntry(raw, template.name, tuple(sorted(slots.items())))


@functools.cache
def entries(per_template: int = ENTRIES_PER_TEMPLATE) -> tuple[MicroEntry, ...]:
    """Every entry, ``per_template`` slot combinations per template (deterministic)."""
    if per_template < 1:
        raise ValueError(f"per_template must be >= 1, got {per_template}")
    return tuple(
        _entry(template, i, slots)
        for template in TEMPLATES
        for i, slots in enumerate(_combinations(template, per_template))
    )


def split(
    seed: int = 0, per_template: int = ENTRIES_PER_TEMPLATE
) -> dict[str, dict[str, list[str]]]:
    """Entry ids per part (train / validation / held_out) and category, in a seeded order.

    Whole templates go where :data:`TEMPLATE_ROLES` says; a training template's slot
    combinations are shuffled with ``seed`` and shared out by :data:`SLOT_SHARES`.
    """
    out: dict[str, dict[str, list[str]]] = {p: {BASE: [], ABSTAIN: []} for p in SPLITS}
    by_template: dict[str, list[MicroEntry]] = {}
    for entry in entries(per_template):
        by_template.setdefault(entry.template, []).append(entry)
    for name, group in by_template.items():
        role = TEMPLATE_ROLES.get(name)
        if role is not None:
            for entry in group:
                out[role][entry.category].append(entry.id)
            continue
        order = list(group)
        random.Random(f"{seed}:slots:{name}").shuffle(order)
        n_train = round(SLOT_SHARES["train"] * len(order))
        n_val = round(SLOT_SHARES["validation"] * len(order))
        parts = {
            "train": order[:n_train],
            "validation": order[n_train : n_train + n_val],
            "held_out": order[n_train + n_val :],
        }
        for part, members in parts.items():
            for entry in members:
                out[part][entry.category].append(entry.id)
    template_of = {e.id: name for name, group in by_template.items() for e in group}
    for part in SPLITS:
        for category, ids in out[part].items():
            rng = random.Random(f"{seed}:{part}:{category}")
            out[part][category] = _interleaved(ids, template_of, rng)
    return out


def _interleaved(ids: list[str], template_of: Mapping[str, str], rng: random.Random) -> list[str]:
    """``ids`` shuffled within each template, then dealt one template at a time (templates in
    a shuffled order), so that any first N ids spread over the templates (the held-out points
    are not mostly one template)."""
    groups: dict[str, list[str]] = {}
    for entry_id in sorted(ids):
        groups.setdefault(template_of[entry_id], []).append(entry_id)
    names = sorted(groups)
    rng.shuffle(names)
    for name in names:
        rng.shuffle(groups[name])
    dealt = []
    for rank in range(max((len(g) for g in groups.values()), default=0)):
        dealt += [groups[n][rank] for n in names if rank < len(groups[n])]
    return dealt


@functools.cache
def _by_id() -> dict[str, MicroEntry]:
    return {e.id: e for e in entries()}


def is_micro_id(entry_id: str) -> bool:
    return entry_id.startswith(ID_PREFIX)


def micro_entry(entry_id: str) -> MicroEntry:
    """The generated entry with this id (``micro_set_temp_0``)."""
    found = _by_id().get(entry_id)
    if found is None:
        raise KeyError(
            f"no micro-world entry {entry_id!r}: ids look like {ID_PREFIX}set_temp_0 "
            f"(templates: {', '.join(t.name for t in TEMPLATES)})"
        )
    return found


def bfcl_entry(entry_id: str) -> Any:
    """The entry as core's ``BfclEntry`` (what the BFCL environment, episode and judges take)."""
    return _bfcl_entry(entry_id)


@functools.lru_cache(maxsize=1024)
def _bfcl_entry(entry_id: str) -> Any:
    from aworld_rl_core.tooluse.bfcl.loader import entry_from_raw

    found = micro_entry(entry_id)
    return entry_from_raw(found.raw, category=found.category)


def world_text() -> list[str]:
    """Every text of the world a model reads or writes (requests, calls, docs, states), for
    training a tokenizer on it."""
    texts = [json.dumps(doc) for docs in DOCS.values() for doc in docs]
    for entry in entries():
        texts += [m["content"] for turn in entry.raw["question"] for m in turn]
        texts += [c for turn in entry.raw["ground_truth"] for c in turn]
        texts.append(json.dumps(entry.raw["initial_config"]))
    return texts


def rows(split_name: str = "train", seed: int = 0) -> list[dict[str, Any]]:
    """Registered dataset ``core.microworld``: one part's entries as rows of the
    ``core.bfcl-multi-turn`` environment (``bfcl_entry``) with ``entry_id`` and ``category``."""
    if split_name not in SPLITS:
        raise ValueError(
            f"unknown micro-world split {split_name!r}: use one of {', '.join(SPLITS)}"
        )
    parts = split(seed)[split_name]
    return [
        {"entry_id": i, "category": c, "bfcl_entry": micro_entry(i).raw}
        for c, ids in parts.items()
        for i in ids
    ]
