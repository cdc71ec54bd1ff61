"""A scripted searcher for the synthetic world: a labelled **test double**, not a model.

It plays RAG-R1's search loop the way a good agent would on the synthetic world's question
templates (``aworld_rl_rag_r1.synthetic``): it decomposes the multi-hop question into
sub-questions, searches them, reads the retrieved passages for the bridge entity or the facts it
needs, and answers. It never looks at the gold answer: when retrieval misses a page, it answers
``unknown`` (the trajectory is then wrong and goes to the RL pool). Bridge questions need two
rounds (the second sub-question names what the first one found); comparison questions ask both
sub-questions in one multi-query search (``mode="mq"``, the paper's ``<search> q1, q2 </search>``)
or in two single-query rounds (``mode="sq"``).

It is an LLM client (``chat(messages, **sampling) -> Completion``) so core's episode engine,
``rag_r1.sft-data`` and ``rag_r1.eval`` play it as they play a model; the tiny presets use it to
write warm-start trajectories (``agent: scripted``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from aworld_rl_core.llm.types import Completion

SCRIPTED = "scripted"
"""The ``agent`` value that selects this double in the recipes."""
_NAME = r"[A-Z][a-z]+(?: [A-Z][a-z]+)*"
_PLANS: tuple[tuple[str, str], ...] = (
    ("birth_country", rf"^In which country was (?P<a>{_NAME}) born\?$"),
    ("university_city", rf"^In which city is the university where (?P<a>{_NAME}) studied\?$"),
    ("founder_city", rf"^In which city was the founder of (?P<a>{_NAME}) born\?$"),
    ("earlier", rf"^Who was born earlier, (?P<a>{_NAME}) or (?P<b>{_NAME})\?$"),
)
_INFO = re.compile(r"\n<information>\n(.*?)\n</information>\n", re.S)


@dataclass(frozen=True)
class Plan:
    """A question's template and its entities."""

    kind: str
    a: str
    b: str = ""


def plan(question: str) -> Plan | None:
    """The synthetic template a question follows, or None (not a synthetic-world question)."""
    text = question.strip()
    for kind, pattern in _PLANS:
        if m := re.match(pattern, text):
            return Plan(kind, m["a"], m.groupdict().get("b") or "")
    return None


def _born(person: str, text: str) -> tuple[str, str] | None:
    """(year, city) of ``person`` in retrieved text."""
    m = re.search(re.escape(person) + r" was an? \w+ born in (\d+) in (\w+)\.", text)
    return (m[1], m[2]) if m else None


def _find(pattern: str, text: str) -> str | None:
    m = re.search(pattern, text)
    return m[1] if m else None


class ScriptedSearcher:
    """The test double (see the module docstring). ``mode`` mq or sq; ``max_queries`` bounds a
    multi-query search (1 makes mq search one query per round, like sq)."""

    model = "scripted-searcher"

    def __init__(self, mode: Literal["mq", "sq"] = "mq", max_queries: int = 3) -> None:
        if mode not in ("mq", "sq"):
            raise ValueError(f"scripted searcher mode={mode!r}: use mq or sq")
        self.mode = mode
        self.max_queries = 1 if mode == "sq" else (max_queries or 3)

    async def chat(self, messages: Sequence[dict[str, Any]], **_: Any) -> Completion:
        return Completion(text=self.reply(messages), model=self.model)

    def reply(self, messages: Sequence[dict[str, Any]]) -> str:
        """The next step given the episode so far (the prompt, then the assistant's text with
        the retrieved blocks inline)."""
        prompt = str(messages[0]["content"])
        question = prompt.rsplit("Question:", 1)[-1].strip()
        done = str(messages[-1]["content"]) if messages[-1]["role"] == "assistant" else ""
        info = "\n".join(observation_text(block) for block in _INFO.findall(done))
        asked = re.findall(r"<search>(.*?)</search>", done, re.S)
        queries = [q.strip() for block in asked for q in block.split(",")]
        p = plan(question)
        if p is None:
            return "<think> not a question I can decompose </think>\n<answer> unknown </answer>"
        return self._step(p, info, queries)

    def _search(self, why: str, queries: list[str]) -> str:
        return f"<think> {why} </think>\n<search> {', '.join(queries)} </search>"

    @staticmethod
    def _answer(why: str, answer: str) -> str:
        return f"<think> {why} </think>\n<answer> {answer} </answer>"

    def _step(self, p: Plan, info: str, asked: list[str]) -> str:
        if p.kind == "earlier":
            return self._earlier(p, info, asked)
        first, read, second, answer_of = _BRIDGES[p.kind]
        hop1 = first.format(a=p.a)
        if hop1 not in asked:
            return self._search(f"first: {hop1}", [hop1])
        bridge = read(p.a, info)
        if bridge is None:
            return self._answer(f"no result for: {hop1}", "unknown")
        hop2 = second.format(b=bridge)
        if hop2 not in asked:
            return self._search(f"{p.a}: {bridge}. Next: {hop2}", [hop2])
        answer = answer_of(bridge, info)
        if answer is None:
            return self._answer(f"no result for: {hop2}", "unknown")
        return self._answer(f"{p.a}: {bridge}. {bridge}: {answer}", answer)

    def _earlier(self, p: Plan, info: str, asked: list[str]) -> str:
        subs = [f"When was {p.a} born?", f"When was {p.b} born?"]
        todo = [q for q in subs if q not in asked]
        if todo:
            batch = todo[: self.max_queries]
            return self._search("compare: " + " ".join(batch), batch)
        years = [_born(name, info) for name in (p.a, p.b)]
        if years[0] is None or years[1] is None:
            return self._answer("no result for both birth years", "unknown")
        ya, yb = int(years[0][0]), int(years[1][0])
        if ya == yb:
            return self._answer(f"both were born in {ya}", "unknown")
        first = p.a if ya < yb else p.b
        return self._answer(f"{p.a} {ya}, {p.b} {yb}", first)


_BRIDGES: dict[str, tuple[str, Any, str, Any]] = {
    "birth_country": (
        "Where was {a} born?",
        lambda a, info: (_born(a, info) or (None, None))[1],
        "Which country is {b} in?",
        lambda b, info: _find(re.escape(b) + r" is a city located in (\w+)\.", info),
    ),
    "university_city": (
        "Where did {a} study?",
        lambda a, info: _find(
            re.escape(a.split()[0]) + r" studied at the (University of \w+)\.", info
        ),
        "Where is the {b}?",
        lambda b, info: _find(
            r"The " + re.escape(b) + r" is a university in the city of (\w+),", info
        ),
    ),
    "founder_city": (
        "Who founded {a}?",
        lambda a, info: _find(
            re.escape(a)
            + r" is a company that makes \w+\. It was founded by ([A-Z][a-z]+ [A-Z][a-z]+)\.",
            info,
        ),
        "Where was {b} born?",
        lambda b, info: (_born(b, info) or (None, None))[1],
    ),
}


def observation_text(block: str) -> str:
    """The passages of one observation as plain text (the mq JSON decoded; sq as it is)."""
    try:
        data = json.loads(block)
    except ValueError:
        return block
    return "\n".join(data.get("documents", [])) if isinstance(data, dict) else block
