"""Safe dispatch of parsed tool calls to the public methods of allowed API instances.

The name -> method table is built once, from each instance's class with ``inspect`` (public
functions and classmethods only: no leading underscore, no properties, no instance attributes),
and calls are looked up in that dict. Arguments are bound against the method's signature before
anything runs, and checked against :class:`CallLimits`: integer sizes and the ranges of costly
parameters (a ``precision`` of a million digits) before the call, a time bound as the backstop.
A call over a limit returns an error result and runs nothing. Process-global state a tool may
change (the ``decimal`` context's precision and rounding, ``mpmath``'s precision) is restored
after every call of a method whose module uses ``decimal`` or ``mpmath``. Results
are rendered as text exactly as BFCL's executor (``execute_multi_turn_func_call``) renders them,
so BFCL's response checker can compare them.
"""

from __future__ import annotations

import copy
import decimal
import functools
import inspect
import json
import sys
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from aworld_rl_core.tooluse.calls import (
    DEFAULT_LIMITS,
    Call,
    ParseLimits,
    ToolCallParseError,
    parse_python_calls,
)
from aworld_rl_core.tooluse.errors import ResultError, result_error
from aworld_rl_core.tooluse.timer import CallTimeout, arm, disarm

__all__ = [
    "BFCL_DENIED_NAMES",
    "CallLimits",
    "Dispatcher",
    "ToolResult",
    "format_result",
    "public_methods",
]

#: Names BFCL's executor refuses to run whatever class defines them.
BFCL_DENIED_NAMES = frozenset({"kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run"})

ERROR_PREFIX = "Error during execution: "

ResultKind = Literal[
    "ok",
    "returned_error",
    "raised",
    "bad_arguments",
    "over_limit",
    "unknown_function",
    "denied",
    "parse_error",
]

Range = tuple[float | None, float | None]


@dataclass(frozen=True, eq=False)  # compared (and hashed) by identity: a cache key
class CallLimits:
    """What a call may ask for. The argument checks run before the call and cost little.

    ``max_int_digits`` bounds every integer in the arguments, at any depth. ``numbers`` bounds
    named numeric parameters, ``(low, high)`` inclusive (``None``: open): ``"precision"`` applies
    to that parameter of every method, ``"power.exponent"`` to one method's. ``time_s`` stops a
    call still running after that many seconds (``tooluse.timer``); it is the backstop, not the
    bound: it works in the main thread and interrupts Python code only (a C-level
    ``Decimal.sqrt`` at a million digits runs to its end), hence the argument bounds. ``None``
    turns it off.
    """

    max_int_digits: int = 100
    numbers: Mapping[str, Range] = field(default_factory=dict)
    time_s: float | None = 10.0


DEFAULT_CALL_LIMITS = CallLimits()


@dataclass(frozen=True)
class ToolResult:
    """Outcome of one call: ``text`` is what the model sees (BFCL's rendering)."""

    text: str
    kind: ResultKind
    call: Call | None = None
    value: Any = None

    @property
    def executed(self) -> bool:
        """The method ran and returned (possibly an ``{"error": ...}`` dict)."""
        return self.kind in ("ok", "returned_error")

    @property
    def is_error(self) -> bool:
        """Anything but a clean return: refused, bad arguments, raised, or an error dict."""
        return self.kind != "ok"

    @property
    def ok(self) -> bool:
        return self.kind == "ok"

    @property
    def error(self) -> ResultError | None:
        """Why the call is not a success (:mod:`aworld_rl_core.tooluse.errors`): any kind but
        ``ok`` is an error; a clean return may still report a failure (``{"success": false}``)."""
        if self.kind in ("ok", "returned_error"):
            found = result_error(self.value)
            if found is not None or self.kind == "ok":
                return found
        return ResultError("error", self.text)

    @property
    def failed(self) -> bool:
        """An error or a reported failure (what a data generator must not take for a success)."""
        return self.error is not None


def format_result(value: Any) -> str:
    """BFCL's rendering of a return value: str as is, dict as ``json.dumps``, else ``str``."""
    if type(value) is str:
        return value
    if type(value) is dict:
        try:
            return json.dumps(value)
        except Exception:  # BFCL falls back to str() for any dict json cannot encode
            return str(value)
    return str(value)


@dataclass(frozen=True)
class _MethodSpec:
    """A public method of a class and what binding a call to it needs (computed once per class)."""

    func: Callable[..., Any]
    is_classmethod: bool
    signature: inspect.Signature  # without self/cls
    pos_names: tuple[str, ...]
    kw_names: frozenset[str]
    required: frozenset[str]
    has_varargs: bool
    has_varkw: bool
    mutable_defaults: tuple[tuple[str, Any], ...]  # list/dict/set defaults, shared by every call
    params: frozenset[str]  # every name an argument can be bound to
    sets_precision: bool  # its module uses decimal or mpmath: keep their precision around calls

    @classmethod
    def of(cls, func: Callable[..., Any], is_classmethod: bool) -> _MethodSpec:
        P = inspect.Parameter
        full = inspect.signature(func)
        params = list(full.parameters.values())[1:]
        pos = tuple(
            p.name for p in params if p.kind in (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD)
        )
        kw = frozenset(
            p.name for p in params if p.kind in (P.POSITIONAL_OR_KEYWORD, P.KEYWORD_ONLY)
        )
        required = frozenset(
            p.name
            for p in params
            if p.default is P.empty and p.kind not in (P.VAR_POSITIONAL, P.VAR_KEYWORD)
        )
        return cls(
            func=func,
            is_classmethod=is_classmethod,
            signature=full.replace(parameters=params),
            pos_names=pos,
            kw_names=kw,
            required=required,
            has_varargs=any(p.kind is P.VAR_POSITIONAL for p in params),
            has_varkw=any(p.kind is P.VAR_KEYWORD for p in params),
            mutable_defaults=tuple(
                (p.name, p.default) for p in params if isinstance(p.default, (list, dict, set))
            ),
            params=frozenset(pos) | kw,
            sets_precision=not _PRECISION_NAMES.isdisjoint(getattr(func, "__globals__", ())),
        )

    def fresh_defaults(self, positional: tuple[Any, ...], arguments: dict[str, Any]) -> dict:
        """``arguments`` plus a copy of each mutable default the call leaves out, so that a
        tool that keeps and changes it (BFCL's ``post_tweet(tags=[], mentions=[])`` then
        ``mention``) cannot leak state into later calls, instances or episodes."""
        filled = self.pos_names[: len(positional)]
        missing = [
            (name, default)
            for name, default in self.mutable_defaults
            if name not in arguments and name not in filled
        ]
        if not missing:
            return arguments
        return {**arguments, **{name: copy.deepcopy(default) for name, default in missing}}

    def fits(self, positional: tuple[Any, ...], arguments: Mapping[str, Any]) -> bool:
        """Whether the call binds to the signature (what ``Signature.bind`` decides, faster)."""
        n = len(positional)
        if n > len(self.pos_names) and not self.has_varargs:
            return False
        filled = self.pos_names[:n]
        for key in arguments:
            if key not in self.kw_names and not self.has_varkw:
                return False
            if key in filled:
                return False
        return all(r in arguments or r in filled for r in self.required)


@functools.lru_cache(maxsize=512)
def _class_methods(cls: type) -> dict[str, _MethodSpec]:
    """Public functions and classmethods of ``cls``, read statically (properties never run)."""
    out: dict[str, _MethodSpec] = {}
    for name in sorted(dir(cls)):
        if name.startswith("_"):
            continue
        attr = inspect.getattr_static(cls, name)
        if isinstance(attr, types.FunctionType):
            out[name] = _MethodSpec.of(attr, is_classmethod=False)
        elif isinstance(attr, classmethod):
            out[name] = _MethodSpec.of(attr.__func__, is_classmethod=True)
    return out


def public_methods(instance: object) -> dict[str, Callable[..., Any]]:
    """Public methods of ``instance`` (as BFCL sees them), bound, read from its class statically."""
    cls: Any = type(instance)
    return {
        name: types.MethodType(spec.func, cls if spec.is_classmethod else instance)
        for name, spec in _class_methods(cls).items()
    }


class Dispatcher:
    """Routes calls to the public methods of a fixed set of instances.

    ``instances`` is a mapping ``label -> instance`` (e.g. BFCL class name -> API object) or a
    sequence of instances. When several instances expose the same method name, ``on_conflict``
    decides: ``"last"`` (BFCL's rule: the later instance in order wins), ``"first"``, or
    ``"error"`` (raise at construction). ``deny`` names are refused with BFCL's message;
    ``allow`` (when given) restricts the table to those names. ``call_limits`` bounds each call
    (:class:`CallLimits`).
    """

    def __init__(
        self,
        instances: Mapping[str, object] | Sequence[object],
        *,
        on_conflict: Literal["last", "first", "error"] = "last",
        deny: Iterable[str] = (),
        allow: Iterable[str] | None = None,
        limits: ParseLimits = DEFAULT_LIMITS,
        call_limits: CallLimits = DEFAULT_CALL_LIMITS,
    ) -> None:
        if on_conflict not in ("last", "first", "error"):
            raise ValueError(f"on_conflict must be 'last', 'first' or 'error', not {on_conflict!r}")
        if isinstance(instances, Mapping):
            labelled = list(instances.items())
        else:
            labelled = [(type(inst).__name__, inst) for inst in instances]
        self._deny = frozenset(deny)
        self._limits = limits
        allowed = None if allow is None else frozenset(allow)
        table: dict[str, tuple[_MethodSpec, object]] = {}
        owner: dict[str, str] = {}
        ranges: dict[str, dict[str, Range]] = {}
        for label, inst in labelled:
            cls: Any = type(inst)
            class_ranges = _class_ranges(cls, call_limits) if call_limits.numbers else {}
            for name, spec in _class_methods(cls).items():
                if allowed is not None and name not in allowed:
                    continue
                if name in table:
                    if on_conflict == "error":
                        raise ValueError(
                            f"method {name!r} is exposed by both {owner[name]} and {label}; "
                            "pass on_conflict='first' or 'last' to choose"
                        )
                    if on_conflict == "first":
                        continue
                table[name] = (spec, cls if spec.is_classmethod else inst)
                owner[name] = label
                if name in class_ranges:
                    ranges[name] = class_ranges[name]
                elif name in ranges:  # a later class took the name
                    del ranges[name]
        self._table = table
        self._owner = owner
        self._call_limits = call_limits
        self._int_bound = 10**call_limits.max_int_digits
        self._ranges = ranges

    # -- introspection -------------------------------------------------------------------------

    @property
    def names(self) -> list[str]:
        """Sorted names the dispatcher will run."""
        return sorted(self._table)

    def __contains__(self, name: object) -> bool:
        return name in self._table

    def owner(self, name: str) -> str:
        """Label of the instance that serves ``name``."""
        return self._owner[name]

    def signature(self, name: str) -> inspect.Signature:
        """Signature of the bound method serving ``name`` (``self`` excluded)."""
        return self._table[name][0].signature

    def param_names(self, name: str) -> list[str]:
        """Ordered parameter names that positional arguments can fill."""
        return list(self._table[name][0].pos_names)

    # -- execution -----------------------------------------------------------------------------

    def call(self, call: Call) -> ToolResult:
        """Run one parsed call; never raises on a bad call (the result says what went wrong)."""
        name = call.name
        short = name.split(".", 1)[-1] if "." in name else name
        if name in self._deny or short in self._deny:
            return ToolResult(
                f"{ERROR_PREFIX}Function call {short} is not allowed.", "denied", call
            )
        entry = self._table.get(name)
        if entry is None:
            head = name.split(".", 1)[0]
            return ToolResult(
                f"{ERROR_PREFIX}name {head!r} is not defined", "unknown_function", call
            )
        spec, target = entry
        if not spec.fits(call.positional, call.arguments):
            method = types.MethodType(spec.func, target)
            message = signature_error_message(
                method, spec.signature, call.positional, call.arguments
            )
            return ToolResult(f"{ERROR_PREFIX}{message}", "bad_arguments", call)
        problem = self._over_limit(name, spec, call)
        if problem:
            return ToolResult(f"{ERROR_PREFIX}{problem}", "over_limit", call)
        try:
            arguments = call.arguments
            if spec.mutable_defaults:
                arguments = spec.fresh_defaults(call.positional, arguments)
            outer = arm(self._call_limits.time_s)
            try:
                if spec.sets_precision:
                    value, text = _keeping_precision(spec.func, target, call.positional, arguments)
                else:
                    value = spec.func(target, *call.positional, **arguments)
                    text = format_result(value)
            finally:
                disarm(outer)
        except CallTimeout:
            seconds = self._call_limits.time_s
            return ToolResult(
                f"{ERROR_PREFIX}{short} did not finish within {seconds:g} s and was stopped",
                "over_limit",
                call,
            )
        except Exception as exc:  # a tool failing is an observation for the model, not a crash
            return ToolResult(f"{ERROR_PREFIX}{exc}", "raised", call)
        found = result_error(value)
        kind: ResultKind = "returned_error" if found and found.kind == "error" else "ok"
        return ToolResult(text, kind, call, value)

    def _over_limit(self, name: str, spec: _MethodSpec, call: Call) -> str:
        """Why the call's arguments are over the limits ("" when they are not)."""
        bound = self._int_bound
        for values in (call.positional, call.arguments.values()):
            for value in values:
                if type(value) not in _SCALARS and not _ints_within(value, bound):
                    return (
                        f"an integer argument of {name} has more than "
                        f"{self._call_limits.max_int_digits} digits"
                    )
        ranges = self._ranges.get(name)
        if ranges:
            for param, (low, high) in ranges.items():
                value = _argument(spec, call, param)
                if not _is_number(value):
                    continue
                if (low is not None and value < low) or (high is not None and value > high):
                    return (
                        f"{name}({param}={value!r}) is out of the allowed range "
                        f"[{_bound_text(low)}, {_bound_text(high)}]"
                    )
        return ""

    def execute(self, calls: Iterable[str | Call]) -> list[ToolResult]:
        """Run calls given as :class:`Call` objects or BFCL call strings (``"cd(folder='x')"``)."""
        results = []
        for item in calls:
            if isinstance(item, Call):
                results.append(self.call(item))
                continue
            try:
                parsed = parse_python_calls(item, limits=self._limits)
            except ToolCallParseError as exc:
                results.append(ToolResult(f"{ERROR_PREFIX}{exc}", "parse_error"))
                continue
            if len(parsed) != 1:
                results.append(
                    ToolResult(
                        f"{ERROR_PREFIX}expected one call per string, got {len(parsed)}",
                        "parse_error",
                    )
                )
                continue
            results.append(self.call(parsed[0]))
        return results

    def execute_texts(self, calls: Iterable[str | Call]) -> list[str]:
        """Like :meth:`execute` but only the result strings (BFCL executor's first return value)."""
        return [r.text for r in self.execute(calls)]


_SCALARS = frozenset({str, float, bool, type(None)})


def _ints_within(value: Any, bound: int) -> bool:
    kind = type(value)
    if kind is int:
        return -bound < value < bound
    if kind in (list, tuple):
        return all(_ints_within(v, bound) for v in value)
    if kind is dict:
        return all(_ints_within(k, bound) and _ints_within(v, bound) for k, v in value.items())
    return True


def _is_number(value: Any) -> bool:
    return type(value) in (int, float)


def _bound_text(bound: float | None) -> str:
    return "-" if bound is None else f"{bound:g}"


@functools.lru_cache(maxsize=512)
def _class_ranges(cls: type, limits: CallLimits) -> dict[str, dict[str, Range]]:
    """Method name -> the ranges ``limits.numbers`` sets on its parameters (once per class)."""
    table = limits.numbers
    out: dict[str, dict[str, Range]] = {}
    for name, spec in _class_methods(cls).items():
        for param in spec.params:
            bounds = table.get(f"{name}.{param}") or table.get(param)
            if bounds is not None:
                out.setdefault(name, {})[param] = bounds
    return out


def _argument(spec: _MethodSpec, call: Call, param: str) -> Any:
    if param in call.arguments:
        return call.arguments[param]
    if param in spec.pos_names:
        index = spec.pos_names.index(param)
        if index < len(call.positional):
            return call.positional[index]
    return None


def _keeping_precision(
    func: Callable[..., Any],
    target: object,
    positional: tuple[Any, ...],
    arguments: Mapping[str, Any],
) -> tuple[Any, str]:
    """The call and its rendering; then the ``decimal`` context's precision and rounding and
    ``mpmath``'s precision are put back (tools set them globally: BFCL's MathAPI does). The
    rendering comes first: ``mpmath`` numbers print at the tool's precision."""
    ctx = decimal.getcontext()
    prec, rounding = ctx.prec, ctx.rounding
    mpmath = sys.modules.get("mpmath")
    mp_prec = mpmath.mp.prec if mpmath is not None else _MPMATH_DEFAULT_PREC
    try:
        value = func(target, *positional, **arguments)
        return value, format_result(value)
    finally:
        if decimal.getcontext() is not ctx:
            decimal.setcontext(ctx)
        if ctx.prec != prec or ctx.rounding != rounding:
            ctx.prec, ctx.rounding = prec, rounding
        mpmath = sys.modules.get("mpmath")  # the tool may have imported it
        if mpmath is not None and mpmath.mp.prec != mp_prec:
            mpmath.mp.prec = mp_prec


_PRECISION_NAMES = frozenset(
    {"decimal", "getcontext", "setcontext", "localcontext", "mpmath", "mp"}
)


_MPMATH_DEFAULT_PREC = 53


# ---------------------------------------------------------------------------------------------
# CPython's TypeError wording for a call that does not fit the signature (nothing is called)
# ---------------------------------------------------------------------------------------------


def signature_error_message(
    method: Callable[..., Any],
    sig: inspect.Signature,
    positional: Sequence[Any],
    arguments: Mapping[str, Any],
) -> str:
    """The message CPython (3.10+) raises for this bad call, computed without calling anything."""
    func = getattr(method, "__func__", method)
    qual = f"{getattr(func, '__qualname__', getattr(func, '__name__', 'function'))}()"
    offset = 1 if isinstance(method, types.MethodType) else 0
    params = list(sig.parameters.values())
    P = inspect.Parameter
    pos_params = [p for p in params if p.kind in (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD)]
    has_varargs = any(p.kind is P.VAR_POSITIONAL for p in params)
    has_varkw = any(p.kind is P.VAR_KEYWORD for p in params)
    by_name = {p.name: p for p in params}

    filled = {p.name for p in pos_params[: len(positional)]}
    for key in arguments:  # CPython checks keywords first, in the order given
        p = by_name.get(key)
        if p is None or p.kind in (P.VAR_POSITIONAL, P.VAR_KEYWORD, P.POSITIONAL_ONLY):
            if has_varkw:
                continue
            if p is not None and p.kind is P.POSITIONAL_ONLY:
                return (
                    f"{qual} got some positional-only arguments passed as keyword arguments: "
                    f"{key!r}"
                )
            return f"{qual} got an unexpected keyword argument {key!r}"
        if key in filled:
            return f"{qual} got multiple values for argument {key!r}"
    if len(positional) > len(pos_params) and not has_varargs:
        n_req = sum(p.default is P.empty for p in pos_params) + offset
        n_all = len(pos_params) + offset
        given = len(positional) + offset
        takes = f"{n_all}" if n_req == n_all else f"from {n_req} to {n_all}"
        plural = "argument" if n_all == 1 and n_req == n_all else "arguments"
        kwonly = sum(p.kind is P.KEYWORD_ONLY and p.name in arguments for p in params)
        extra = ""
        if kwonly:
            extra = (
                f" positional argument{'s' if given != 1 else ''} "
                f"(and {kwonly} keyword-only argument{'s' if kwonly != 1 else ''})"
            )
        was = "was" if given == 1 and not kwonly else "were"
        return f"{qual} takes {takes} positional {plural} but {given}{extra} {was} given"
    missing_pos = [
        p.name
        for p in pos_params[len(positional) :]
        if p.default is P.empty and p.name not in arguments
    ]
    if missing_pos:
        return f"{qual} missing {_count_names(missing_pos, 'positional')}"
    missing_kw = [
        p.name
        for p in params
        if p.kind is P.KEYWORD_ONLY and p.default is P.empty and p.name not in arguments
    ]
    if missing_kw:
        return f"{qual} missing {_count_names(missing_kw, 'keyword-only')}"
    return f"{qual} got arguments that do not match its signature {sig}"


def _count_names(names: list[str], kind: str) -> str:
    quoted = [repr(n) for n in names]
    if len(quoted) == 1:
        listed = quoted[0]
    elif len(quoted) == 2:
        listed = f"{quoted[0]} and {quoted[1]}"
    else:
        listed = ", ".join(quoted[:-1]) + f", and {quoted[-1]}"
    noun = "argument" if len(names) == 1 else "arguments"
    return f"{len(names)} required {kind} {noun}: {listed}"
