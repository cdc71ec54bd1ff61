"""The micro-world's API classes: a home controller, a bank ledger and a small file store.

They follow BFCL's multi-turn API classes: state in public instance attributes (what BFCL's
state checker compares), ``_load_scenario(state, long_context=)`` loads an entry's initial
state, methods return dicts (an ``{"error": ...}`` dict on bad input, never an exception for
the model's mistakes). Each has two or three methods with one-line docs, so a tiny model can
read the whole tool list in its prompt.
"""

from __future__ import annotations

import copy
from typing import Any

ROOMS = ("kitchen", "bedroom", "office", "hall")
DOORS = ("front", "back", "garage")
ACCOUNTS = ("checking", "savings", "travel")
FILES = ("plan.txt", "notes.txt", "todo.txt", "memo.txt")
MIN_DEGREES, MAX_DEGREES = 10, 30


def _error(message: str) -> dict[str, str]:
    return {"error": message}


class _Scenario:
    """State from an entry's ``initial_config`` (a deep copy: entries are shared)."""

    _DEFAULTS: dict[str, Any] = {}

    def __init__(self) -> None:
        for name, value in self._DEFAULTS.items():
            setattr(self, name, copy.deepcopy(value))

    def _load_scenario(self, scenario: dict[str, Any], long_context: bool = False) -> None:
        unknown = set(scenario) - set(self._DEFAULTS)
        if unknown:
            raise ValueError(
                f"{type(self).__name__} state has no fields {sorted(unknown)}; "
                f"known: {sorted(self._DEFAULTS)}"
            )
        for name, value in scenario.items():
            setattr(self, name, copy.deepcopy(value))


class HomeController(_Scenario):
    """Thermostats per room and door locks."""

    thermostats: dict[str, int]
    doors: dict[str, str]
    _DEFAULTS = {
        "thermostats": {room: 20 for room in ROOMS},
        "doors": {door: "unlocked" for door in DOORS},
    }

    def set_thermostat(self, room: str, degrees: int) -> dict[str, Any]:
        """Set a room's thermostat to whole degrees (10-30)."""
        if room not in self.thermostats:
            return _error(f"no thermostat in room {room!r}")
        if type(degrees) is not int or not MIN_DEGREES <= degrees <= MAX_DEGREES:
            return _error(f"degrees must be a whole number from {MIN_DEGREES} to {MAX_DEGREES}")
        self.thermostats[room] = degrees
        return {"room": room, "degrees": degrees}

    def get_thermostat(self, room: str) -> dict[str, Any]:
        """Read a room's thermostat setting."""
        if room not in self.thermostats:
            return _error(f"no thermostat in room {room!r}")
        return {"room": room, "degrees": self.thermostats[room]}

    def lock_door(self, door: str) -> dict[str, Any]:
        """Lock a door."""
        if door not in self.doors:
            return _error(f"no door named {door!r}")
        self.doors[door] = "locked"
        return {"door": door, "status": "locked"}


class BankLedger(_Scenario):
    """Account balances in whole dollars."""

    balances: dict[str, int]
    _DEFAULTS = {"balances": {account: 0 for account in ACCOUNTS}}

    def get_balance(self, account: str) -> dict[str, Any]:
        """Read an account's balance."""
        if account not in self.balances:
            return _error(f"no account named {account!r}")
        return {"account": account, "balance": self.balances[account]}

    def transfer(self, source: str, target: str, amount: int) -> dict[str, Any]:
        """Move whole dollars from one account to another."""
        for account in (source, target):
            if account not in self.balances:
                return _error(f"no account named {account!r}")
        if source == target:
            return _error("source and target are the same account")
        if type(amount) is not int or amount <= 0:
            return _error("amount must be a positive whole number")
        if self.balances[source] < amount:
            return _error(f"{source} holds only {self.balances[source]}")
        self.balances[source] -= amount
        self.balances[target] += amount
        return {"source": self.balances[source], "target": self.balances[target]}


class FileStore(_Scenario):
    """A flat folder of short text files."""

    files: dict[str, str]
    _DEFAULTS = {"files": {}}

    def read_file(self, name: str) -> dict[str, Any]:
        """Read a file's text."""
        if name not in self.files:
            return _error(f"no file named {name!r}")
        return {"name": name, "text": self.files[name]}

    def delete_file(self, name: str) -> dict[str, Any]:
        """Delete a file."""
        if name not in self.files:
            return _error(f"no file named {name!r}")
        del self.files[name]
        return {"deleted": name}


CLASSES: dict[str, type[_Scenario]] = {
    "core.micro.home": HomeController,
    "core.micro.bank": BankLedger,
    "core.micro.files": FileStore,
}
"""Registered names (``register_tool_apis``) of the classes; entries name them in
``involved_classes``."""


def _doc(function: str, description: str, /, **params: str) -> dict[str, Any]:
    return {
        "name": function,
        "description": description,
        "parameters": {
            "type": "dict",
            "properties": {k: {"type": v} for k, v in params.items()},
            "required": list(params),
        },
    }


DOCS: dict[str, list[dict[str, Any]]] = {
    "core.micro.home": [
        _doc("set_thermostat", "Set a room's thermostat.", room="string", degrees="integer"),
        _doc("get_thermostat", "Read a room's thermostat.", room="string"),
        _doc("lock_door", "Lock a door.", door="string"),
    ],
    "core.micro.bank": [
        _doc("get_balance", "Read an account's balance.", account="string"),
        _doc(
            "transfer",
            "Move whole dollars between accounts.",
            source="string",
            target="string",
            amount="integer",
        ),
    ],
    "core.micro.files": [
        _doc("read_file", "Read a file's text.", name="string"),
        _doc("delete_file", "Delete a file.", name="string"),
    ],
}
"""BFCL-style docs of each class's methods (``parameters.type`` is ``dict``, as BFCL writes).
They name no room, door, account or number: the only such values a model sees are in the
requests and the results, so writing a call means copying them from there."""
