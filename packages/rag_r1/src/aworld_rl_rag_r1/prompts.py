"""The user-turn instructions of RAG-R1's single-query and multi-query agents.

The instructions carry the paper's elements (reason in ``<think>`` whenever information
arrives; search with ``<search>``, results come back in ``<information>``; in multi-query mode
several comma-separated queries per search, up to the limit; the final answer in ``<answer>``
without explanation, with ``<answer> Beijing </answer>`` as the example), in our wording. To
evaluate a released checkpoint with its exact training text, pass that template as a file
(``prompt_file``, with a ``{question}`` field).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

Mode = Literal["mq", "sq"]

_SEARCH = {
    "sq": (
        "When you lack knowledge, call the search engine with <search> query </search>; the "
        "top results come back between <information> and </information>. You may search as "
        "often as you need."
    ),
    "mq": (
        "When you lack knowledge, call the search engine with <search> query_1,query_2 "
        "</search>; the top results for each query come back between <information> and "
        "</information>. You may search as often as you need, with {limit} each time."
    ),
}

TEMPLATE = (
    "Answer the given question. Reason inside <think> and </think> first, and again every time "
    "you receive new information. {search} When no more outside knowledge is needed, give the "
    "answer inside <answer> and </answer> without a detailed explanation, for example "
    "<answer> Beijing </answer>. Question: {question}\n"
)


def question_text(question: str) -> str:
    """The question with a trailing question mark (RAG-R1's data scripts add one)."""
    question = question.strip()
    return question if question.endswith("?") else question + "?"


def render(
    question: str, mode: Mode = "mq", *, max_queries: int = 3, template: str | None = None
) -> str:
    """The opening user message of one episode."""
    if mode not in _SEARCH:
        raise ValueError(f"unknown prompt mode {mode!r}: use mq or sq")
    text = template if template is not None else TEMPLATE
    limit = f"up to {max_queries} queries" if max_queries else "several queries"
    search = _SEARCH[mode].format(limit=limit)
    try:
        return text.format(search=search, question=question_text(question))
    except (KeyError, IndexError) as exc:
        raise ValueError(
            f"the prompt template has an unknown field {exc}; it may use {{question}} and "
            "{search}"
        ) from None


def load_template(path: str | None) -> str | None:
    """The template in ``path`` (None: ours)."""
    if not path:
        return None
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"prompt file '{path}' does not exist")
    text = file.read_text(encoding="utf-8")
    if "{question}" not in text:
        raise ValueError(f"prompt file '{path}' has no {{question}} field")
    return text
