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

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aworld_rl_core.tooluse.bfcl._install import data_dir
from aworld_rl_core.tooluse.bfcl.agentic_backends import (
    AGENTIC_CATEGORIES,
    MEMORY_CATEGORIES,
    _constants,
    backend_of,
)
from aworld_rl_core.tooluse.bfcl.loader import BfclEntry, file_prefix, read_jsonl

# -- the entries ---------------------------------------------------------------------------------


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
