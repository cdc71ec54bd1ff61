"""Parameter values grounded in the live environment state and in earlier tool outputs.

Every argument of a sampled call comes from one *source*:

- ``output``: a value an earlier call of the trajectory returned, whose field name matches the
  parameter (``access_token`` from ``authenticate_travel``, ``zipcode`` into ``estimate_distance``
  whose ``cityA`` is described as "the zipcode of the first city");
- ``state``: a value read from the live API instance (files in the current directory, users in
  the workspace, owned stocks, valid airports...), from :data:`STATE_SOURCES`;
- ``enum``: the values the doc lists;
- ``type``: a fresh value of the parameter's type (words, small numbers).

Output-field matching (:func:`feeds`) is shared with the graph's name/type edges, so an edge
found in the docs is exactly a value path the sampler can use.
"""

from __future__ import annotations

import copy
import random
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aworld_rl_core.tooluse import ToolResult, result_error
from aworld_rl_funreason_mt.space import Param, Tool, mutable_defaults

SOURCES = ("output", "state", "enum", "type")
GENERIC = frozenset(
    {"id", "result", "status", "message", "content", "value", "name", "type", "count"}
    | {"amount", "price", "list", "data", "success", "error", "info", "time", "date"}
    | {"lines", "output", "text", "response", "mode", "option"}
)
_TOKEN = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_TOOL_NOISE = frozenset(
    {"get", "set", "create", "post", "list", "all", "by", "name", "info", "information"}
    | {"details", "detail", "history", "status", "add", "remove", "delete", "view", "display"}
    | {"find", "check", "search", "retrieve"}
)
WORDS = (
    "alpha", "budget", "review", "draft", "orbit", "harbor", "summit", "meadow", "signal",
    "canvas", "ledger", "pixel", "quartz", "rocket", "saffron", "tundra", "velvet", "willow",
)  # fmt: skip
SENTENCES = (
    "Please check the latest numbers",
    "Meeting moved to Thursday",
    "The release is ready for review",
    "Remember to back up the data",
    "Lunch at noon tomorrow",
)


def tokens(name: str) -> list[str]:
    """``"get_user_id"`` / ``"userId"`` -> ``["get", "user", "id"]``."""
    return [t.lower() for t in _TOKEN.findall(name.replace("_", " "))]


def singular(word: str) -> str:
    for suffix in ("_list", "_history", "_record", "_queue"):
        if word.endswith(suffix):
            return word[: -len(suffix)]
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def tool_noun(tool: str) -> str:
    """The object a tool's name is about: ``create_ticket`` -> ``ticket``."""
    words = [t for t in tokens(tool) if t not in _TOOL_NOISE]
    return singular(words[-1]) if words else ""


@dataclass(frozen=True)
class Leaf:
    """One value found in a tool output (or a field of an output schema): its names, from the
    plain key to qualified forms such as ``ticket_id`` for the ``id`` of ``create_ticket``."""

    names: tuple[str, ...]
    type: str
    value: Any = None
    description: str = ""


def _qualified(key: str, context: str) -> tuple[str, ...]:
    names = [key]
    if context and (key in GENERIC or key == "id"):
        names.append(f"{context}_{key}")
    return tuple(dict.fromkeys(names))


def _type_of(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "float"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "dict"
    return "string"


def schema_leaves(tool: Tool) -> list[Leaf]:
    """Leaves of a tool's documented ``response`` schema."""
    out: list[Leaf] = []

    def walk(props: Mapping[str, Any], context: str) -> None:
        for key, spec in props.items():
            kind = spec.get("type", "string")
            out.append(Leaf(_qualified(key, context), kind, None, spec.get("description", "")))
            nested = spec.get("properties")
            items = spec.get("items") or {}
            if kind == "dict" and nested:
                walk(nested, singular(key))
            elif kind == "array" and items.get("properties"):
                walk(items["properties"], singular(key))
            elif kind == "array" and items.get("type") in ("string", "integer"):
                item = singular(key)
                names = (item, f"{item}_id") if items["type"] == "integer" else (item,)
                out.append(Leaf(names, items["type"], None, spec.get("description", "")))

    walk(tool.outputs, tool_noun(tool.name))
    return out


def value_leaves(tool: str, value: Any) -> list[Leaf]:
    """Leaves of an actual output (what the sampler can feed into later calls)."""
    out: list[Leaf] = []

    def walk(data: Any, context: str) -> None:
        if isinstance(data, dict):
            records = bool(data) and all(
                isinstance(v, dict) and (isinstance(k, int) or str(k).isdigit())
                for k, v in data.items()
            )
            for key, item in data.items():
                if records and context:
                    key_value = int(key) if isinstance(key, str) and key.isdigit() else key
                    out.append(Leaf((f"{context}_id", "id"), _type_of(key_value), key_value))
                    walk(item, context)
                    continue
                if not isinstance(key, str):
                    continue
                out.append(Leaf(_qualified(key, context), _type_of(item), item))
                if isinstance(item, dict):
                    walk(item, singular(key))
                elif isinstance(item, list):
                    for element in item:
                        if isinstance(element, dict):
                            walk(element, singular(key))
                        elif isinstance(element, (str, int)) and not isinstance(element, bool):
                            name = singular(key)
                            names = (name, f"{name}_id") if isinstance(element, int) else (name,)
                            out.append(Leaf(names, _type_of(element), element))
        elif isinstance(data, list):
            for element in data:
                walk(element, context)

    walk(value, tool_noun(tool))
    return out


def compatible(leaf_type: str, param_type: str) -> bool:
    if param_type in ("float", "number"):
        return leaf_type in ("float", "integer")
    if param_type in ("any", ""):
        return True
    if param_type == "tuple":
        return leaf_type == "array"
    return leaf_type == param_type


FLOW_TEXT_OUTPUTS = frozenset({"content", "lines", "text", "output", "description", "comment"})
"""Last name words of string outputs a user passes on as text (a file's content, a ticket's
description, a tweet's text)."""
FLOW_TEXT_INPUTS = frozenset({"content", "message", "description", "comment"})
"""Last name words of string inputs that take such text (a tweet, a message, a ticket body)."""
FLOW_NUMBER_INPUTS = frozenset({"a", "b", "number", "value", "part", "whole", "base"})
"""Numeric inputs of calculators that take any earlier number (a price, a distance)."""
_NOT_A_QUANTITY = frozenset({"id", "count", "seed", "number", "code", "zipcode", "priority"})


def flow_feeds(leaf: Leaf, param: Param) -> bool:
    """Whether ``leaf`` is a value a user would pass on into ``param`` though the names differ,
    across API classes too: text into a text body (``cat``'s ``file_content`` into
    ``post_tweet``'s ``content``), a quantity into a calculator's operand (a stock price into
    ``add``'s ``a``)."""
    have = [tokens(n) for n in leaf.names]
    wanted = tokens(param.name)
    if not wanted or not any(have):
        return False
    if leaf.type == "string" and param.type == "string":
        return wanted[-1] in FLOW_TEXT_INPUTS and any(
            h and h[-1] in FLOW_TEXT_OUTPUTS for h in have
        )
    if leaf.type in ("float", "integer") and param.type in ("float", "integer", "number"):
        return param.name in FLOW_NUMBER_INPUTS and all(
            h and h[-1] not in _NOT_A_QUANTITY for h in have
        )
    return False


def feeds(leaf: Leaf, param: Param) -> str:
    """How ``leaf`` can fill ``param``: ``"name"``, ``"description"``, ``"flow"``
    (:func:`flow_feeds`) or ``""`` (it cannot)."""
    if not compatible(leaf.type, param.type):
        return ""
    wanted = tokens(param.name)
    if wanted[-1] == "id" and all(tokens(n)[-1] != "id" for n in leaf.names):
        return ""  # an id input takes ids, not the names a listing returns
    for name in leaf.names:
        have = tokens(name)
        exact = name == param.name and name not in GENERIC
        if exact or (len(wanted) >= 2 and have[-len(wanted) :] == wanted):
            return "name"
    text = " " + " ".join(tokens(param.description)) + " "
    for name in leaf.names:
        have = tokens(name)
        if (len(have) >= 2 or have[0] not in GENERIC) and f" {' '.join(have)} " in text:
            return "description"
    return "flow" if flow_feeds(leaf, param) else ""


# ---------------------------------------------------------------------------------------------
# State sources: (class or tool, parameter) -> candidate values read from the live instance
# ---------------------------------------------------------------------------------------------

StateSource = Callable[[Any, Mapping[str, Any], random.Random], list[Any]]


def _cwd(fs: Any) -> Any:
    return getattr(fs, "_current_dir", None) or fs.root


def _files(fs: Any, *_: Any) -> list[str]:
    return [n for n, item in _cwd(fs).contents.items() if not hasattr(item, "contents")]


def _dirs(fs: Any, *_: Any) -> list[str]:
    return [n for n, item in _cwd(fs).contents.items() if hasattr(item, "contents")]


def _cd_targets(fs: Any, *_: Any) -> list[str]:
    return _dirs(fs) + ([".."] if _cwd(fs) is not fs.root else [])


def _new_name(extension: str) -> StateSource:
    def make(fs: Any, _args: Mapping[str, Any], rng: random.Random) -> list[str]:
        taken = set(_cwd(fs).contents)
        names = [f"{w}{extension}" for w in WORDS if f"{w}{extension}" not in taken]
        rng.shuffle(names)
        return names[:3]

    return make


def _words_of_file(fs: Any, args: Mapping[str, Any], _rng: random.Random) -> list[str]:
    item = _cwd(fs).contents.get(args.get("file_name", ""))
    text = getattr(item, "content", "")
    return sorted({w for w in re.findall(r"[A-Za-z]{4,}", text)})[:12]


def _second_file(fs: Any, args: Mapping[str, Any], _rng: random.Random) -> list[str]:
    return [f for f in _files(fs) if f != args.get("file_name1")]


def _move_destination(fs: Any, args: Mapping[str, Any], rng: random.Random) -> list[str]:
    dirs = [d for d in _dirs(fs) if d != args.get("source")]
    return dirs + _new_name(".txt")(fs, args, rng)[:1]


def _find_names(fs: Any, *_: Any) -> list[str]:
    names: list[str] = []

    def walk(directory: Any) -> None:
        for name, item in directory.contents.items():
            names.append(name.split(".")[0][:5])
            if hasattr(item, "contents"):
                walk(item)

    walk(_cwd(fs))
    return sorted(set(names))


def _user_names(api: Any, *_: Any) -> list[str]:
    return list(api.user_map)


def _new_contact(api: Any, _args: Mapping[str, Any], rng: random.Random) -> list[str]:
    names = [n for n in ("Grace", "Hugo", "Ines", "Jonas", "Keiko") if n not in api.user_map]
    rng.shuffle(names)
    return names


def _inbox_words(api: Any, *_: Any) -> list[str]:
    text = " ".join(str(v) for message in api.inbox for v in message.values())
    return sorted({w for w in re.findall(r"[A-Za-z]{4,}", text)})[:10]


def _own(attribute: str) -> StateSource:
    return lambda api, *_: [getattr(api, attribute)]


def _tweet_authors(api: Any, *_: Any) -> list[str]:
    return sorted({t["username"] for t in api.tweets.values()} | {api.username})


def _tweet_words(api: Any, *_: Any) -> list[str]:
    text = " ".join(t["content"] for t in api.tweets.values())
    return sorted({w for w in re.findall(r"[A-Za-z]{4,}", text)})[:10]


def _new_follow(api: Any, _args: Mapping[str, Any], rng: random.Random) -> list[str]:
    names = [n for n in ("ava", "ben", "chloe", "dev") if n not in api.following_list]
    rng.shuffle(names)
    return names


def _symbols(api: Any, *_: Any) -> list[str]:
    return sorted(api.stocks)


def _symbol_lists(api: Any, _args: Mapping[str, Any], rng: random.Random) -> list[list[str]]:
    symbols = sorted(api.stocks)
    return [rng.sample(symbols, k=min(3, len(symbols))) for _ in range(3)]


def _watched(api: Any, *_: Any) -> list[str]:
    return list(api.watch_list)


def _stock_price(api: Any, args: Mapping[str, Any], _rng: random.Random) -> list[float]:
    stock = api.stocks.get(args.get("symbol", ""))
    return [round(stock["price"], 2)] if stock else []


def _traveler_first(api: Any, *_: Any) -> list[str]:
    return [api.user_first_name] if api.user_first_name else ["Iris", "Marcus"]


def _traveler_last(api: Any, *_: Any) -> list[str]:
    return [api.user_last_name] if api.user_last_name else ["Moreau", "Lee"]


def _airports(api: Any, *_: Any) -> list[str]:
    return ["SFO", "LAX", "JFK", "ORD"]  # hubs with routes to most airports


def _other_airport(api: Any, args: Mapping[str, Any], _rng: random.Random) -> list[str]:
    return [a for a in ("RMS", "SBK", "BOS", "ORD") if a != args.get("travel_from")]


def _fixed(*values: Any) -> StateSource:
    return lambda *_: list(values)


_SI = ("km", "m", "cm", "mm")
_IMPERIAL = (("cm", "in"), ("m", "ft"), ("km", "miles"), ("kg", "lb"), ("celsius", "fahrenheit"))

STATE_SOURCES: dict[tuple[str, str], StateSource] = {
    # GorillaFileSystem: what is in the current directory
    ("GorillaFileSystem", "file_name"): _files,
    ("GorillaFileSystem", "file_name1"): _files,
    ("GorillaFileSystem", "file_name2"): _second_file,
    ("GorillaFileSystem", "source"): lambda fs, *_: _files(fs) + _dirs(fs),
    ("GorillaFileSystem", "destination"): _move_destination,
    ("GorillaFileSystem", "dir_name"): _dirs,
    ("GorillaFileSystem", "pattern"): _words_of_file,
    ("GorillaFileSystem", "name"): _find_names,
    ("GorillaFileSystem", "path"): lambda fs, *_: [".", *_dirs(fs)],
    ("GorillaFileSystem", "content"): _fixed(*SENTENCES),
    ("GorillaFileSystem", "lines"): _fixed(1, 2, 3),
    ("GorillaFileSystem", "mode"): _fixed("l", "w", "c"),
    ("cd", "folder"): _cd_targets,
    ("mkdir", "dir_name"): _new_name(""),
    ("touch", "file_name"): _new_name(".txt"),
    ("echo", "file_name"): _new_name(".txt"),
    # MathAPI: numbers and supported units
    ("MathAPI", "unit_in"): _fixed(*_SI),
    ("MathAPI", "unit_out"): lambda _api, args, _rng: [u for u in _SI if u != args.get("unit_in")],
    ("imperial_si_conversion", "unit_in"): _fixed(*(a for pair in _IMPERIAL for a in pair)),
    ("imperial_si_conversion", "unit_out"): lambda _api, args, _rng: [
        b if a == args.get("unit_in") else a for a, b in _IMPERIAL if args.get("unit_in") in (a, b)
    ],
    ("MathAPI", "base"): _fixed(2.0, 10.0, 3.0),
    ("MathAPI", "precision"): _fixed(2, 3, 4),
    ("MathAPI", "decimal_places"): _fixed(0, 1, 2),
    ("divide", "b"): _fixed(2.0, 4.0, 5.0, 8.0),
    # MessageAPI: the workspace's users and messages
    ("MessageAPI", "user"): _user_names,
    ("MessageAPI", "user_name"): _new_contact,
    ("MessageAPI", "keyword"): _inbox_words,
    ("MessageAPI", "message"): _fixed(*SENTENCES),
    # TwitterAPI: the account and its tweets
    ("TwitterAPI", "username"): _own("username"),
    ("TwitterAPI", "password"): _own("password"),
    ("get_user_tweets", "username"): _tweet_authors,
    ("get_user_stats", "username"): _tweet_authors,
    ("TwitterAPI", "keyword"): _tweet_words,
    ("TwitterAPI", "username_to_follow"): _new_follow,
    ("TwitterAPI", "username_to_unfollow"): lambda api, *_: list(api.following_list),
    ("TwitterAPI", "content"): _fixed(*SENTENCES),
    ("TwitterAPI", "comment_content"): _fixed("Great point!", "Thanks for sharing", "Agreed"),
    ("TwitterAPI", "tags"): _fixed(["#update"], ["#team", "#news"]),
    ("TwitterAPI", "mentions"): _fixed(["@lin"], ["@noah"]),
    ("TwitterAPI", "mentioned_usernames"): _fixed(["lin"], ["noah", "ava"]),
    # TicketAPI
    ("TicketAPI", "username"): _fixed("sam", "rita"),
    ("TicketAPI", "password"): _fixed("pass1234"),
    ("TicketAPI", "title"): _fixed("Laptop will not boot", "Access request", "Broken monitor"),
    ("TicketAPI", "description"): _fixed(*SENTENCES),
    ("TicketAPI", "priority"): _fixed(1, 2, 3, 4, 5),
    ("TicketAPI", "status"): _fixed("Open", "In Progress", "Closed"),
    ("TicketAPI", "resolution"): _fixed("Replaced the cable", "Reset the password"),
    ("TicketAPI", "updates"): _fixed(
        {"priority": 4}, {"status": "In Progress"}, {"title": "Urgent"}
    ),
    # TradingBot: the market and the account
    ("TradingBot", "symbol"): _symbols,
    ("TradingBot", "stock"): _symbols,
    ("remove_stock_from_watchlist", "symbol"): _watched,
    ("TradingBot", "stocks"): _symbol_lists,
    ("TradingBot", "name"): _fixed("Apple", "Google", "Tesla", "Microsoft", "Nvidia"),
    ("TradingBot", "sector"): _fixed("Technology", "Automobile"),
    ("TradingBot", "order_type"): _fixed("Buy", "Sell"),
    ("TradingBot", "price"): _stock_price,
    ("TradingBot", "amount"): _fixed(5, 10, 20),
    ("fund_account", "amount"): _fixed(500.0, 1000.0),
    ("withdraw_funds", "amount"): _fixed(100.0, 250.0),
    ("TradingBot", "username"): _fixed("trader_kim"),
    ("TradingBot", "password"): _fixed("k1m!secure"),
    ("TradingBot", "threshold"): _fixed(0.1, 0.2),
    ("TradingBot", "min_price"): _fixed(50.0, 100.0),
    ("TradingBot", "max_price"): _fixed(500.0, 1000.0),
    ("TradingBot", "start_date"): _fixed("2024-08-01"),
    ("TradingBot", "end_date"): _fixed("2024-09-01"),
    # TravelAPI
    ("TravelAPI", "client_id"): _fixed("client_8821"),
    ("TravelAPI", "client_secret"): _fixed("s3cr3t_8821"),
    ("TravelAPI", "refresh_token"): _fixed("refresh_77a1"),
    ("TravelAPI", "user_first_name"): _traveler_first,
    ("TravelAPI", "user_last_name"): _traveler_last,
    ("TravelAPI", "first_name"): _traveler_first,
    ("TravelAPI", "last_name"): _traveler_last,
    ("TravelAPI", "date_of_birth"): _fixed("1990-04-12"),
    ("TravelAPI", "passport_number"): _fixed("P8842715"),
    ("TravelAPI", "travel_from"): _airports,
    ("TravelAPI", "travel_to"): _other_airport,
    ("TravelAPI", "travel_date"): _fixed("2024-11-15", "2024-12-03"),
    ("TravelAPI", "travel_class"): _fixed("economy", "business", "first"),
    ("TravelAPI", "card_number"): _fixed("4444333322221111", "5500667788990011"),
    ("TravelAPI", "expiration_date"): _fixed("12/2028"),
    ("TravelAPI", "cardholder_name"): lambda api, *_: [
        f"{_traveler_first(api)[0]} {_traveler_last(api)[0]}"
    ],
    ("TravelAPI", "card_verification_number"): _fixed(321, 907),
    ("TravelAPI", "insurance_type"): _fixed("comprehensive", "travel"),
    ("TravelAPI", "insurance_cost"): _fixed(50.0, 120.0),
    ("TravelAPI", "budget_limit"): _fixed(1000.0, 2500.0),
    ("TravelAPI", "value"): _fixed(100.0, 250.0),
    ("compute_exchange_rate", "target_currency"): lambda _api, args, _rng: (
        ["EUR", "JPY", "GBP", "CAD"] if args.get("base_currency") == "USD" else ["USD"]
    ),
    ("TravelAPI", "message"): _fixed("I need help with my booking"),
    ("TravelAPI", "lastModifiedAfter"): _fixed("2024-01-01T00:00:00"),
    ("TravelAPI", "includeRemoved"): _fixed("false"),
    # VehicleControlAPI
    ("VehicleControlAPI", "city"): _fixed("Rivermist", "Stonebrook", "Silverpine", "San Francisco"),
    ("VehicleControlAPI", "fuelAmount"): _fixed(5.0, 10.0),
    ("VehicleControlAPI", "pedalPosition"): _fixed(1.0),
    ("VehicleControlAPI", "temperature"): _fixed(20.0, 22.0, 24.0),
    ("VehicleControlAPI", "fanSpeed"): _fixed(30, 50, 70),
    ("VehicleControlAPI", "speed"): _fixed(50.0, 65.0),
    ("VehicleControlAPI", "distanceToNextVehicle"): _fixed(80.0, 100.0),
    ("VehicleControlAPI", "gallon"): _fixed(5.0, 12.0),
    ("VehicleControlAPI", "liter"): _fixed(20.0, 40.0),
    ("VehicleControlAPI", "distance"): _fixed(120.0, 300.0),
    ("VehicleControlAPI", "destination"): _fixed("2107 Elm St, Rivermist, CA"),
    ("VehicleControlAPI", "messages"): _fixed(["Check the tire pressure"]),
    ("lockDoors", "unlock"): _fixed(False, True),
    ("lockDoors", "door"): _fixed(["driver", "passenger", "rear_left", "rear_right"], ["driver"]),
}
"""User-facing value sources; a parameter without one (ids, tokens, zipcodes) is filled only
from earlier outputs, which is what makes it a prerequisite edge."""


def state_source(tool: Tool, param: str) -> StateSource | None:
    return STATE_SOURCES.get((tool.name, param)) or STATE_SOURCES.get((tool.cls, param))


def type_values(param: Param, rng: random.Random) -> list[Any]:
    """Fresh values of the parameter's type."""
    kind = param.type
    if kind == "boolean":
        return [rng.random() < 0.5]
    if kind == "integer":
        return [rng.randint(1, 20)]
    if kind in ("float", "number"):
        return [float(rng.choice((2, 3, 4, 5, 8, 10, 12.5, 25, 100)))]
    if kind in ("array", "tuple"):
        if param.items in ("float", "integer", "number"):
            return [[float(rng.randint(1, 50)) for _ in range(rng.randint(2, 5))]]
        return [[rng.choice(WORDS) for _ in range(2)]]
    if kind == "dict":
        return [{}]
    return [rng.choice(WORDS)]


# ---------------------------------------------------------------------------------------------
# Grounding one call
# ---------------------------------------------------------------------------------------------


def soft_failure(value: Any) -> bool:
    """A return value that reports an error or a failure in any of BFCL's shapes (core's one
    classifier, :func:`aworld_rl_core.tooluse.result_error`): ``{"error": ...}``, list-wrapped
    errors, failure statuses, ``{"success": false}``, ``{"symbol": "Stock not found"}``."""
    return result_error(value) is not None


def succeeded(result: ToolResult) -> bool:
    """A call that ran cleanly and did not report an error or a failure (``ToolResult.failed``,
    core's classifier)."""
    return not result.failed


@dataclass(frozen=True)
class Output:
    """What one earlier call returned, for grounding later calls."""

    tool: str
    value: Any


def output_candidates(param: Param, outputs: Sequence[Output]) -> list[tuple[Any, str]]:
    """(value, producing tool) pairs of earlier outputs that can fill ``param``, newest first."""
    seen: list[tuple[Any, str]] = []
    for output in reversed(outputs):
        for leaf in value_leaves(output.tool, output.value):
            if feeds(leaf, param) and all(leaf.value != v for v, _ in seen):
                seen.append((leaf.value, output.tool))
    return seen


@dataclass(frozen=True)
class Grounded:
    """A call's arguments and where each one came from (``output:<tool>``, ``state``, ...)."""

    arguments: dict[str, Any]
    sources: dict[str, str]


class Grounder:
    """Chooses arguments for a tool (see the module docstring).

    ``skip`` maps (tool, param) to sources execution feedback ruled out; ``internal`` names
    (tool, param) pairs that take tool outputs only; ``optional_rate`` is the chance an optional
    parameter with a value source is given.
    """

    def __init__(
        self,
        *,
        skip: Mapping[tuple[str, str], Iterable[str]] | None = None,
        internal: Iterable[tuple[str, str]] = (),
        optional_rate: float = 0.3,
    ) -> None:
        self.skip = {k: frozenset(v) for k, v in (skip or {}).items()}
        self.internal = frozenset(internal)
        self.optional_rate = optional_rate

    def candidates(
        self,
        tool: Tool,
        param: Param,
        instance: Any,
        arguments: Mapping[str, Any],
        outputs: Sequence[Output],
        rng: random.Random,
    ) -> list[tuple[Any, str]]:
        """Candidate values with their source, in the order the sampler tries them."""
        skip = self.skip.get((tool.name, param.name), frozenset())
        found: list[tuple[Any, str]] = []
        if "output" not in skip:
            found += [(v, f"output:{t}") for v, t in output_candidates(param, outputs)]
        if (tool.name, param.name) in self.internal:
            return found
        source = state_source(tool, param.name)
        if source is not None and "state" not in skip:
            values = list(source(instance, arguments, rng)) if instance is not None else []
            found += [(v, "state") for v in values]
        if param.enum and "enum" not in skip:
            if param.type == "array":  # the doc's enum lists the allowed items
                found += [([v], "enum") for v in param.enum] + [(list(param.enum), "enum")]
            else:
                found += [(v, "enum") for v in param.enum]
        if not found and "type" not in skip:  # also when the state holds nothing to pick
            found += [(v, "type") for v in type_values(param, rng)]
        return found

    def ground(
        self,
        tool: Tool,
        instances: Mapping[str, Any],
        outputs: Sequence[Output],
        rng: random.Random,
    ) -> Grounded | None:
        """Arguments for one call of ``tool``; None when a required one has no value."""
        instance = instances.get(tool.cls)
        explicit = mutable_defaults(getattr(type(instance), tool.name, None))
        arguments: dict[str, Any] = {}
        sources: dict[str, str] = {}
        for param in tool.params.values():
            # BFCL's post_tweet shares its list defaults between calls (and between the model's
            # and the ground truth's instances in bfcl-eval's process): never leave one out
            shared = param.name in explicit
            if shared and rng.random() >= self.optional_rate:
                arguments[param.name], sources[param.name] = explicit[param.name](), "default"
                continue
            if not param.required and rng.random() >= self.optional_rate:
                if shared:
                    arguments[param.name], sources[param.name] = explicit[param.name](), "default"
                continue
            options = self.candidates(tool, param, instance, arguments, outputs, rng)
            if not options:
                if param.required:
                    return None
                if shared:
                    arguments[param.name], sources[param.name] = explicit[param.name](), "default"
                continue
            fed = [o for o in options if o[1].startswith("output:")]
            fed = [o for o in fed if o[0] not in arguments.values()] or fed  # cityA != cityB
            value, source = fed[0] if fed else rng.choice(options)
            arguments[param.name] = copy.deepcopy(value)
            sources[param.name] = source
        return Grounded(arguments, sources)
