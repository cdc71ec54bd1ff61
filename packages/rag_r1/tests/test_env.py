import json

import pytest

from aworld_rl_core.config import to_dict
from aworld_rl_core.environment import step_many
from aworld_rl_core.resources import clear, shared
from aworld_rl_core.testing.contracts import EnvironmentContract
from aworld_rl_rag_r1.env import SearchEnv, SearchEnvConfig, make_env
from aworld_rl_rag_r1.observations import CLOSE, INVALID_ACTION, OPEN
from aworld_rl_rag_r1.retrieval import RetrieverConfig
from aworld_rl_rag_r1.retrievers import load_retriever
from aworld_rl_rag_r1.search import BatchedSearch


class Counting:
    def __init__(self, inner):
        self.inner, self.calls = inner, []
        self.manifest_hash = inner.manifest_hash

    def search(self, queries, topk, gold=None):
        self.calls.append(list(queries))
        return self.inner.search(queries, topk, gold)


@pytest.fixture
def counted(hash_index):
    """The env's shared searcher, pre-built around a counting wrapper of the real retriever."""
    clear("rag_r1.search")
    retriever = RetrieverConfig(backend="local", index=str(hash_index), cache=False)
    counting = Counting(load_retriever(hash_index))
    shared("rag_r1.search", to_dict(retriever), lambda: BatchedSearch(counting, topk=3))
    yield SearchEnvConfig(retriever=retriever), counting
    clear("rag_r1.search")


def _row(q):
    return {
        "question": q["question"],
        "golden_answers": q["golden_answers"],
        "gold_docs": q["gold_docs"],
    }


class TestSearchEnvContract(EnvironmentContract):
    @pytest.fixture(autouse=True)
    def _index(self, hash_index):
        self.options = {"retriever": {"backend": "local", "index": str(hash_index)}}

    def make_env(self):
        return make_env({"question": "Who?", "golden_answers": ["x"]}, **self.options)


def test_answer_search_invalid_and_the_answer_turn(counted, world):
    cfg, counting = counted
    q = world[1][0]
    env = SearchEnv(_row(q), cfg)
    (opening,) = env.reset()
    assert opening["role"] == "user" and q["question"] in opening["content"]
    assert SearchEnv.stop == ("</search>", "</answer>")
    bad = env.step("<think>hmm</think> no tags")
    assert bad.inline == INVALID_ACTION and not bad.done and bad.reward == 0.0
    step = env.step('<think>a</think><search> "Paris, Texas" mayor, Dallas </search> ignored')
    assert step.inline.startswith(OPEN) and step.inline.endswith(CLOSE)
    payload = json.loads(step.inline[len(OPEN) : -len(CLOSE)])
    assert payload["query"] == ['"Paris, Texas" mayor', "Dallas"]
    assert len(payload["documents"]) == 2 and payload["documents"][0].startswith("Doc 1: ")
    assert counting.calls == [['"Paris, Texas" mayor', "Dallas"]]
    done = env.step(f"<think>b</think><answer> The {q['golden_answers'][0]} </answer>")
    assert done.done and done.reward == 1.0 and done.info["em"] == 1.0
    counts = {k: done.info[k] for k in ("turns", "searches", "queries", "invalid_actions")}
    assert counts == {"turns": 3, "searches": 1, "queries": 2, "invalid_actions": 1}


def test_search_turn_budget_then_one_answer_turn(counted, world):
    cfg, _ = counted
    env = SearchEnv(_row(world[1][0]), SearchEnvConfig(retriever=cfg.retriever, max_search_turns=2))
    env.reset()
    for _ in range(2):
        assert env.step("<search>a</search>").inline is not None
    last = env.step("<search>again</search>")
    assert last.done and last.reward == 0.0 and last.info["answer"] is None


def test_single_query_mode_and_query_limits(counted, world):
    cfg, counting = counted
    sq = SearchEnv(_row(world[1][0]), SearchEnvConfig(retriever=cfg.retriever, mode="sq"))
    sq.reset()
    step = sq.step("<search>a, b</search>")
    assert counting.calls[-1] == ["a, b"] and step.inline.count("Doc 1:") == 1
    assert "Doc 3:" in step.inline and not step.inline.lstrip().startswith("{")
    strict = SearchEnv(
        _row(world[1][0]), SearchEnvConfig(retriever=cfg.retriever, over_limit="invalid")
    )
    strict.reset()
    assert strict.step("<search>a, b, c, d</search>").inline == INVALID_ACTION
    cut = SearchEnv(_row(world[1][0]), cfg)
    cut.reset()
    cut.step("<search>a, b, c, d</search>")
    assert counting.calls[-1] == ["a", "b", "c"] and cut.info()["dropped_queries"] == 1


def test_step_many_one_retrieval_for_all_episodes(counted, world):
    cfg, counting = counted
    envs = [SearchEnv(_row(q), cfg) for q in world[1][:8] for _ in range(4)]  # GRPO n=4
    for env in envs:
        env.reset()
    asked = [q["decomposition"][:2] for q in world[1][:8] for _ in range(4)]
    steps = step_many(envs, [f"<search>{a}, {b}</search>" for a, b in asked])
    unique = list(dict.fromkeys(q for pair in asked for q in pair))
    assert counting.calls == [unique] and len(unique) <= 16  # 64 queries in one call
    alone = SearchEnv(_row(world[1][0]), cfg)
    alone.reset()
    assert alone.step(f"<search>{asked[0][0]}, {asked[0][1]}</search>").inline == steps[0].inline
    assert all(s.inline and not s.done for s in steps)


def test_observation_budget_in_policy_tokens(counted, world, tiny_tokenizer):
    cfg, _ = counted
    from dataclasses import replace

    env = SearchEnv(_row(world[1][0]), replace(cfg, obs_tokenizer="tiny:qwen3", max_obs_tokens=12))
    env.reset()
    block = json.loads(
        env.step("<search>a painter, a city</search>").inline[len(OPEN) : -len(CLOSE)]
    )
    for doc in block["documents"]:
        assert len(tiny_tokenizer.encode(doc, add_special_tokens=False)) == 12
        assert doc.startswith("Doc 1: ")


def test_oracle_puts_the_gold_pages_first(hash_index, world):
    clear("rag_r1.search")
    q = world[1][0]
    cfg = SearchEnvConfig(retriever=RetrieverConfig(backend="oracle", index=str(hash_index)))
    env = SearchEnv(_row(q), cfg)
    env.reset()
    block = json.loads(env.step("<search>anything</search>").inline[len(OPEN) : -len(CLOSE)])
    titles = {d["title"] for d in world[0] if d["id"] in q["gold_docs"]}
    first_two = block["documents"][0].split("\n")[:2]
    assert {line.split(": ", 1)[1].split("   ")[0] for line in first_two} == titles
    clear("rag_r1.search")


def test_bad_rows_and_options_are_clear():
    with pytest.raises(ValueError, match="needs a 'question'"):
        make_env({"golden_answers": ["x"]})
    with pytest.raises(Exception, match="mode"):
        make_env({"question": "q"}, mode="xx")
