"""Question sets from local files, in the formats the QA benchmarks ship.

| format | file | keys |
|---|---|---|
| ``flashrag`` | JSONL | ``id``, ``question``, ``golden_answers`` (FlashRAG's NQ, TriviaQA...) |
| ``nq`` | JSONL | ``question``, ``answer`` (list; NQ-open) |
| ``hotpotqa`` / ``2wiki`` | JSON list | ``_id``, ``question``, ``answer`` |
| ``musique`` | JSONL | ``id``, ``question``, ``answer``, ``answer_aliases`` |
| ``bamboogle`` | CSV | ``Question``, ``Answer`` |
| ``rag_r1`` | JSON list | ``question``, ``golden_answers`` (one string; RAG-R1's RL data) |
| ``synthetic`` | JSONL | ``question``, ``golden_answers``, ``gold_docs``, ``decomposition`` |

``format="auto"`` picks by extension and keys. ``fanoutqa`` (no path) reads the 310 dev questions
that the ``fanoutqa`` package ships, keeping those with a single scalar answer unless
``fanoutqa_all`` (their decompositions come along for query-splitting tests).
"""

from __future__ import annotations

import csv
import importlib.util
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

QAFormat = Literal[
    "auto", "flashrag", "nq", "hotpotqa", "2wiki", "musique", "bamboogle", "rag_r1", "synthetic"
]


@dataclass(frozen=True)
class QAItem:
    """One question with its accepted answers (and gold documents where the set has them)."""

    id: str
    question: str
    golden_answers: list[str]
    source: str = ""
    gold_docs: list[str] = field(default_factory=list)
    decomposition: list[str] = field(default_factory=list)

    def row(self) -> dict[str, Any]:
        """The RL / evaluation row (columns the rewards and the environment read)."""
        return {
            "id": self.id,
            "question": self.question,
            "golden_answers": list(self.golden_answers),
            "gold_docs": list(self.gold_docs),
            "data_source": self.source,
        }


class QAFormatError(ValueError):
    """A question file that does not match its format (names file, record and keys)."""


def _read_json_or_jsonl(path: Path) -> list[dict[str, Any]]:
    text = path.read_text(encoding="utf-8")
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise QAFormatError(f"{path}: not valid JSON ({exc.msg})") from None
        return [r for r in data if isinstance(r, dict)]
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise QAFormatError(f"{path}:{number}: not JSON ({exc.msg})") from None
    return rows


def _detect(path: Path, rows: list[dict[str, Any]]) -> str:
    if path.suffix == ".csv":
        return "bamboogle"
    keys = set(rows[0]) if rows else set()
    if "gold_docs" in keys:
        return "synthetic"
    if "answer_aliases" in keys:
        return "musique"
    if "golden_answers" in keys:
        golds = rows[0]["golden_answers"]
        return "rag_r1" if isinstance(golds, str) else "flashrag"
    if "_id" in keys and "answer" in keys:
        return "hotpotqa"
    if "answer" in keys and isinstance(rows[0]["answer"], list):
        return "nq"
    raise QAFormatError(
        f"{path}: cannot tell the format from the keys {sorted(keys)}; set data.format to one "
        "of flashrag, nq, hotpotqa, 2wiki, musique, bamboogle, rag_r1, synthetic"
    )


def _answers(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, bool):
        return ["yes" if value else "no"]
    if isinstance(value, (int, float)):
        return [str(value)]
    if isinstance(value, Iterable):
        return [str(v) for v in value]
    return []


def _item(record: Mapping[str, Any], fmt: str, index: int, path: Path) -> QAItem:
    try:
        if fmt == "bamboogle":
            question, golds, qid = record["Question"], [record["Answer"]], f"bamboogle-{index}"
        elif fmt in ("flashrag", "rag_r1", "synthetic"):
            question, golds = record["question"], _answers(record["golden_answers"])
            qid = str(record.get("id", f"{fmt}-{index}"))
        elif fmt == "nq":
            question, golds = record["question"], _answers(record["answer"])
            qid = str(record.get("id", f"nq-{index}"))
        elif fmt in ("hotpotqa", "2wiki"):
            question, golds, qid = record["question"], [record["answer"]], str(record["_id"])
        elif fmt == "musique":
            golds = [record["answer"], *record.get("answer_aliases", [])]
            question, qid = record["question"], str(record["id"])
        else:
            raise QAFormatError(f"unknown QA format {fmt!r}")
    except KeyError as exc:
        raise QAFormatError(
            f"{path}: record {index} has no {exc} key for format {fmt} (keys: {sorted(record)})"
        ) from None
    return QAItem(
        id=qid,
        question=str(question).strip(),
        golden_answers=[str(g) for g in golds if str(g).strip()],
        source=fmt if fmt != "synthetic" else "synthetic",
        gold_docs=[str(d) for d in record.get("gold_docs", [])],
        decomposition=[str(d) for d in record.get("decomposition", [])],
    )


def first(items: list[Any], limit: int | None) -> list[Any]:
    """The first ``limit`` items (None: all); 0 or less is an error (it once meant all)."""
    if limit is not None and limit < 1:
        raise ValueError(f"limit={limit}: give N >= 1, or None for all (0 no longer means all)")
    return items[:limit]


def load_qa(path: str | Path, fmt: QAFormat = "auto", limit: int | None = None) -> list[QAItem]:
    """The questions of one file (the first ``limit``; None: all)."""
    path = Path(path)
    if not path.is_file():
        raise QAFormatError(f"question file '{path}' does not exist")
    if path.suffix == ".csv":
        with path.open(encoding="utf-8", newline="") as handle:
            rows = list(csv.DictReader(handle))
    else:
        rows = _read_json_or_jsonl(path)
    chosen = _detect(path, rows) if fmt == "auto" else fmt
    items = [_item(r, chosen, i, path) for i, r in enumerate(rows)]
    items = [it for it in items if it.question and it.golden_answers]
    return first(items, limit)


def fanoutqa_path() -> Path:
    """The dev file inside the installed ``fanoutqa`` package (found without importing it)."""
    spec = importlib.util.find_spec("fanoutqa")
    if spec is None or not spec.submodule_search_locations:
        raise QAFormatError("the fanoutqa questions need: pip install 'aworld-rl-rag-r1[fanoutqa]'")
    return Path(next(iter(spec.submodule_search_locations))) / "data" / "fanout-final-dev.json"


def load_fanoutqa(*, all_answers: bool = False, limit: int | None = None) -> list[QAItem]:
    """FanOutQA's dev questions; by default only those whose answer is one scalar."""
    data = json.loads(fanoutqa_path().read_text(encoding="utf-8"))
    items = []
    for record in data:
        answer = record["answer"]
        if isinstance(answer, (dict, list)) and not all_answers:
            continue
        golds = list(answer.values()) if isinstance(answer, dict) else _answers(answer)
        items.append(
            QAItem(
                id=str(record["id"]),
                question=str(record["question"]),
                golden_answers=[str(g) for g in golds],
                source="fanoutqa",
                decomposition=[d["question"] for d in record.get("decomposition", [])],
            )
        )
    return first(items, limit)


def question_rows(
    path: str, format: QAFormat = "auto", limit: int | None = None
) -> list[dict[str, Any]]:
    """The registered dataset builder: rows of a question file (``fanoutqa``: the packaged set)."""
    items = load_fanoutqa(limit=limit) if path == "fanoutqa" else load_qa(path, format, limit)
    return [item.row() for item in items]
