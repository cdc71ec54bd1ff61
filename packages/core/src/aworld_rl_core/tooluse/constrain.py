"""Decoding constrained to copying: a tool call's argument values come from the conversation.

``copy`` (``trainer.rl.call_constraint``) is an exploration aid for small policies: while a
model writes a JSON tool call (``"arguments": {"room": "kitchen", "degrees": 21}``), the value
of each key may only spell one of the conversation's words (quoted) or numbers (bare, or
quoted), or ``true`` / ``false`` / ``null``; everything else a model writes is left alone. The
words and numbers come from the user turns and tool results (``sources``), never the system
prompt, so the values a call can hold are the ones a user or a tool gave. The choice among them
is still the model's: the constraint shrinks the space RL explores, it does not pick.

:class:`CopyConstraint` is a transformers logits processor (``generate(logits_processor=...)``)
working on decoded text, so it holds for any tokenizer (a value may be spelt by many tokens; a
token may close a value and carry on with ``"},`` or ``}]``). :func:`allowed_next` is the pure
rule it applies, tested on strings.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

CONSTRAINTS = ("none", "copy")
"""Values of ``call_constraint``."""

CALL_OPEN, CALL_CLOSE = "<tool_call>", "</tool_call>"
LITERALS = ("true", "false", "null")
_WORD = re.compile(r"[A-Za-z_][\w.\-]*[\w]|[A-Za-z_]")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
# a key's value being written: `"key":` then what is written of the value so far (no `,` `}`
# `]` yet, nor an object or list: those hold keys of their own)
_VALUE = re.compile(r'"(?P<key>[^"\\]{1,64})"\s*:(?P<value>[^,}\]{\[]*)$')
_ARGUMENTS = re.compile(r'"arguments"\s*:\s*\{')
_NAME = re.compile(r'"name"\s*:\s*"(?P<name>[^"\\]{1,64})"')
_KEY = re.compile(r'(?:^|,)(?P<key>\s*"?[^":,{}]*)$')
_USED = re.compile(r'"(?P<key>[^"\\]{1,64})"\s*:')
_SIGNATURE = re.compile(r"^(?P<name>[A-Za-z_][\w.]*)\((?P<args>[^()]*)\)")
_VALUE_ENDS = frozenset(",}] \t\r\n")
_KEY_ENDS = frozenset(": \t")
_NUMERIC = ("integer", "number", "int", "float")


class Schema(dict):
    """Function name -> {parameter: JSON type} of the tools a conversation lists (an
    optional parameter's name ends with ``?``)."""


def schemas(messages: Iterable[Any], tools: Iterable[Any] | None = None) -> Schema:
    """The functions a call may name and their parameters' types: from ``tools`` (OpenAI or
    BFCL docs) or, without them, from the system turn's lines (one JSON doc, or one
    ``name(a: string, b?: integer)`` signature, per line)."""
    found = Schema()

    def add(doc: Any) -> None:
        doc = doc.get("function", doc) if isinstance(doc, dict) else None
        if isinstance(doc, dict) and isinstance(doc.get("name"), str):
            props = (doc.get("parameters") or {}).get("properties") or {}
            required = set((doc.get("parameters") or {}).get("required") or props)
            found[doc["name"]] = {
                (k if k in required else k + "?"): (
                    str(v.get("type", "any")) if isinstance(v, dict) else "any"
                )
                for k, v in props.items()
            }

    for doc in tools or ():
        add(doc)
    if found:
        return found
    for message in messages:
        if message.get("role") != "system" or not isinstance(message.get("content"), str):
            continue
        for line in message["content"].splitlines():
            line = line.strip()
            if line.startswith("{") and '"name"' in line:
                with contextlib.suppress(ValueError):
                    add(json.loads(line))
                continue
            match = _SIGNATURE.match(line)
            if match:
                params = {}
                for arg in filter(None, (a.strip() for a in match["args"].split(","))):
                    name, _, kind = arg.partition(":")
                    params[name.strip()] = kind.strip() or "any"
                found[match["name"]] = params
    return found


def candidates(sources: Iterable[str]) -> tuple[str, ...]:
    """The values a call may hold, as JSON text: each word quoted, each number bare and
    quoted, and the JSON literals (sorted, no duplicates)."""
    found: set[str] = set(LITERALS)
    for text in sources:
        for word in _WORD.findall(text):
            found.add(f'"{word}"')
        for number in _NUMBER.findall(text):
            found.update((number, f'"{number}"'))
    return tuple(sorted(found))


def typed(values: Sequence[str], kind: str) -> tuple[str, ...]:
    """The ``values`` a parameter of JSON type ``kind`` may take."""
    if kind in _NUMERIC:
        return tuple(v for v in values if not v.startswith('"') and v not in LITERALS)
    if kind == "string":
        return tuple(v for v in values if v.startswith('"'))
    if kind == "boolean":
        return ("false", "true")
    return tuple(values)


def value_prefix(generated: str) -> str | None:
    """What is written of the argument value the model is writing now, or ``None`` when it is
    not writing one (outside a ``<tool_call>``, at a key, at the function name)."""
    state = call_state(generated)
    return state[1] if state and state[0] == "value" else None


def call_state(generated: str) -> tuple[str, str, str, str] | None:
    """Where a tool call being written stands: ``(kind, written, function, key)`` with kind
    ``value`` (an argument's value), ``key`` (an argument's name) or ``name`` (the function's
    name), ``written`` what is written of it so far; ``None`` outside these."""
    start = generated.rfind(CALL_OPEN)
    if start < 0 or generated.find(CALL_CLOSE, start) >= 0:
        return None
    call = generated[start + len(CALL_OPEN) :]
    opened = list(_ARGUMENTS.finditer(call))
    if opened and "}" not in call[opened[-1].end() :]:
        head, args = call[: opened[-1].start()], call[opened[-1].end() :]
        names = list(_NAME.finditer(head))
        function = names[-1]["name"] if names else ""
        value = _VALUE.search(args)
        if value is not None:
            return ("value", value["value"], function, value["key"])
        key = _KEY.search(args)
        if key is not None:
            used = ",".join(m["key"] for m in _USED.finditer(args))
            return ("key", key["key"], function, used)
        return None
    value = _VALUE.search(call[call.rfind("{") :] if "{" in call else call)
    if value is not None and value["key"] == "name":
        return ("name", value["value"], "", "name")
    return None


def _fits(text: str, values: Sequence[str], ends: frozenset[str] = _VALUE_ENDS) -> bool:
    """``text`` (leading white space allowed) can still become or has become one of
    ``values``, followed only by characters of ``ends``."""
    body = text.lstrip(" \t\r\n")
    if not body:
        return True
    for value in values:
        if value.startswith(body):
            return True
        if body.startswith(value) and all(c in ends for c in body[len(value) :]):
            return True
    return False


def allowed_next(
    prefix: str,
    values: Sequence[str],
    token_texts: Sequence[str],
    ends: frozenset[str] = _VALUE_ENDS,
) -> list[int]:
    """Indices of ``token_texts`` that may follow ``prefix`` so that what is written stays
    one of ``values`` (then only ``ends`` characters)."""
    return [i for i, t in enumerate(token_texts) if t and _fits(prefix + t, values, ends)]


def choices(
    state: tuple[str, str, str, str], copyable: Sequence[str], functions: Schema
) -> tuple[tuple[str, ...], frozenset[str]] | None:
    """What the written part of ``state`` may become, and the characters that may follow it
    (``None``: unconstrained, e.g. a function the tool list does not hold)."""
    kind, _, function, key = state
    if kind == "name":
        return (tuple(f'"{f}"' for f in functions), _VALUE_ENDS) if functions else None
    params = functions.get(function)
    if kind == "key":
        if params is None:
            return None
        used = set(key.split(","))
        left = [k for k in params if k.rstrip("?") not in used]
        keys = tuple(f'"{k.rstrip("?")}"' for k in left)
        done = all(k.endswith("?") for k in left)  # every required argument is written
        return keys + (("}",) if done else ()), _KEY_ENDS | {"}", "]"}
    kinds = {k.rstrip("?"): v for k, v in (params or {}).items()}
    # no value of the parameter's type to copy: any copyable value (the call then fails in
    # the environment, rather than the reply running to its token cap)
    return typed(copyable, kinds.get(key, "any")) or tuple(copyable), _VALUE_ENDS


_TOKEN_TEXTS: dict[int, list[str]] = {}


def token_texts(tokenizer: Any) -> list[str]:
    """Each token id's decoded text (special tokens included), cached per tokenizer."""
    key = id(tokenizer)
    texts = _TOKEN_TEXTS.get(key)
    if texts is None or len(texts) != len(tokenizer):
        texts = [tokenizer.decode([i]) for i in range(len(tokenizer))]
        _TOKEN_TEXTS[key] = texts
    return texts


class CopyConstraint:
    """The ``copy`` rule as a transformers logits processor for one batched ``generate``.

    ``sources[row]`` are the texts row ``row``'s values may come from, ``functions[row]`` its
    tool list (:func:`schemas`: function names, parameter names and types; empty: values only);
    ``width`` is the padded prompt length (generated tokens start there).
    """

    def __init__(
        self,
        tokenizer: Any,
        sources: Sequence[Sequence[str]],
        width: int,
        functions: Sequence[Schema] | None = None,
    ) -> None:
        self.texts = token_texts(tokenizer)
        self.values = [candidates(s) for s in sources]
        self.functions = list(functions) if functions is not None else [Schema()] * len(sources)
        self.width = width
        self._generated: list[str] = [""] * len(sources)
        self._lengths: list[int] = [0] * len(sources)
        self._masks: dict[tuple[int, ...], Any] = {}
        self._allowed: dict[tuple[Any, ...], tuple[int, ...]] = {}

    def _text(self, row: int, ids: Sequence[int]) -> str:
        if self._lengths[row] + 1 == len(ids):
            self._generated[row] += self.texts[ids[-1]] if ids[-1] < len(self.texts) else ""
        elif self._lengths[row] != len(ids):
            self._generated[row] = "".join(self.texts[i] for i in ids if i < len(self.texts))
        self._lengths[row] = len(ids)
        return self._generated[row]

    def allowed(self, row: int, generated: str, vocab: int) -> tuple[int, ...] | None:
        """The token ids (below ``vocab``) that may follow ``generated``, row ``row``'s text so
        far; ``None`` where the rule leaves the choice free."""
        state = call_state(generated)
        if state is None:
            return None
        found = choices(state, self.values[row], self.functions[row])
        if found is None:
            return None
        values, ends = found
        key = (values, ends, state[1], vocab)
        ids = self._allowed.get(key)
        if ids is None:
            ids = tuple(allowed_next(state[1], values, self.texts[:vocab], ends))
            self._allowed[key] = ids
        return ids

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        vocab = scores.shape[1]
        for row in range(scores.shape[0]):
            ids = self.allowed(row, self._text(row, input_ids[row, self.width :].tolist()), vocab)
            if ids is None:
                continue
            mask = self._masks.get(ids)
            if mask is None:
                mask = torch.full((vocab,), float("-inf"), dtype=scores.dtype)
                mask[list(ids)] = 0.0
                self._masks[ids] = mask
            scores[row] = scores[row] + mask.to(scores.device)
        return scores

    def replay(self, row: int, ids: Sequence[int], vocab: int) -> list[tuple[int, ...] | None]:
        """What :meth:`allowed` said before each token of ``ids`` (one generated turn of row
        ``row``): the constrained policy's support at every position, for computing its
        log-probabilities when training on the turn."""
        out, text = [], ""
        for token in ids:
            out.append(self.allowed(row, text, vocab))
            text += self.texts[token] if 0 <= token < len(self.texts) else ""
        return out


def message_sources(messages: Iterable[Any]) -> list[str]:
    """The texts of a chat that values may be copied from: user turns and tool results."""
    out = []
    for message in messages:
        if message.get("role") in ("user", "tool") and isinstance(message.get("content"), str):
            out.append(message["content"])
    return out


def check_constraint(name: str) -> str:
    if name not in CONSTRAINTS:
        raise ValueError(
            f"unknown call_constraint {name!r}: use one of {', '.join(CONSTRAINTS)} "
            "(copy: argument values of JSON tool calls only from the user turns and tool results)"
        )
    return name
