"""A synthetic multi-hop world: a corpus of entity pages and questions that need two retrievals.

People, cities, countries, universities and companies get invented names; each entity has one
page (``{"id", "title", "text"}``). Questions chain two pages ("In which country was X born?":
X's page names the city, the city's page names the country) or compare two pages ("Who was
born earlier, X or Y?", two queries that can be asked in one multi-query search). Every
question carries its gold pages and its decomposition. Deterministic for a seed; no network.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aworld_rl_core.config import option

_SYLLABLES = (
    *("ka", "lo", "mi", "ra", "ten", "vor", "sil", "an", "bel", "dor", "fen", "gal", "hur"),
    *("is", "jor", "kel", "lum", "nar", "ost", "pel", "quin", "rud", "sar", "tor", "ul"),
    *("ven", "wim", "xan", "yor", "zel"),
)
_PROFESSIONS = ("painter", "chemist", "architect", "poet", "engineer", "composer", "historian")
_FIELDS = ("physics", "law", "music", "medicine", "economics", "botany")
_PRODUCTS = ("bicycles", "lamps", "software", "textiles", "clocks", "ceramics")


@dataclass(frozen=True, kw_only=True)
class SyntheticConfig:
    """Size and seed of the synthetic world."""

    people: int = option(40, help="people (each with a birth city, year, university)")
    cities: int = option(12, help="cities (each in one country)")
    countries: int = option(5, help="countries")
    universities: int = option(6, help="universities (each in one city)")
    companies: int = option(10, help="companies (each founded by one person)")
    questions: int = option(60, help="questions to generate (mixed types)")
    distinct_pairs: bool = option(
        False,
        help="a comparison's pair of people is asked once, in one order only (else 'X or Y' "
        "and 'Y or X' can both occur, e.g. one in training and one held out)",
    )
    seed: int = option(0, help="random seed")


def _name(rng: random.Random, used: set[str], parts: int) -> str:
    """A new invented name of ``parts`` syllables (one more after many collisions)."""
    tries = 0
    while True:
        name = "".join(rng.choice(_SYLLABLES) for _ in range(parts)).capitalize()
        if name not in used:
            used.add(name)
            return name
        tries += 1
        if tries % 50 == 0:
            parts += 1


def generate(cfg: SyntheticConfig) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(documents, questions) of one synthetic world."""
    for field_name in ("people", "cities", "countries", "universities", "companies"):
        if getattr(cfg, field_name) < 2:
            raise ValueError(f"synthetic.{field_name} must be >= 2")
    rng = random.Random(cfg.seed)
    used: set[str] = set()
    countries = [_name(rng, used, 2) + "ia" for _ in range(cfg.countries)]
    cities = [(_name(rng, used, 2) + "ton", rng.choice(countries)) for _ in range(cfg.cities)]
    unis = [
        (f"University of {_name(rng, used, 2)}", rng.choice(cities)[0], rng.choice(_FIELDS))
        for _ in range(cfg.universities)
    ]
    people: list[dict[str, Any]] = [
        {
            "name": f"{_name(rng, set(), 2)} {_name(rng, used, 3)}",
            "city": rng.choice(cities)[0],
            "year": rng.randint(1820, 1990),
            "uni": rng.choice(unis)[0],
            "job": rng.choice(_PROFESSIONS),
        }
        for _ in range(cfg.people)
    ]
    companies = [
        (f"{_name(rng, used, 2)} Works", rng.choice(people)["name"], rng.choice(_PRODUCTS))
        for _ in range(cfg.companies)
    ]
    docs: list[dict[str, Any]] = []
    page: dict[str, str] = {}

    def add(title: str, text: str) -> None:
        page[title] = f"d{len(docs)}"
        docs.append({"id": page[title], "title": title, "text": text})

    for country in countries:
        add(country, f"{country} is a country. Its capital hosts a yearly festival of lights.")
    for city, country in cities:
        add(city, f"{city} is a city located in {country}. It lies on a river delta.")
    for uni, city, subject in unis:
        add(uni, f"The {uni} is a university in the city of {city}, known for {subject}.")
    for p in people:
        add(
            p["name"],
            f"{p['name']} was {'an' if p['job'][0] in 'aeiou' else 'a'} {p['job']} born in "
            f"{p['year']} in {p['city']}. "
            f"{p['name'].split()[0]} studied at the {p['uni']}.",
        )
    for company, founder, product in companies:
        add(company, f"{company} is a company that makes {product}. It was founded by {founder}.")
    city_country = dict(cities)
    uni_city = {u: c for u, c, _ in unis}
    makers = [
        lambda: _birth_country(rng.choice(people), city_country, page),
        lambda: _university_city(rng.choice(people), uni_city, page),
        lambda: _founder_city(rng.choice(companies), people, page),
        lambda: _earlier(rng.sample(people, 2), page),
    ]
    questions: list[dict[str, Any]] = []
    seen: set[Any] = set()
    attempts = 0
    while len(questions) < cfg.questions and attempts < 50 * cfg.questions:
        attempts += 1
        item = makers[attempts % len(makers)]()
        if item is None or (key := _key(item, cfg.distinct_pairs)) in seen:
            continue
        seen.add(key)
        item["id"] = f"syn-{len(questions)}"
        questions.append(item)
    return docs, questions


def _key(item: dict[str, Any], distinct_pairs: bool) -> Any:
    """What makes a question new: its text, or a comparison's unordered pair of pages."""
    if distinct_pairs and item["type"] == "comparison":
        return frozenset(item["gold_docs"])
    return item["question"]


def _birth_country(p, city_country, page) -> dict[str, Any]:
    return {
        "question": f"In which country was {p['name']} born?",
        "golden_answers": [city_country[p["city"]]],
        "gold_docs": [page[p["name"]], page[p["city"]]],
        "decomposition": [f"Where was {p['name']} born?", f"Which country is {p['city']} in?"],
        "type": "bridge",
    }


def _university_city(p, uni_city, page) -> dict[str, Any]:
    return {
        "question": f"In which city is the university where {p['name']} studied?",
        "golden_answers": [uni_city[p["uni"]]],
        "gold_docs": [page[p["name"]], page[p["uni"]]],
        "decomposition": [f"Where did {p['name']} study?", f"Where is the {p['uni']}?"],
        "type": "bridge",
    }


def _founder_city(company, people, page) -> dict[str, Any]:
    name, founder, _ = company
    city = next(p["city"] for p in people if p["name"] == founder)
    return {
        "question": f"In which city was the founder of {name} born?",
        "golden_answers": [city],
        "gold_docs": [page[name], page[founder]],
        "decomposition": [f"Who founded {name}?", f"Where was {founder} born?"],
        "type": "bridge",
    }


def _earlier(pair, page) -> dict[str, Any] | None:
    a, b = pair
    if a["year"] == b["year"]:
        return None
    first = a if a["year"] < b["year"] else b
    return {
        "question": f"Who was born earlier, {a['name']} or {b['name']}?",
        "golden_answers": [first["name"]],
        "gold_docs": [page[a["name"]], page[b["name"]]],
        "decomposition": [f"When was {a['name']} born?", f"When was {b['name']} born?"],
        "type": "comparison",
    }


def write(cfg: SyntheticConfig, directory: str | Path) -> tuple[Path, Path]:
    """``corpus.jsonl`` and ``questions.jsonl`` in ``directory``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    docs, questions = generate(cfg)
    corpus, qa = directory / "corpus.jsonl", directory / "questions.jsonl"
    for path, rows in ((corpus, docs), (qa, questions)):
        with path.open("w", encoding="utf-8") as handle:
            for row in rows:
                handle.write(json.dumps(row) + "\n")
    return corpus, qa
