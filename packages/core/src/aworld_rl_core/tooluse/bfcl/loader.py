"""Load BFCL categories (questions and ground truth) from the installed bfcl-eval's data files.

Reads the JSONL files directly (bfcl-eval's own loaders write lock files), under whichever file
prefix the installed release ships (``BFCL_v3_`` up to 2025.8.5, ``BFCL_v4_`` after). Checked
with 2026.3.23 (v4, the pinned release) and 2025.8.5 (v3): every category loads, and the
``core.bfcl-check`` replay agrees with each release's own checkers on every entry.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from aworld_rl_core.tooluse.bfcl._install import data_dir

SINGLE_TURN_CATEGORIES = (
    "simple_python",
    "simple_java",
    "simple_javascript",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
)
"""Single-turn categories judged by the AST checker (python, and Java / JavaScript)."""

JAVA_JS_CATEGORIES = ("simple_java", "simple_javascript")
"""Single-turn categories whose calls are written in Java or JavaScript syntax."""

PYTHON_AST_CATEGORIES = tuple(c for c in SINGLE_TURN_CATEGORIES if c not in JAVA_JS_CATEGORIES)
"""Single-turn categories answered with python call lists."""

IRRELEVANCE_CATEGORIES = ("irrelevance", "live_irrelevance")
"""Categories where success is producing no call."""

RELEVANCE_CATEGORIES = (*IRRELEVANCE_CATEGORIES, "live_relevance")
"""Categories without ground truth: success is (not) producing a call."""

MULTI_TURN_CATEGORIES = (
    "multi_turn_base",
    "multi_turn_miss_func",
    "multi_turn_miss_param",
    "multi_turn_long_context",
)

ALL_CATEGORIES = SINGLE_TURN_CATEGORIES + RELEVANCE_CATEGORIES + MULTI_TURN_CATEGORIES

Language = Literal["python", "java", "javascript"]

_ALIASES = {"simple": "simple_python", "java": "simple_java", "javascript": "simple_javascript"}
_V3_FILE_NAMES = {
    "simple_python": "simple",
    "simple_java": "java",
    "simple_javascript": "javascript",
}


@dataclass(frozen=True, eq=False)
class BfclEntry:
    """One BFCL test entry.

    ``raw`` is the entry as in BFCL's file; ``ground_truth`` is BFCL's possible answers
    (single-turn), the list of call strings per turn (multi-turn) or None (relevance).
    ``functions`` are the tool docs visible at the start; ``missed_functions`` maps a turn index
    to the docs revealed at that turn (``multi_turn_miss_func``).
    """

    id: str
    category: str
    raw: dict[str, Any] = field(repr=False)
    ground_truth: list[Any] | None = field(repr=False)
    functions: list[dict[str, Any]] = field(repr=False, default_factory=list)
    missed_functions: dict[int, list[dict[str, Any]]] = field(repr=False, default_factory=dict)

    @property
    def is_multi_turn(self) -> bool:
        return self.category.startswith("multi_turn")

    @property
    def is_agentic(self) -> bool:
        """A v4 agentic entry (memory, its prerequisite conversations, web search): played turn
        by turn like a multi-turn entry, judged on its last reply (``agentic``)."""
        return self.category.startswith(("memory_", "web_search_"))

    @property
    def turns(self) -> list[list[dict[str, Any]]]:
        """The user messages of each turn (multi-turn); one turn for single-turn entries."""
        return self.raw["question"]

    @property
    def involved_classes(self) -> list[str]:
        return list(self.raw.get("involved_classes", []))

    @property
    def long_context(self) -> bool:
        """Whether BFCL loads this entry's API state in long-context mode."""
        category = self.id.rsplit("_", 1)[0]
        return "long_context" in category or "composite" in category

    @cached_property
    def initial_config_json(self) -> dict[str, str]:
        """Each class's initial state as JSON text: ``json.loads`` gives a fresh deep copy."""
        config = self.raw.get("initial_config", {})
        return {name: json.dumps(state) for name, state in config.items()}


def language_of(category: str) -> Language:
    """The language a category's calls are written in (BFCL's rule on the category name)."""
    if "javascript" in category:
        return "javascript"
    return "java" if "java" in category else "python"


def canonical_category(name: str) -> str:
    """BFCL's current name for a category (``simple`` -> ``simple_python``); checks it exists."""
    canonical = _ALIASES.get(name, name)
    if canonical not in ALL_CATEGORIES:
        raise ValueError(
            f"unknown BFCL category {name!r}; choose one of {', '.join(ALL_CATEGORIES)} "
            "(or the v3 names 'simple', 'java', 'javascript')"
        )
    return canonical


def file_prefix(root: Path | None = None) -> str:
    """The data-file prefix of the installed release, e.g. ``BFCL_v4``."""
    root = root or data_dir()
    versions = sorted(
        int(m.group(1))
        for p in root.glob("BFCL_v*_*.json")
        if (m := re.match(r"BFCL_v(\d+)_", p.name))
    )
    if not versions:
        raise FileNotFoundError(f"no BFCL_v*_*.json data files in {root}; reinstall bfcl-eval")
    return f"BFCL_v{versions[-1]}"


def _category_file(folder: Path, prefix: str, category: str) -> Path:
    for stem in (category, _V3_FILE_NAMES.get(category, category)):
        path = folder / f"{prefix}_{stem}.json"
        if path.is_file():
            return path
    raise FileNotFoundError(f"no data file for BFCL category {category!r} in {folder}")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """One JSON object per non-empty line."""
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _doc_file_mapping() -> dict[str, str]:
    """BFCL's class name -> multi-turn function-doc file name (module moved between releases)."""
    try:
        from bfcl_eval.constants.executable_backend_config import (
            MULTI_TURN_FUNC_DOC_FILE_MAPPING,
        )
    except ImportError:  # releases up to 2025.8.5
        from bfcl_eval.constants.category_mapping import MULTI_TURN_FUNC_DOC_FILE_MAPPING
    return dict(MULTI_TURN_FUNC_DOC_FILE_MAPPING)


def _multi_turn_functions(
    raw: Mapping[str, Any],
    docs: dict[str, list[dict[str, Any]]],
    *,
    given: list[dict[str, Any]] | None = None,
) -> tuple[list[dict[str, Any]], dict[int, list[dict[str, Any]]]]:
    """Tool docs of the involved classes (or the ``given`` ones), held-out docs moved to their
    turn (as BFCL does)."""
    if given is not None:
        functions = [dict(doc) for doc in given]
    else:
        functions = [doc for cls in raw["involved_classes"] for doc in docs[cls]]
    missed: dict[int, list[dict[str, Any]]] = {}
    for turn, names in raw.get("missed_function", {}).items():
        revealed = [doc for doc in functions if doc["name"] in set(names)]
        missed[int(turn)] = sorted(revealed, key=lambda doc: names.index(doc["name"]))
        functions = [doc for doc in functions if doc["name"] not in set(names)]
    return functions, missed


def _load_docs(root: Path, classes: set[str]) -> dict[str, list[dict[str, Any]]]:
    mapping = _doc_file_mapping()
    unknown = classes - mapping.keys()
    if unknown:
        raise ValueError(f"BFCL entry involves unknown API classes {sorted(unknown)}")
    return {cls: read_jsonl(root / "multi_turn_func_doc" / mapping[cls]) for cls in classes}


def function_docs(classes: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    """BFCL's multi-turn tool docs (``multi_turn_func_doc``) of each API class, in ``classes``
    order, e.g. ``function_docs(["GorillaFileSystem"])["GorillaFileSystem"][0]["name"]``; a
    class a plugin registered gives the docs it was registered with."""
    from aworld_rl_core.tooluse.bfcl.apis import registered_api_classes, registered_docs

    bfcl = {c for c in classes if c in _doc_file_mapping()}
    unknown = sorted(set(classes) - bfcl - set(registered_api_classes()))
    if unknown:
        raise ValueError(
            f"unknown API classes {unknown}: neither BFCL's nor registered by a plugin (the "
            "register_tool_apis hook)"
        )
    docs = _load_docs(data_dir(), bfcl) if bfcl else {}
    return {cls: docs[cls] if cls in bfcl else registered_docs(cls) for cls in classes}


def entry_from_raw(
    raw: Mapping[str, Any],
    *,
    ground_truth: list[Any] | None = None,
    category: str = "multi_turn_base",
) -> BfclEntry:
    """A multi-turn entry from a BFCL-shaped dict built elsewhere (e.g. synthesized data).

    ``raw`` needs ``id``, ``question``, ``initial_config`` and ``involved_classes``; its
    ``function`` docs are used when present, else the classes' own (``missed_function`` moved to
    its turn, as BFCL does). The ground truth is the argument, else ``raw["ground_truth"]``.
    """
    missing = [k for k in ("id", "question", "initial_config", "involved_classes") if k not in raw]
    if missing:
        raise ValueError(f"BFCL entry {raw.get('id', '?')!r} lacks the fields {missing}")
    if category not in MULTI_TURN_CATEGORIES:
        raise ValueError(f"entry_from_raw builds multi-turn entries, not {category!r}")
    data = dict(raw)
    if data.get("function"):
        functions, missed = _multi_turn_functions(data, {}, given=data["function"])
    else:
        docs = function_docs(sorted(set(data["involved_classes"])))
        functions, missed = _multi_turn_functions(data, docs)
    truth = ground_truth if ground_truth is not None else data.get("ground_truth")
    return BfclEntry(str(data["id"]), category, data, truth, functions, missed)


def load_category(name: str, *, limit: int | None = None) -> list[BfclEntry]:
    """Load a BFCL category (see ``ALL_CATEGORIES``) with its ground truth, in file order."""
    category = canonical_category(name)
    root = data_dir()
    prefix = file_prefix(root)
    questions = read_jsonl(_category_file(root, prefix, category))
    if limit is not None:
        questions = questions[:limit]
    answers: list[dict[str, Any] | None] = [None] * len(questions)
    if category not in RELEVANCE_CATEGORIES:
        # BFCL pairs questions and answers by position (some answer ids are formatted differently).
        found = read_jsonl(_category_file(root / "possible_answer", prefix, category))
        if limit is None and len(found) != len(questions):
            raise ValueError(
                f"{category}: {len(questions)} questions but {len(found)} possible answers"
            )
        answers = list(found[: len(questions)])
    docs: dict[str, list[dict[str, Any]]] = {}
    if category in MULTI_TURN_CATEGORIES:
        docs = _load_docs(root, {cls for q in questions for cls in q["involved_classes"]})
    entries = []
    for raw, answer in zip(questions, answers, strict=True):
        ground_truth = None if answer is None else answer["ground_truth"]
        if category in MULTI_TURN_CATEGORIES:
            functions, missed = _multi_turn_functions(raw, docs)
        else:
            functions, missed = list(raw.get("function", [])), {}
        entries.append(BfclEntry(raw["id"], category, raw, ground_truth, functions, missed))
    return entries
