"""Reading one model turn: where it ends, which action it takes, which queries it asks.

RAG-R1's rollout cuts a turn after the first ``</search>`` (failing that, after the first
``</answer>``), then takes the first ``<search>...</search>`` or ``<answer>...</answer>`` match.
A search block holds one query (single-query mode) or several (multi-query mode): comma
separated by default, with double-quoted spans kept whole ("Paris, Texas"), or a JSON list.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Literal

STOP = ("</search>", "</answer>")
_OPEN = re.compile(r"<(search|answer)>")
_QUOTES = {'"': '"', "“": "”"}

QueryFormat = Literal["comma", "json", "auto"]
OverLimit = Literal["truncate", "invalid"]


def cut_turn(text: str) -> str:
    """The turn up to and including the first ``</search>``, else the first ``</answer>``."""
    for tag in STOP:
        end = text.find(tag)
        if end >= 0:
            return text[: end + len(tag)]
    return text


@dataclass(frozen=True)
class Action:
    """``kind`` is "search", "answer" or "invalid"; ``content`` is the text inside the tags."""

    kind: Literal["search", "answer", "invalid"]
    content: str = ""


def parse_action(text: str) -> Action:
    """The first ``<search>`` or ``<answer>`` block of a (cut) turn: the first opening tag that
    has its closing tag somewhere after it (what ``<(search|answer)>(.*?)</\\1>`` finds).

    Linear in the text: an opening tag is kept when the kind's last closing tag lies after it,
    so thousands of unclosed tags are not each scanned to the end (a regex's quadratic cost).
    """
    last = {kind: text.rfind(f"</{kind}>") for kind in ("search", "answer")}
    pos = 0
    while (match := _OPEN.search(text, pos)) is not None:
        kind = match.group(1)
        if last[kind] >= match.end():
            end = text.find(f"</{kind}>", match.end())
            return Action(kind, text[match.end() : end].strip())  # type: ignore[arg-type]
        pos = match.start() + 1
    return Action("invalid")


@dataclass(frozen=True)
class Queries:
    """The queries of one search block; ``error`` says why there are none, ``dropped`` how many
    were cut by the max-queries limit."""

    queries: list[str] = field(default_factory=list)
    error: str | None = None
    dropped: int = 0


def split_commas(body: str, *, keep_quoted: bool = True) -> list[str]:
    """Split on commas; with ``keep_quoted`` a comma inside double quotes does not split.

    Unbalanced quotes fall back to splitting on every comma (the paper's behaviour). A query
    that is one quoted span loses its quotes.
    """
    parts: list[str] = []
    if not keep_quoted:
        parts = body.split(",")
    else:
        current: list[str] = []
        closing: str | None = None
        for ch in body:
            if closing is None and ch in _QUOTES:
                closing = _QUOTES[ch]
            elif closing is not None and ch == closing:
                closing = None
            elif closing is None and ch == ",":
                parts.append("".join(current))
                current = []
                continue
            current.append(ch)
        if closing is not None:
            return split_commas(body, keep_quoted=False)
        parts.append("".join(current))
    return [_unquote(p.strip()) for p in parts if p.strip()]


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] in _QUOTES and text[-1] == _QUOTES[text[0]]:
        inner = text[1:-1]
        if not any(q in inner for q in (*_QUOTES, *_QUOTES.values())):
            return inner.strip()
    return text


def parse_queries(
    body: str,
    *,
    fmt: QueryFormat = "comma",
    keep_quoted: bool = True,
    max_queries: int = 3,
    over_limit: OverLimit = "truncate",
) -> Queries:
    """The queries of a search block.

    ``fmt="comma"`` splits on commas (quoted spans kept whole unless ``keep_quoted=False``);
    ``"json"`` reads a JSON list of strings; ``"auto"`` reads JSON when the block starts with
    ``[`` and commas otherwise. ``max_queries`` (0 = no limit) is enforced by ``over_limit``:
    keep the first ones, or reject the search.
    """
    body = body.strip()
    if fmt == "json" or (fmt == "auto" and body.startswith("[")):
        try:
            value = json.loads(body)
        except (ValueError, RecursionError):  # bad JSON, a 4,301-digit int, deep nesting
            value = None
        if not isinstance(value, list) or not all(isinstance(q, str) for q in value):
            return Queries(error="the search block is not a JSON list of query strings")
        queries = [q.strip() for q in value if q.strip()]
    elif fmt in ("comma", "auto"):
        queries = split_commas(body, keep_quoted=keep_quoted)
    else:
        raise ValueError(f"unknown query format {fmt!r}: use comma, json or auto")
    if not queries:
        return Queries(error="the search block holds no query")
    if max_queries and len(queries) > max_queries:
        if over_limit == "invalid":
            return Queries(
                error=f"{len(queries)} queries in one search; the limit is {max_queries}"
            )
        return Queries(queries[:max_queries], dropped=len(queries) - max_queries)
    return Queries(queries)
