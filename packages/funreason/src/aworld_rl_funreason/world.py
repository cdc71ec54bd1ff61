"""FunReason on core's tool-use micro-world: SFT rows from the world's ground truth, with the
reasoning written by a template, and the rows its held-out evaluation plays.

Each training entry's ground truth (core's ``ground_truth_steps``: a turn's calls grouped into
replies, a call that needs an earlier result in a later reply) is played through core's
``core.bfcl-multi-turn`` environment in FunReason's format (``think_python``: ``<think>``
reasoning ``</think>`` then BFCL's python call list, or a plain reply that ends the turn), so
the tool results in the rows are the environment's own and every row is checked to pass core's
judge. The reasoning of a reply (:func:`reasoning`) restates the request, names each call's
function and its doc, and says where each argument's value comes from (the user's words or an
earlier result); a turn whose values the user never gave is declined without a call. The rows
are core records (``messages``), what ``funreason.sft``'s backends train on (SRML splits each
assistant reply at ``</think>``).

The prompt: a short FunReason system prompt over the world's tool docs (one signature a line,
to keep a tiny model's sequences short; the paper uses BFCL's system prompt with JSON docs),
then the user's turn.
"""

from __future__ import annotations

import functools
import itertools
import json
from collections.abc import Mapping, Sequence
from typing import Any

from aworld_rl_funreason.data import render_target

PROTOCOL = "think_python"
"""core's parser of FunReason's format (``<think>...</think>`` then a call list or a reply)."""
DONE = "Done."
DECLINE = "I cannot do that: please tell me what is missing."
SYSTEM = (
    "You are an expert in composing functions. You are given a question from a user and a set of "
    "possible functions. Based on the question, you will need to make one or more function calls "
    "to achieve the purpose, over as many steps as needed.\n\n"
    "Here is a list of functions you can invoke:\n{functions}\n\n"
    "Reply with <think>your reasoning</think> then either the calls as a python list "
    "[func_name(param=value)], or a plain reply when no call is needed or possible."
)
MAX_STEPS_PER_TURN = 3
"""Replies per user turn before the environment ends it (the ground truth needs at most 3)."""


def signature(doc: Mapping[str, Any]) -> str:
    """A tool doc in one line: ``name(param: type, ...) - description``."""
    props = (doc.get("parameters") or {}).get("properties") or {}
    params = ", ".join(f"{name}: {spec.get('type', 'any')}" for name, spec in props.items())
    return f"{doc['name']}({params}) - {doc.get('description', '')}".rstrip(" -")


def system_prompt(functions: Sequence[Mapping[str, Any]]) -> str:
    """The system message: :data:`SYSTEM` over the tool docs, one signature a line (a prompt
    of about 150 world tokens instead of about 400 with BFCL's JSON docs)."""
    return SYSTEM.format(functions="\n".join(signature(doc) for doc in functions))


def opening(entry: Any) -> list[dict[str, Any]]:
    """The opening messages of an entry (core's ``BfclEntry``): the system prompt, then the
    first user turn."""
    return [{"role": "system", "content": system_prompt(entry.functions)}, *entry.turns[0]]


def _value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def reasoning(turn: Any, reply: int, docs: Mapping[str, str]) -> str:
    """The reasoning of reply ``reply`` of a ``GroundTruthTurn`` (``reply == len(replies)``:
    the closing reply, after every call of the turn succeeded); ``docs`` maps a function to
    its description."""
    if turn.abstain:
        return (
            f"The user asks: {turn.request} No listed function can do this with the values the "
            "user gave: a value only the user knows is missing, so I call nothing and ask."
        )
    if reply == len(turn.replies):
        return "Every call succeeded and the results answer the request, so it is done."
    lines = [f"The user asks: {turn.request}"]
    if reply:
        lines.append("The results I need are shown above.")
    for planned in turn.replies[reply]:
        call = planned.call
        lines.append(f"{call.name}: {docs.get(call.name, '').strip()}")
        for name, source in planned.sources:
            where = "the user gave it" if source == "user" else "read from the result above"
            lines.append(f"{name} = {_value(call.arguments[name])}, {where}.")
    return "\n".join(lines)


def replies(entry: Any) -> list[list[str]]:
    """What a perfect model writes in FunReason's format, per user turn (see the module doc)."""
    from aworld_rl_core.tooluse import format_python_calls
    from aworld_rl_core.tooluse.ground_truth_steps import ground_truth_steps

    docs = {d["name"]: str(d.get("description", "")) for d in entry.functions}
    out = []
    for turn in ground_truth_steps(entry):
        if turn.abstain:
            out.append([render_target(reasoning(turn, 0, docs), DECLINE)])
            continue
        texts = [
            render_target(reasoning(turn, i, docs), format_python_calls(p.call for p in calls))
            for i, calls in enumerate(turn.replies)
        ]
        out.append([*texts, render_target(reasoning(turn, len(turn.replies), docs), DONE)])
    return out


def env_options() -> dict[str, Any]:
    """Options of core's ``core.bfcl-multi-turn`` environment for FunReason's format."""
    return {"protocol": PROTOCOL, "reward": "binary", "max_steps_per_turn": MAX_STEPS_PER_TURN}


def environment(row: Mapping[str, Any]) -> Any:
    """The episode environment of a row of :func:`eval_rows` / :func:`sft_rows`."""
    from aworld_rl_core.tooluse.bfcl.environment import env_from_row

    return env_from_row(row, **env_options())


def _row(entry_id: str) -> dict[str, Any]:
    from aworld_rl_core.tooluse.microworld import bfcl_entry, micro_entry

    micro = micro_entry(entry_id)
    return {
        "id": entry_id,
        "entry_id": entry_id,
        "category": micro.category,
        "template": micro.template,
        "bfcl_entry": micro.raw,
        "prompt": opening(bfcl_entry(entry_id)),
    }


def play(row: Mapping[str, Any], texts: Sequence[str]) -> tuple[list[dict[str, Any]], Any]:
    """Play ``texts`` (the model's replies, in order) through the row's environment; the
    conversation and the last step."""
    env = environment(row)
    try:
        messages = [dict(m) for m in env.reset()]
        step = None
        for text in texts:
            messages.append({"role": "assistant", "content": text})
            step = env.step(text)
            messages.extend(dict(m) for m in step.observation)
            if step.done:
                break
        return messages, step
    finally:
        env.close()


def split_ids(part: str, seed: int = 0, *, templates: str = "all") -> list[str]:
    """Entry ids of a part of core's micro-world split (``train`` / ``validation`` /
    ``held_out``), the two categories taken in turns, each in the split's seeded order;
    ``templates``: ``all``, ``held_out`` (only the templates held out whole) or ``seen`` (only
    training templates)."""
    from aworld_rl_core.tooluse.microworld import SPLITS, TEMPLATE_ROLES, micro_entry, split

    if part not in SPLITS:
        raise ValueError(f"unknown micro-world part {part!r}: use one of {', '.join(SPLITS)}")
    if templates not in ("all", "held_out", "seen"):
        raise ValueError(f"templates must be 'all', 'held_out' or 'seen', got {templates!r}")
    parts = list(split(seed)[part].values())
    ids = [i for group in itertools.zip_longest(*parts) for i in group if i is not None]
    if templates == "all":
        return ids
    whole = templates == "held_out"
    return [i for i in ids if (micro_entry(i).template in TEMPLATE_ROLES) == whole]


@functools.lru_cache(maxsize=8)
def _records(ids: tuple[str, ...]) -> tuple[str, ...]:
    from aworld_rl_core.tooluse.microworld import bfcl_entry

    out = []
    for entry_id in ids:
        row = _row(entry_id)
        messages, step = play(row, [t for turn in replies(bfcl_entry(entry_id)) for t in turn])
        if step is None or not step.done or step.reward != 1.0:
            raise RuntimeError(
                f"{entry_id}: its ground truth in FunReason's format does not pass core's judge "
                f"({None if step is None else step.info})"
            )
        record = {
            "id": entry_id,
            "messages": messages,
            "data_source": "funreason-microworld",
            "metadata": {"template": row["template"], "category": row["category"]},
        }
        out.append(json.dumps(record))
    return tuple(out)


def records(ids: Sequence[str]) -> list[dict[str, Any]]:
    """Core record dicts (``id``, ``messages``, ``metadata``) of the entries ``ids``: each
    one's ground truth played in FunReason's format (checked to pass core's judge)."""
    return [json.loads(r) for r in _records(tuple(ids))]


def sft_rows(seed: int = 0, limit: int | None = None) -> list[dict[str, Any]]:
    """SFT records (:func:`records`) of the training part of the micro-world split ``seed``
    (training templates only), first ``limit`` entries."""
    ids = split_ids("train", seed)
    return records(ids if limit is None else ids[:limit])


def eval_rows(
    part: str = "held_out", seed: int = 0, *, templates: str = "held_out", limit: int | None = None
) -> list[dict[str, Any]]:
    """Rows of :func:`environment` for evaluation (see :func:`split_ids`)."""
    ids = split_ids(part, seed, templates=templates)
    return [_row(i) for i in (ids if limit is None else ids[:limit])]
