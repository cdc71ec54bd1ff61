"""Phase II, second half: the querying agent writes a hard query against the advanced tool.

``Q_hard = A_Q(T_adv, epsilon)``: the query asks for what the advanced tool achieves, with its
input values, in the voice ``epsilon`` picks (the paper's "synthesis noise"), and leaves the
intermediate steps implicit. :func:`parse_query` checks it and raises :class:`ReplyError`:

- the query names no intermediate tool of the trace (a name written as code, ``cd(...)`` or
  `` `cd` ``, or a multi-word name such as ``get_user_id`` / "get user id" in any form);
- it carries every input value (so the ground truth is reachable from the query alone);
- it is 8 to 1,200 characters of words (no control characters, no code such as ``f(x)``).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable, Sequence

from aworld_rl_funreason_mt.grounding import tokens
from aworld_rl_funreason_mt.replies import ReplyError, extract_json, strip_reasoning
from aworld_rl_funreason_mt.tooling import AdvancedTool, leaf_values, value_key

_WORDS = re.compile(r"[^\W\d_]{2,}")
_CODE = re.compile(r"[A-Za-z_][\w.]*\(")

NOISE = (
    "a busy person who writes one short sentence",
    "someone who first explains why they need it, then asks",
    "a polite request that also mentions an unrelated detail of their day",
    "an indirect request: describe the goal, never the steps",
    "a user who is unsure of the exact wording and asks casually",
    "a precise professional who lists the values clearly",
)
"""The paper's synthesis noise epsilon: the voice each query is written in (one per query)."""

QUERYING_SYSTEM = """\
You write requests that a user sends to an assistant. You are given a tool the assistant can use \
and the input values for this request. Write the user's request so that solving it needs exactly \
this tool with these values. Mention every input value. Do not name any tool, function or API, \
and do not describe intermediate steps: say what the user wants, not how to do it.
Reply with one JSON object: {"query": "<the request>"}"""


def choose_noise(rng: random.Random) -> str:
    return rng.choice(NOISE)


def querying_messages(tool: AdvancedTool, noise: str, feedback: str = "") -> list[dict[str, str]]:
    user = (
        f"Tool: {json.dumps(tool.schema()['function'], ensure_ascii=False)}\n"
        f"Input values: {json.dumps(tool.arguments, ensure_ascii=False)}\n"
        f"Write it as {noise}."
    )
    if feedback:
        user += f"\n\nYour previous request was rejected: {feedback}\nWrite a new one."
    return [{"role": "system", "content": QUERYING_SYSTEM}, {"role": "user", "content": user}]


def named_tools(text: str, names: Iterable[str]) -> list[str]:
    """Tool names ``text`` mentions: as code (``name(`` or `` `name` ``) for any name, in any
    spelling (``get_user_id``, "get user id", "GetUserId") for a name of two or more words."""
    lowered = text.lower()
    flat = " " + " ".join(tokens(text)) + " "
    found = []
    for name in names:
        code = re.search(
            rf"(?<![\w.]){re.escape(name.lower())}\s*\(|`{re.escape(name.lower())}`", lowered
        )
        words = tokens(name)
        spelled = len(words) >= 2 and f" {' '.join(words)} " in flat
        if code or spelled:
            found.append(name)
    return found


def _mentions(text: str, value: object) -> bool:
    key = value_key(value)
    haystack = text.lower()
    if key in haystack:
        return True
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
        forms = {f"{number:g}", f"{number:,.0f}", f"{number:.2f}", f"{number:,.2f}"}
        return any(form.lower() in haystack for form in forms)
    return False


def parse_query(
    text: str,
    tool: AdvancedTool,
    intermediate: Sequence[str],
    *,
    require_values: bool = True,
) -> str:
    """The querying agent's request, or :class:`ReplyError` naming what is wrong."""
    try:
        data = extract_json(text)
        query = data.get("query")
    except ReplyError:
        body = strip_reasoning(text) if isinstance(text, str) else ""
        query = body if body and "{" not in body else None
    if not isinstance(query, str) or not query.strip():
        raise ReplyError('no request found: reply with {"query": "..."}')
    query = query.strip()
    problems = []
    if not 8 <= len(query) <= 1200:
        problems.append(f"the request has {len(query)} characters (8 to 1200 allowed)")
    if any(ord(ch) < 32 and ch not in "\n\t" for ch in query) or len(_WORDS.findall(query)) < 3:
        problems.append("the request is not written in words")
    if _CODE.search(query):
        problems.append("the request contains code; write it as a user would")
    named = named_tools(query, [*intermediate, tool.name])
    if named:
        problems.append(f"the request names tools ({', '.join(named)}); describe the goal instead")
    if require_values:
        missing = [v for v in leaf_values(tool.arguments) if not _mentions(query, v)]
        if missing:
            problems.append(f"the request leaves out the input values {missing}")
    if problems:
        raise ReplyError("; ".join(problems))
    return query
