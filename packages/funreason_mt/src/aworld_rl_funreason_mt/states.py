"""Initial states beyond the package's fifteen: seeded generators per BFCL API class.

Each generator draws a state in the shape the class's ``_load_scenario`` reads (the same keys
as ``data/scenarios.json``), from word lists of its own: a file tree of a user's projects, a
workspace's users and inbox, a poster's tweets, a ticket queue, a traveller's cards and
bookings, a car's readings, a trader's balance and watch list. States are consistent within
themselves (ids point at existing records, counters follow the largest id). ``MathAPI`` has no
state. :func:`generate_states` gives ``n`` per class, fixed by the seed.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from typing import Any

PEOPLE = (
    "ava", "bruno", "chen", "dara", "emil", "farah", "goran", "hana", "ivo", "jun", "kemal",
    "lea", "mateo", "nia", "oskar", "pia", "quinn", "rosa", "sven", "tara", "uma", "vik",
)  # fmt: skip
SURNAMES = ("Okafor", "Lindqvist", "Haddad", "Moreno", "Tanaka", "Novak", "Silva", "Kowalski")
TOPICS = (
    "budget", "roadmap", "invoices", "research", "travel", "photos", "drafts", "archive",
    "reports", "notes", "designs", "contracts",
)  # fmt: skip
LINES = (
    "Q3 numbers are final", "ship the beta on Friday", "call the supplier about delays",
    "error: disk quota exceeded", "meeting notes from the kickoff", "update the onboarding doc",
    "the benchmark improved by 12 percent", "remember to renew the certificate",
    "warning: retry in 5s", "review the pull request before noon",
)  # fmt: skip
TICKETS = (
    ("Monitor flickers", "The second monitor flickers after lunch"),
    ("Password reset", "Cannot log in after the password change"),
    ("Projector broken", "Room 4 projector shows no signal"),
    ("Disk full", "Build server disk is full again"),
    ("Access request", "Need access to the finance share"),
    ("Slow wifi", "Wifi drops in the east wing"),
)
AIRPORTS = ("SFO", "LAX", "JFK", "ORD", "SEA", "BOS", "MIA", "ATL", "DFW", "DEN")
STOCKS = ("AAPL", "GOOG", "TSLA", "MSFT", "NVDA", "ALPH", "OMEG", "QUAS", "NEPT", "SYNX", "ZETA")


def _file_tree(rng: random.Random) -> dict[str, Any]:
    def files(k: int) -> dict[str, Any]:
        out = {}
        for _ in range(k):
            name = f"{rng.choice(TOPICS)}_{rng.randrange(1, 99)}.{rng.choice(('txt', 'md', 'csv'))}"
            body = "\n".join(rng.sample(LINES, rng.randint(1, 4)))
            out[name] = {"type": "file", "content": body}
        return out

    contents: dict[str, Any] = files(rng.randint(1, 2))
    for topic in rng.sample(TOPICS, rng.randint(1, 3)):
        inner = files(rng.randint(1, 3))
        if rng.random() < 0.4:
            inner[rng.choice(TOPICS)] = {"type": "directory", "contents": files(1)}
        contents[topic] = {"type": "directory", "contents": inner}
    return {"root": {rng.choice(PEOPLE): {"type": "directory", "contents": contents}}}


def _messages(rng: random.Random) -> dict[str, Any]:
    names = [n.capitalize() for n in rng.sample(PEOPLE, rng.randint(3, 5))]
    base = rng.randrange(2, 9) * 100
    users = {name: f"USR{base + i + 1:03d}" for i, name in enumerate(names)}
    ids = list(users.values())
    inbox = [{rng.choice(ids): rng.choice(LINES)} for _ in range(rng.randint(1, 3))]
    return {
        "user_count": len(users),
        "user_map": users,
        "inbox": inbox,
        "message_count": len(inbox),
        "current_user": None,
        "random_seed": rng.randrange(1000, 99999),
    }


def _twitter(rng: random.Random) -> dict[str, Any]:
    me = f"{rng.choice(PEOPLE)}_{rng.choice(TOPICS)}"
    others = rng.sample(PEOPLE, 3)
    tweets = {}
    for i in range(rng.randint(1, 4)):
        author = me if i == 0 or rng.random() < 0.6 else others[0]
        tags = [f"#{rng.choice(TOPICS)}"] if rng.random() < 0.6 else []
        mentions = [f"@{rng.choice(others)}"] if rng.random() < 0.3 else []
        tweets[str(i)] = {
            "id": i,
            "username": author,
            "content": rng.choice(LINES).capitalize(),
            "tags": tags,
            "mentions": mentions,
        }
    return {
        "username": me,
        "password": f"{rng.choice(TOPICS)}!{rng.randrange(100, 999)}",
        "authenticated": False,
        "tweets": tweets,
        "comments": {},
        "retweets": {},
        "following_list": others[: rng.randint(1, 3)],
        "tweet_counter": len(tweets),
    }


def _tickets(rng: random.Random) -> dict[str, Any]:
    users = rng.sample(PEOPLE, 2)
    queue = []
    for i, (title, description) in enumerate(rng.sample(TICKETS, rng.randint(1, 4)), 1):
        queue.append(
            {
                "id": i,
                "title": title,
                "description": description,
                "status": rng.choice(("Open", "In Progress", "Closed")),
                "priority": rng.randint(1, 5),
                "created_by": rng.choice(users),
            }
        )
    return {"ticket_queue": queue, "ticket_counter": len(queue) + 1, "current_user": None}


def _travel(rng: random.Random) -> dict[str, Any]:
    first, last = rng.choice(PEOPLE).capitalize(), rng.choice(SURNAMES)
    cards, bookings = {}, {}
    for _ in range(rng.randint(1, 2)):
        card_id = str(rng.randrange(10**11, 10**12))
        cards[card_id] = {
            "card_number": "4" + "".join(str(rng.randrange(10)) for _ in range(15)),
            "expiration_date": f"{rng.randint(1, 12):02d}/{rng.randint(2027, 2031)}",
            "cardholder_name": f"{first} {last}",
            "card_verification_number": rng.randrange(100, 1000),
            "balance": float(rng.randrange(5, 200) * 100),
        }
    if rng.random() < 0.6:
        origin, dest = rng.sample(AIRPORTS, 2)
        bookings[str(rng.randrange(10**6, 10**7))] = {
            "card_id": next(iter(cards)),
            "travel_date": f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
            "travel_from": origin,
            "travel_to": dest,
            "travel_class": rng.choice(("economy", "business", "first")),
            "travel_cost": float(rng.randrange(100, 2000)),
            "transaction_id": str(rng.randrange(10**7, 10**8)),
        }
    return {
        "random_seed": rng.randrange(1000, 99999),
        "credit_card_list": cards,
        "booking_record": bookings,
        "access_token": None,
        "token_type": None,
        "token_expires_in": None,
        "token_scope": None,
        "user_first_name": first,
        "user_last_name": last,
        "budget_limit": None,
    }


def _vehicle(rng: random.Random) -> dict[str, Any]:
    doors = ("driver", "passenger", "rear_left", "rear_right")
    return {
        "fuelLevel": round(rng.uniform(2.0, 48.0), 1),
        "batteryVoltage": round(rng.uniform(11.8, 13.2), 1),
        "engineState": "stopped",
        "doorStatus": {d: rng.choice(("locked", "unlocked")) for d in doors},
        "acTemperature": float(rng.randint(17, 27)),
        "fanSpeed": rng.randrange(0, 101, 10),
        "acMode": rng.choice(("auto", "cool", "heat", "defrost")),
        "humidityLevel": float(rng.randint(25, 70)),
        "headLightStatus": rng.choice(("on", "off")),
        "parkingBrakeStatus": rng.choice(("engaged", "released")),
        "brakePedalStatus": "released",
    }


def _trading(rng: random.Random) -> dict[str, Any]:
    return {
        "account_info": {
            "account_id": rng.randrange(10000, 99999),
            "balance": float(rng.randrange(10, 500) * 100),
            "binding_card": rng.randrange(10**15, 10**16),
        },
        "watch_list": rng.sample(STOCKS, rng.randint(1, 4)),
    }


GENERATORS: dict[str, Callable[[random.Random], dict[str, Any]]] = {
    "GorillaFileSystem": _file_tree,
    "MessageAPI": _messages,
    "TwitterAPI": _twitter,
    "TicketAPI": _tickets,
    "TravelAPI": _travel,
    "VehicleControlAPI": _vehicle,
    "TradingBot": _trading,
}
"""Class -> a generator of one initial state (``MathAPI`` has none: it holds no state)."""


def generate_states(
    classes: Iterable[str], n: int, *, seed: int = 0
) -> dict[str, list[dict[str, Any]]]:
    """``n`` generated initial states per class that has a generator (fixed by ``seed``)."""
    if n < 0:
        raise ValueError(f"the number of generated states must be >= 0, got {n}")
    out: dict[str, list[dict[str, Any]]] = {}
    for cls in classes:
        make = GENERATORS.get(cls)
        if make is not None and n:
            rng = random.Random(f"{seed}:states:{cls}")
            out[cls] = [make(rng) for _ in range(n)]
    return out
