"""Response parsers for tool-use formats, named by format; they never raise on model text.

Every parser returns a :class:`ParsedResponse`. ``errors`` lists each format violation; ``calls``
and ``answer`` hold what could still be read, so act on them only when ``ok`` is true.

Protocols (look them up by name with :func:`get_parser` / :func:`parse_response`); they are
registered like any plugin's (``register_parsers`` in core's ``plugin.py``), and a package adds
its own the same way, without touching core:

- ``think_json`` (EnvTuning's): exactly one ``<think>``; then exactly one of ``<tool_call>`` (a
  JSON list of ``{"name", "arguments"}``) or ``<answer>``; no text outside the tags.
- ``think_python`` (FunReason's): ``<think>...</think>`` then BFCL's python call list, or a
  plain-text reply.
- ``think_tool_python`` (FunReason-MT's): ``<think>`` + ``<tool_call>`` python call list and/or
  ``<answer>``.
- ``hermes``: Qwen's ``<tool_call>{json}</tool_call>`` blocks (any number), optional leading
  ``<think>``; the remaining text is the reply.

Tag names are options (``think_tag="thinking"`` reads the released EnvTuning data).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from aworld_rl_core import registry
from aworld_rl_core.errors import PluginError
from aworld_rl_core.tooluse.calls import (
    DEFAULT_LIMITS,
    Call,
    ParseLimits,
    ToolCallParseError,
    format_python_call,
    parse_json_calls,
    parse_python_calls,
)

__all__ = [
    "ParsedResponse",
    "get_parser",
    "parse_hermes",
    "parse_response",
    "parse_think_json",
    "parse_think_python",
    "parse_think_tool_python",
    "protocol_names",
]

_TAG_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_:-]*\Z")
_CALL_START = re.compile(r"\[|[A-Za-z_][A-Za-z0-9_.]*\s*\(")


@dataclass(frozen=True)
class ParsedResponse:
    """What a model response says: its reasoning, tool calls, final answer, and format errors."""

    reasoning: str | None
    calls: list[Call]
    answer: str | None
    errors: list[str]
    raw: str
    protocol: str = ""

    @property
    def ok(self) -> bool:
        """True when the response follows the protocol (no format errors)."""
        return not self.errors

    @property
    def has_calls(self) -> bool:
        return bool(self.calls)

    def call_strings(self) -> list[str]:
        """The calls as BFCL call strings (what ``MultiTurnEpisode.execute`` takes)."""
        return [format_python_call(c) for c in self.calls]


# ---------------------------------------------------------------------------------------------
# Tag scanning
# ---------------------------------------------------------------------------------------------


@dataclass
class _Block:
    tag: str
    content: str
    start: int
    closed: bool = True


@dataclass
class _Scan:
    blocks: list[_Block]
    outside: list[str]
    errors: list[str]

    def of(self, tag: str) -> list[_Block]:
        return [b for b in self.blocks if b.tag == tag]


def _scan(text: str, tags: Sequence[str]) -> _Scan:
    """Split ``text`` into top-level ``<tag>...</tag>`` blocks and the text between them."""
    pattern = re.compile("<(/?)(" + "|".join(re.escape(t) for t in tags) + ")>")
    blocks: list[_Block] = []
    outside: list[str] = []
    errors: list[str] = []
    pos = 0
    current: _Block | None = None
    content_start = 0
    for m in pattern.finditer(text):
        closing, tag = m.group(1) == "/", m.group(2)
        if current is None:
            outside.append(text[pos : m.start()])
            if closing:
                errors.append(f"</{tag}> without an opening <{tag}>")
                pos = m.end()
                continue
            current = _Block(tag, "", m.start())
            content_start = m.end()
        elif closing and tag == current.tag:
            current.content = text[content_start : m.start()]
            blocks.append(current)
            current = None
            pos = m.end()
        else:
            errors.append(f"<{'/' if closing else ''}{tag}> inside <{current.tag}>")
    if current is not None:
        current.content = text[content_start:]
        current.closed = False
        blocks.append(current)
        errors.append(f"<{current.tag}> is never closed")
    else:
        outside.append(text[pos:])
    return _Scan(blocks, outside, errors)


def _check_tags(**tags: str) -> None:
    for option, name in tags.items():
        if not isinstance(name, str) or not _TAG_NAME.match(name):
            raise ValueError(f"{option}={name!r} is not a valid tag name (letters, digits, _-:)")
    names = list(tags.values())
    if len(set(names)) != len(names):
        raise ValueError(f"tag names must differ, got {tags}")


_Parser = Callable[..., ParsedResponse]


def _guarded(protocol: str) -> Callable[[_Parser], _Parser]:
    """Make a parser total on model text: bad options raise, bad text becomes format errors."""

    def wrap(fn: _Parser) -> _Parser:
        sig = inspect.signature(fn)

        @functools.wraps(fn)
        def parser(text: Any, **options: Any) -> ParsedResponse:
            bound = sig.bind(text, **options)  # unknown options: TypeError, the caller's mistake
            if any(k.endswith("_tag") for k in options):
                bound.apply_defaults()
                _check_tags(**{k: v for k, v in bound.arguments.items() if k.endswith("_tag")})
            if not isinstance(text, str):
                msg = f"response is a {type(text).__name__}, not str"
                return ParsedResponse(None, [], None, [msg], "", protocol)
            try:
                return fn(text, **options)
            except Exception as exc:  # never let model text crash the caller
                msg = f"unparseable response ({type(exc).__name__}: {exc})"
                return ParsedResponse(None, [], None, [msg], text, protocol)

        return parser

    return wrap


def _split_open_think(text: str, think_tag: str) -> tuple[str | None, str]:
    """When the prompt opened the think block, the text has ``</think>`` but no ``<think>``."""
    close = f"</{think_tag}>"
    if f"<{think_tag}>" not in text and close in text:
        head, _, rest = text.partition(close)
        return head.strip(), rest
    return None, text


# ---------------------------------------------------------------------------------------------
# Tagged protocols: EnvTuning (JSON list) and FunReason-MT (python list)
# ---------------------------------------------------------------------------------------------


def _parse_tagged(
    text: str,
    *,
    protocol: str,
    call_format: Literal["json", "python"],
    allow_both: bool,
    think_tag: str,
    call_tag: str,
    answer_tag: str,
    signatures: Mapping[str, Sequence[str]] | None,
    limits: ParseLimits,
) -> ParsedResponse:
    scan = _scan(text, (think_tag, call_tag, answer_tag))
    errors = list(scan.errors)
    if any(piece.strip() for piece in scan.outside):
        errors.append("text outside the tags")
    thinks, tool_calls, answers = scan.of(think_tag), scan.of(call_tag), scan.of(answer_tag)
    if len(thinks) != 1:
        errors.append(f"expected exactly one <{think_tag}> block, found {len(thinks)}")
    elif scan.blocks[0].tag != think_tag:
        errors.append(f"<{think_tag}> must come first")
    if len(tool_calls) > 1:
        errors.append(f"more than one <{call_tag}> block ({len(tool_calls)})")
    if len(answers) > 1:
        errors.append(f"more than one <{answer_tag}> block ({len(answers)})")
    if not tool_calls and not answers:
        errors.append(f"needs a <{call_tag}> or an <{answer_tag}> block")
    if tool_calls and answers and not allow_both:
        errors.append(f"has both <{call_tag}> and <{answer_tag}>; use exactly one")

    calls: list[Call] = []
    if tool_calls:
        body = tool_calls[0].content.strip()
        try:
            if call_format == "json":
                if not body.startswith("["):
                    raise ToolCallParseError(f"<{call_tag}> must hold a JSON list of calls")
                calls = parse_json_calls(body, limits=limits)
            else:
                if not body.startswith("["):
                    raise ToolCallParseError(f"<{call_tag}> must hold a python list of calls")
                calls = parse_python_calls(body, signatures=signatures, limits=limits)
            if not calls:
                errors.append(f"<{call_tag}> holds an empty list")
        except ToolCallParseError as exc:
            errors.append(f"<{call_tag}>: {exc}")
    reasoning = thinks[0].content.strip() if thinks else None
    answer = answers[0].content.strip() if answers else None
    return ParsedResponse(reasoning, calls, answer, errors, text, protocol)


@_guarded("think_json")
def parse_think_json(
    text: str,
    *,
    think_tag: str = "think",
    call_tag: str = "tool_call",
    answer_tag: str = "answer",
    limits: ParseLimits = DEFAULT_LIMITS,
) -> ParsedResponse:
    """One ``<think>``, then one JSON-list ``<tool_call>`` or one ``<answer>`` (EnvTuning)."""
    return _parse_tagged(
        text,
        protocol="think_json",
        call_format="json",
        allow_both=False,
        think_tag=think_tag,
        call_tag=call_tag,
        answer_tag=answer_tag,
        signatures=None,
        limits=limits,
    )


@_guarded("think_tool_python")
def parse_think_tool_python(
    text: str,
    *,
    think_tag: str = "think",
    call_tag: str = "tool_call",
    answer_tag: str = "answer",
    allow_both: bool = True,
    signatures: Mapping[str, Sequence[str]] | None = None,
    limits: ParseLimits = DEFAULT_LIMITS,
) -> ParsedResponse:
    """``<think>`` + ``<tool_call>`` python call list and/or ``<answer>`` (FunReason-MT)."""
    return _parse_tagged(
        text,
        protocol="think_tool_python",
        call_format="python",
        allow_both=allow_both,
        think_tag=think_tag,
        call_tag=call_tag,
        answer_tag=answer_tag,
        signatures=signatures,
        limits=limits,
    )


# ---------------------------------------------------------------------------------------------
# think_python (FunReason): <think>...</think> then a python call list (or a plain reply)
# ---------------------------------------------------------------------------------------------


@_guarded("think_python")
def parse_think_python(
    text: str,
    *,
    think_tag: str = "think",
    require_think: bool = True,
    think_in_prompt: bool = False,
    signatures: Mapping[str, Sequence[str]] | None = None,
    limits: ParseLimits = DEFAULT_LIMITS,
) -> ParsedResponse:
    """FunReason: ``<think>...</think>`` then ``[f(a=1), ...]``; other text is a plain reply.

    Text after ``</think>`` that starts like a call (``[`` or ``name(``) must parse as a call
    list; anything else is taken as the answer (e.g. declining an irrelevant request).
    ``think_in_prompt`` accepts a response that starts inside the think block (no ``<think>``).
    """
    reasoning, rest = _split_open_think(text, think_tag) if think_in_prompt else (None, text)
    scan = _scan(rest, (think_tag,))
    errors = list(scan.errors)
    thinks = scan.of(think_tag)
    if reasoning is None and thinks:
        reasoning = thinks[0].content.strip()
    if len(thinks) > 1:
        errors.append(f"expected one <{think_tag}> block, found {len(thinks)}")
    if thinks:
        if scan.outside[0].strip():
            errors.append(f"text before <{think_tag}>")
        body = scan.outside[-1] if thinks[-1].closed else ""
    elif reasoning is not None:
        body = rest
    else:
        if require_think:
            errors.append(f"missing <{think_tag}>...</{think_tag}>")
        body = text
    body = body.strip()
    calls: list[Call] = []
    answer: str | None = None
    if not body:
        errors.append(f"nothing after </{think_tag}>: expected a call list or a reply")
    elif _CALL_START.match(body):
        try:
            calls = parse_python_calls(body, signatures=signatures, limits=limits)
        except ToolCallParseError as exc:
            errors.append(f"call list: {exc}")
    else:
        answer = body
    return ParsedResponse(reasoning, calls, answer, errors, text, "think_python")


# ---------------------------------------------------------------------------------------------
# Qwen hermes: <tool_call>{json}</tool_call> blocks
# ---------------------------------------------------------------------------------------------


@_guarded("hermes")
def parse_hermes(
    text: str,
    *,
    think_tag: str = "think",
    call_tag: str = "tool_call",
    limits: ParseLimits = DEFAULT_LIMITS,
) -> ParsedResponse:
    """Qwen hermes: optional leading ``<think>``, then text and ``<tool_call>{json}</tool_call>``.

    A ``</think>`` without ``<think>`` is accepted (Qwen3's chat template opens the think block
    in the prompt). Text outside the blocks is the reply (``answer``), ``None`` when empty.
    """
    reasoning, rest = _split_open_think(text, think_tag)
    scan = _scan(rest, (think_tag, call_tag))
    errors = list(scan.errors)
    thinks = scan.of(think_tag)
    if thinks:
        if reasoning is not None or len(thinks) > 1:
            errors.append(f"more than one <{think_tag}> block")
        if scan.blocks[0].tag != think_tag or scan.outside[0].strip():
            errors.append(f"<{think_tag}> must come first")
        reasoning = thinks[0].content.strip()
    calls: list[Call] = []
    blocks = scan.of(call_tag)
    chars = sum(len(b.content) for b in blocks)
    if len(blocks) > limits.max_calls:
        errors.append(f"{len(blocks)} <{call_tag}> blocks, over the limit of {limits.max_calls}")
        blocks = []
    elif chars > limits.max_chars:
        errors.append(
            f"<{call_tag}> blocks hold {chars} characters, over the limit of {limits.max_chars}"
        )
        blocks = []
    for i, block in enumerate(blocks):
        try:
            body = block.content.strip()
            if not body.startswith("{"):
                raise ToolCallParseError("must hold one JSON object")
            calls.extend(parse_json_calls(body, limits=limits))
        except ToolCallParseError as exc:
            errors.append(f"<{call_tag}> #{i}: {exc}")
    reply = "".join(scan.outside).strip()
    return ParsedResponse(reasoning, calls, reply or None, errors, text, "hermes")


# ---------------------------------------------------------------------------------------------
# Registry
# ---------------------------------------------------------------------------------------------


def protocol_names() -> list[str]:
    """Names accepted by :func:`get_parser`: every registered parser (``register_parsers``)."""
    return registry.names("parsers")


def get_parser(protocol: str, **options: Any) -> Callable[[str], ParsedResponse]:
    """The registered parser ``protocol`` with ``options`` fixed (e.g. ``think_tag="thinking"``).

    Core registers ``think_json``, ``think_python``, ``think_tool_python`` and ``hermes``; a
    package adds its own with ``register_parsers`` (docs/hooks.md). The parser returned never
    raises on model text: an exception inside a plugin's parser becomes a format error. Unknown
    protocols and options raise ``ValueError`` naming the valid ones.
    """
    try:
        entry = registry.current().get("parsers", protocol)
    except PluginError as exc:  # unknown (with the closest name) or blocked by a conflict
        raise ValueError(f"tool-call protocol: {exc}") from exc
    fn = entry.load()
    params = inspect.signature(fn).parameters
    valid = [p for p in params if p != "text"]
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    for key in options:
        if key not in valid and not takes_any:
            raise ValueError(
                f"protocol {protocol!r} has no option {key!r} (valid: {', '.join(valid)})"
            )
    if any(k.endswith("_tag") for k in options):
        defaults = {k: p.default for k, p in params.items() if k.endswith("_tag")}
        _check_tags(**{**defaults, **{k: v for k, v in options.items() if k.endswith("_tag")}})
    return functools.partial(_call_parser, protocol, fn, options)


def _call_parser(
    protocol: str, fn: Callable[..., Any], options: Mapping[str, Any], text: Any
) -> ParsedResponse:
    """``fn(text, **options)``, total on model text (core's parsers already are; a plugin's may
    not be); a result that is not a :class:`ParsedResponse` is the plugin's bug and raises."""
    if not isinstance(text, str):
        return ParsedResponse(
            None, [], None, [f"response is a {type(text).__name__}, not str"], "", protocol
        )
    try:
        result = fn(text, **options)
    except Exception as exc:  # never let model text crash the caller
        msg = f"unparseable response ({type(exc).__name__}: {exc})"
        return ParsedResponse(None, [], None, [msg], text, protocol)
    if not isinstance(result, ParsedResponse):
        raise PluginError(
            f"parser {protocol!r} returned a {type(result).__name__}; a registered parser "
            "returns aworld_rl_core.tooluse.ParsedResponse"
        )
    return result if result.protocol == protocol else dataclasses.replace(result, protocol=protocol)


def parse_response(text: str, protocol: str, **options: Any) -> ParsedResponse:
    """Parse one model response with the named protocol (see :func:`get_parser`)."""
    return get_parser(protocol, **options)(text)
