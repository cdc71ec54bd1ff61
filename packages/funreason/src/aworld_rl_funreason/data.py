"""FunReason samples: readers (xLAM JSON/JSONL, BFCL single-turn), the target format and exports.

The target is ``<think>\\n{reasoning}\\n</think>\\n\\n[f(a=1, b='x')]``: the reasoning, then
BFCL's python call list (keyword arguments, strings quoted). A sample whose reference is not a
call (a statement) keeps its text after the reasoning.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from aworld_rl_core.tooluse.calls import (
    Call,
    ToolCallParseError,
    format_python_calls,
    parse_json_calls,
    parse_python_calls,
)
from aworld_rl_funreason.schema import xlam_tool_to_schema

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"


@dataclass(frozen=True)
class FcSample:
    """One function-calling sample: the user query, tool docs (JSON Schema), the reference
    answer text (a python call list, or a statement), optional reasoning and metadata."""

    id: str
    query: str
    tools: list[dict[str, Any]]
    answer: str
    reasoning: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FcSample:
        missing = [k for k in ("id", "query", "tools", "answer") if k not in data]
        if missing:
            raise ValueError(f"sample record lacks {missing}: {str(dict(data))[:160]}")
        return cls(
            id=str(data["id"]),
            query=str(data["query"]),
            tools=list(data["tools"]),
            answer=str(data["answer"]),
            reasoning=data.get("reasoning"),
            meta=dict(data.get("meta") or {}),
        )

    def with_(self, **changes: Any) -> FcSample:
        return replace(self, **changes)

    def target(self) -> str:
        """The SFT target text (reasoning block, then the answer)."""
        return render_target(self.reasoning, self.answer)


def render_target(reasoning: str | None, answer: str | Sequence[Call]) -> str:
    """``<think>\\n...\\n</think>\\n\\n<answer>``; ``answer`` is text or a list of calls."""
    text = answer if isinstance(answer, str) else format_python_calls(answer)
    if reasoning is None:
        return text
    return f"{THINK_OPEN}\n{reasoning.strip()}\n{THINK_CLOSE}\n\n{text}"


def split_response(text: str) -> tuple[str | None, str]:
    """Split model text into (reasoning, answer): everything through the last ``</think>`` is
    reasoning (BFCL scoring strips it); without ``</think>`` there is no reasoning."""
    head, sep, tail = text.rpartition(THINK_CLOSE)
    if not sep:
        return None, text.strip()
    reasoning = head.split(THINK_OPEN, 1)[-1] if THINK_OPEN in head else head
    return reasoning.strip(), tail.strip()


def answer_from_xlam(answers: Any) -> str:
    """xLAM ``answers`` (a JSON list of {name, arguments}, as text or loaded) as a python call
    list; text that is not such JSON is kept verbatim (the refinement stages judge it)."""
    if isinstance(answers, str):
        try:
            loaded = json.loads(answers)
        except json.JSONDecodeError:
            return answers
    else:
        loaded = answers
    try:
        return format_python_calls(parse_json_calls(loaded))
    except ToolCallParseError:
        return answers if isinstance(answers, str) else json.dumps(answers)


def _load_json_field(value: Any, what: str, sample_id: str) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        raise ValueError(f"sample {sample_id}: '{what}' is not valid JSON ({exc.msg})") from None


def sample_from_xlam(record: Mapping[str, Any], index: int = 0) -> FcSample:
    """An xLAM record ``{id, query, tools, answers}`` (tools/answers as JSON text or loaded)."""
    missing = [k for k in ("query", "tools", "answers") if k not in record]
    if missing:
        raise ValueError(
            f"xLAM record #{index} lacks {missing}; expected keys id, query, tools, answers"
        )
    sample_id = str(record.get("id", index))
    tools = _load_json_field(record["tools"], "tools", sample_id)
    if not isinstance(tools, list):
        raise ValueError(f"sample {sample_id}: 'tools' must be a list of tool docs")
    reasoning = record.get("reasoning") or record.get("cot")
    return FcSample(
        id=sample_id,
        query=str(record["query"]),
        tools=[xlam_tool_to_schema(t) for t in tools],
        answer=answer_from_xlam(record["answers"]),
        reasoning=reasoning,
        meta={"source": "xlam"},
    )


def iter_json_records(path: str | Path) -> Iterator[dict[str, Any]]:
    """Records of a JSON list file or a JSONL file."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"data file '{path}' does not exist")
    text = path.read_text(encoding="utf-8")
    stripped = text.lstrip()
    if stripped.startswith("["):
        data = json.loads(text)
        yield from data
        return
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{lineno}: not a JSON line ({exc.msg})") from None


def read_xlam(path: str | Path, limit: int | None = None) -> list[FcSample]:
    """xLAM-style samples from a local JSON or JSONL file."""
    out: list[FcSample] = []
    for i, rec in enumerate(iter_json_records(path)):
        if limit is not None and i >= limit:
            break
        out.append(sample_from_xlam(rec, i))
    return out


def read_samples(path: str | Path, limit: int | None = None) -> list[FcSample]:
    """Samples from JSON/JSONL: our format (``FcSample.to_dict``), xLAM's, or refinement
    outcomes (``{"sample": {...}, "status": ...}``, e.g. ``kept.jsonl``)."""
    out: list[FcSample] = []
    for i, rec in enumerate(iter_json_records(path)):
        if limit is not None and i >= limit:
            break
        if "answers" in rec:
            out.append(sample_from_xlam(rec, i))
        elif "sample" in rec and isinstance(rec["sample"], Mapping):
            out.append(FcSample.from_dict(rec["sample"]))
        else:
            out.append(FcSample.from_dict(rec))
    return out


def bfcl_user_query(question: Any) -> str:
    """The user text of a single-turn BFCL ``question`` (``[[{role, content}, ...]]``)."""
    turns = question[0] if question and isinstance(question[0], list) else question
    users = [m.get("content", "") for m in turns if m.get("role") == "user"]
    if not users:
        raise ValueError("BFCL question holds no user message")
    return "\n".join(users)


def sample_from_bfcl(entry: Any) -> FcSample:
    """A single-turn BFCL entry (core's ``BfclEntry``) as a sample; the answer is BFCL's first
    allowed value per argument (core's ``ground_truth_calls``), "[]" for relevance entries."""
    from aworld_rl_core.tooluse.bfcl import ground_truth_calls

    answer = format_python_calls(ground_truth_calls(entry)) if entry.ground_truth else "[]"
    return FcSample(
        id=entry.id,
        query=bfcl_user_query(entry.raw["question"]),
        tools=list(entry.functions),
        answer=answer,
        meta={"source": "bfcl", "category": entry.category},
    )


def read_bfcl(category: str, limit: int | None = None) -> list[FcSample]:
    """Samples of a BFCL single-turn category (``simple_python``, ``live_multiple``, ...)."""
    from aworld_rl_core.tooluse.bfcl import canonical_category, load_category

    return [sample_from_bfcl(e) for e in load_category(canonical_category(category), limit=limit)]


def parse_answer_calls(answer: str) -> list[Call]:
    """The calls of a reference answer (raises ToolCallParseError when it is not a call list)."""
    return parse_python_calls(answer)


def prompt_messages(sample: FcSample, prompt: str = "bfcl") -> list[dict[str, Any]]:
    """The prompt FunReason trains and evaluates with: BFCL's prompting-mode system prompt
    (tool docs as JSON, python call-list output) then the user query (``prompt="bfcl"``), or
    the bare query with the tools left to the chat template (``"chat_tools"``)."""
    user = {"role": "user", "content": sample.query}
    if prompt == "chat_tools":
        return [user]
    if prompt != "bfcl":
        raise ValueError(f"prompt must be 'bfcl' or 'chat_tools', got {prompt!r}")
    from aworld_rl_core.tooluse.bfcl import system_prompt

    return [{"role": "system", "content": system_prompt(sample.tools)}, user]


def to_record(sample: FcSample, prompt: str = "bfcl") -> Any:
    """The sample as a core ``ToolUseRecord`` (the target is the assistant message's content;
    the reference answer is the ground truth)."""
    from aworld_rl_core.records import ToolUseRecord

    messages = [*prompt_messages(sample, prompt), {"role": "assistant", "content": sample.target()}]
    return ToolUseRecord(
        id=sample.id,
        messages=messages,
        tools=sample.tools if prompt == "chat_tools" else [],
        ground_truth=sample.answer,
        data_source="funreason",
        metadata={**sample.meta, "has_reasoning": sample.reasoning is not None},
    )


def export_samples(
    samples: Sequence[FcSample],
    directory: str | Path,
    *,
    name: str = "funreason",
    prompt: str = "bfcl",
) -> dict[str, Path]:
    """Write the samples as core records (JSONL), LLaMA-Factory sharegpt (with
    ``dataset_info.json``) and verl parquet; returns the paths."""
    from aworld_rl_core.backends.verl.rows import write_verl_parquet
    from aworld_rl_core.records import write_jsonl as write_records
    from aworld_rl_core.records import write_sharegpt

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    records = [to_record(s, prompt) for s in samples]
    return {
        "records": write_records(records, directory / f"{name}.jsonl"),
        "sharegpt": write_sharegpt(records, directory / "sharegpt", name),
        "verl": write_verl_parquet(records, directory / f"{name}.parquet"),
    }


def write_jsonl(path: str | Path, rows: Iterable[Mapping[str, Any]]) -> int:
    """Write rows as JSONL; returns the count."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    return n
