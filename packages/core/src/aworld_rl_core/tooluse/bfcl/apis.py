"""BFCL's multi-turn API classes: look them up and build fresh, per-episode instances.

BFCL's own classes: the eight offline ones of the multi-turn categories and the four of the v4
agentic categories (the memory backends, which need their extra, ``aworld-rl-core[bfcl-memory]``,
and the web search, which needs a SerpAPI key or a recording: :mod:`.agentic`). Any other
name in an entry's ``involved_classes`` is a class registered through the plugin hook
``register_tool_apis`` (core's micro-world registers its own there); it is built and loaded the
same way, so the same episodes, judges and exports serve both.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from functools import cache
from typing import Any

from aworld_rl_core.tooluse.bfcl._install import bfcl_root, require_module

OFFLINE_CLASSES = frozenset(
    {
        "GorillaFileSystem",
        "MathAPI",
        "MessageAPI",
        "TwitterAPI",
        "TicketAPI",
        "TradingBot",
        "TravelAPI",
        "VehicleControlAPI",
    }
)


def registered_api_classes() -> dict[str, Any]:
    """API classes the installed plugins registered (``register_tool_apis``): name -> entry."""
    from aworld_rl_core.registry import current

    return dict(current().entries["tool_apis"])


AGENTIC_CLASSES = frozenset(
    {"MemoryAPI_kv", "MemoryAPI_vector", "MemoryAPI_rec_sum", "WebSearchAPI"}
)
"""BFCL's backends of the v4 agentic categories (memory and web search)."""


def api_class(name: str) -> type:
    """The API class called ``name``: one of BFCL's offline classes (``"GorillaFileSystem"``,
    looked up once), one of its agentic backends, or one a plugin registered."""
    if name in OFFLINE_CLASSES:
        return _bfcl_class(name)
    if name in AGENTIC_CLASSES:
        from aworld_rl_core.tooluse.bfcl.agentic_backends import agentic_class

        return agentic_class(name)
    registered = registered_api_classes()
    if name not in registered:
        raise ValueError(
            f"API class {name!r} is neither one of BFCL's offline classes "
            f"({', '.join(sorted(OFFLINE_CLASSES))}) nor registered by a plugin "
            f"({', '.join(sorted(registered)) or 'none'}); register it with the "
            "register_tool_apis hook"
        )
    cls = registered[name].load()
    if not isinstance(cls, type):
        raise TypeError(f"registered API class {name!r} is a {type(cls).__name__}, not a class")
    return cls


def registered_docs(name: str) -> list[dict[str, Any]]:
    """The function docs a registered API class came with (its ``docs``)."""
    from aworld_rl_core.registry import resolve

    entry = registered_api_classes().get(name)
    if entry is None:
        raise ValueError(f"no registered API class {name!r}")
    docs = entry.meta.get("docs")
    docs = resolve(docs) if isinstance(docs, str) else docs
    if not isinstance(docs, (list, tuple)) or not all(isinstance(d, Mapping) for d in docs):
        raise ValueError(
            f"registered API class {name!r} needs docs=[...] (BFCL function docs) or "
            "docs='module:attr' naming such a list"
        )
    return [dict(d) for d in docs]


@cache
def _bfcl_class(name: str) -> type:
    bfcl_root()
    if name == "MathAPI":
        require_module("mpmath")
    path = _backend_config().CLASS_FILE_PATH_MAPPING[name]
    cls = vars(importlib.import_module(path)).get(name)
    if not isinstance(cls, type):
        raise ImportError(f"{path} does not define class {name}")
    return cls


def _backend_config() -> Any:
    """The module holding BFCL's class -> module mapping (moved between releases)."""
    try:
        from bfcl_eval.constants import executable_backend_config as config
    except ImportError:  # releases up to 2025.8.5 keep it in the executor module
        from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils as config
    return config


@cache
def stateless_classes() -> frozenset[str]:
    """Classes BFCL builds without loading a scenario (``MathAPI``)."""
    return frozenset(_backend_config().STATELESS_CLASSES)


def build_instances(
    classes: list[str], initial_config_json: Mapping[str, str], *, long_context: bool
) -> dict[str, object]:
    """Fresh instances in ``classes`` order, each loaded from its own copy of the initial state.

    ``initial_config_json`` holds each class's state as JSON text, so every episode parses its own
    deep copy (what BFCL's ``copy.deepcopy`` gives, faster).
    """
    instances: dict[str, object] = {}
    for name in classes:
        state = json.loads(initial_config_json.get(name, "{}"))
        if name in AGENTIC_CLASSES:
            from aworld_rl_core.tooluse.bfcl.agentic_backends import agentic_instance

            instances[name] = agentic_instance(name, state)
            continue
        cls, stateless = _resolve(name)
        instance = cls()
        if not stateless:
            load = getattr(instance, "_load_scenario", None)
            if load is not None:
                load(state, long_context=long_context)
            elif state:
                raise ValueError(
                    f"API class {name} has no _load_scenario(state, long_context=False) but the "
                    "entry gives it an initial state"
                )
        instances[name] = instance
    return instances


def _resolve(name: str) -> tuple[type, bool]:
    """The class an entry names and whether it is stateless (BFCL's ``STATELESS_CLASSES``, or a
    registered class's ``stateless=True``)."""
    if name in OFFLINE_CLASSES:
        return api_class(name), name in stateless_classes()
    cls = api_class(name)
    return cls, bool(registered_api_classes()[name].meta.get("stateless", False))


def public_state(instance: object) -> dict[str, object]:
    """The attributes BFCL's state checker compares: every public instance attribute."""
    return {k: v for k, v in vars(instance).items() if not k.startswith("_")}


def state_differences(model: object, ground_truth: object) -> dict[str, dict[str, object]]:
    """Public attributes of ``ground_truth`` whose value differs in ``model`` (BFCL's rule)."""
    if type(model) is not type(ground_truth):
        raise TypeError(f"cannot compare {type(model).__name__} with {type(ground_truth).__name__}")
    out: dict[str, dict[str, object]] = {}
    for name, expected in vars(ground_truth).items():
        if name.startswith("_"):
            continue
        actual = getattr(model, name)
        if actual != expected:
            out[name] = {"model": actual, "ground_truth": expected}
    return out
