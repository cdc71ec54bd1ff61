"""Fuzz corpora on a CPU-time budget (issue 29): generated hostile request bodies against the
server's parser and generated model text against ``SearchEnv.step``, for as many cases as a
fixed CPU budget allows (core's ``fuzz_for``); nothing may escape but the documented errors."""

import json
import random

import pytest

from aworld_rl_core.testing.crash import fuzz_for
from aworld_rl_rag_r1.env import SearchEnv, SearchEnvConfig
from aworld_rl_rag_r1.retrieval import RetrieverConfig
from aworld_rl_rag_r1.server import RequestError, ServerConfig, parse_request

PIECES = [
    "<search>",
    "</search>",
    "<answer>",
    "</answer>",
    "<think>",
    "</think>",
    "<information>",
    "[",
    "]",
    "{",
    "}",
    '"',
    "'",
    ",",
    ":",
    "\\",
    "\\u",
    "\\ud800",
    "\ud800",
    "\udfff",
    "\x00",
    "9" * 5000,
    "1e999",
    "NaN",
    "-",
    "null",
    "true",
    " ",
    "\n",
    "q",
    "Paris",
    "é",
    "😀",
    "\u202e",
]


def _texts(seed):
    rng = random.Random(seed)
    while True:
        parts = [rng.choice(PIECES) for _ in range(rng.randrange(1, 40))]
        if rng.random() < 0.1:
            parts.append("[" * rng.randrange(500, 3000))
        if rng.random() < 0.05:
            parts.append("<search>" * rng.randrange(100, 2000))
        yield "".join(parts)


def _bodies(seed):
    rng = random.Random(seed)
    texts = _texts(seed + 1)
    while True:
        kind = rng.randrange(5)
        if kind == 0:
            yield next(texts).encode("utf-8", "surrogatepass")
        elif kind == 1:
            body = {"queries": [next(texts)[:200] for _ in range(rng.randrange(4))]}
            body["topk"] = rng.choice([1, 3, -1, 0, 10 ** rng.randrange(1, 40), "3", None, 2.5])
            yield json.dumps(body).encode()
        elif kind == 2:
            yield b'{"queries": ' + b"[" * rng.randrange(100, 6000) + b"]"
        elif kind == 3:
            yield bytes(rng.randrange(256) for _ in range(rng.randrange(64)))
        else:
            yield json.dumps({"queries": ["a"], rng.choice(["gold", "x"]): next(texts)}).encode()


def test_server_parser_fuzz_on_a_cpu_budget():
    cfg = ServerConfig(max_queries=8, max_topk=10, max_query_chars=100)

    def target(body):
        try:
            parse_request(body, cfg)
        except RequestError as exc:
            assert 400 <= exc.status < 500, exc.status

    ran, escaped = fuzz_for(_bodies(0), target, cpu_seconds=1.0)
    assert ran > 50 and escaped == [], escaped[:3]


@pytest.mark.parametrize("fmt", ["comma", "json", "auto"])
def test_search_env_step_fuzz_on_a_cpu_budget(hash_index, fmt):
    cfg = SearchEnvConfig(
        retriever=RetrieverConfig(backend="local", index=str(hash_index)), query_format=fmt
    )
    row = {"question": "Who?", "golden_answers": ["x"]}

    def target(text):
        env = SearchEnv(row, cfg)
        env.reset()
        step = env.step(text)
        seen = (step.inline or "") + "".join(m["content"] for m in step.observation)
        assert len(seen) < 40_000, len(seen)  # echoed queries stay bounded
        env.close()

    ran, escaped = fuzz_for(_texts(1), target, cpu_seconds=1.0)
    assert ran > 20 and escaped == [], escaped[:3]
