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
from aworld_rl_rag_r1.testing import CountingRetriever as Counting


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

    environment = "rag_r1.search"
    row = {"question": "Who?", "golden_answers": ["x"]}


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


def _play(cfg, q, turns):
    env = SearchEnv(_row(q), cfg)
    env.reset()
    for text in turns:
        step = env.step(text)
    return env, step


def _total(env, step, cfg):
    """The reward a backend sums: the episode's return plus the weighted extra rewards."""
    from aworld_rl_core.refs import Ref, callable_of
    from aworld_rl_rag_r1.recipes.train import RewardConfig

    assert isinstance(cfg, RewardConfig)
    fns = [callable_of(Ref.named(name), "rewards") for name in cfg.extra]
    weights = cfg.weights() or (1.0,) * len(fns)
    completion = [{"role": "assistant", "content": env.transcript}]
    extra = sum(
        w * fn([completion], golden_answers=[env.golds])[0]
        for w, fn in zip(weights, fns, strict=True)
    )
    return step.reward + extra


def test_rewards_as_the_paper_scores_and_their_sum(counted, world):
    """EM alone by default (1.0 for a correct answer); em_format replaces EM; extras add."""
    from dataclasses import replace

    from aworld_rl_rag_r1.recipes.train import RewardConfig

    cfg, _ = counted
    q = world[1][0]
    gold = q["golden_answers"][0]
    good = ["<think>a</think>\n<search>x</search>", f"\n<think>b</think>\n<answer>{gold}</answer>"]
    sloppy = ["<search>x</search>", f"text <answer>{gold}</answer>"]  # no <think>: bad format
    wrong = ["<think>a</think>\n<search>x</search>", "\n<think>b</think>\n<answer>nope</answer>"]

    def score(reward, turns):
        env_cfg = replace(cfg, reward=reward.episode, reward_weight=reward.episode_weight)
        env, step = _play(env_cfg, q, turns)
        return _total(env, step, reward)

    paper = RewardConfig()
    assert (paper.episode, paper.episode_weight, paper.extra) == ("em", 1.0, ())
    assert score(paper, good) == 1.0 and score(paper, sloppy) == 1.0 and score(paper, wrong) == 0.0
    fmt = RewardConfig(episode="em_format")  # Search-R1 v0.3: 1.0 / 1 - 0.2 / 0.2 / 0.1
    assert score(fmt, good) == 1.0
    assert score(fmt, sloppy) == pytest.approx(0.8)
    assert score(fmt, wrong) == pytest.approx(0.2)
    f1_extra = RewardConfig(extra=("rag_r1.f1",), extra_weights=(0.5,))
    assert score(f1_extra, good) == 1.5 and score(f1_extra, wrong) == 0.0
    off = RewardConfig(episode_weight=0.0, extra=("rag_r1.f1",))
    assert score(off, good) == 1.0
    with pytest.raises(ValueError, match="correct answer would score 2.0"):
        RewardConfig(extra=("rag_r1.em_format",)).check()
    with pytest.raises(ValueError, match="count the answer twice"):
        RewardConfig(extra=("rag_r1.em",)).check()
    with pytest.raises(ValueError, match="1 weights for 0"):
        RewardConfig(extra_weights=(1.0,)).check()


def test_train_job_carries_the_reward_config(tmp_path, aworld_home):
    from aworld_rl_core.config import load_config
    from aworld_rl_core.registry import get_recipe
    from aworld_rl_core.runs import Run
    from aworld_rl_rag_r1.recipes.train import build_job

    def make_run(name):
        return Run(tmp_path / name, quiet=True)

    entry = get_recipe("rag_r1.train")
    base = ["world.encoder.name_or_path=hash", "data.limit=2"]
    default = load_config(
        entry.config_cls(), preset="tiny-cpu", presets=entry.presets, overrides=base
    )
    job = build_job(default, make_run("a"))
    assert job.rewards == [] and job.reward_weights is None
    assert job.env.kwargs["reward"] == "em" and job.env.kwargs["reward_weight"] == 1.0
    chosen = load_config(
        entry.config_cls(),
        preset="tiny-cpu",
        presets=entry.presets,
        overrides=[
            *base,
            "reward.episode=em_format",
            "reward.extra=[rag_r1.f1]",
            "reward.extra_weights=[0.5]",
        ],
    )
    job = build_job(chosen, make_run("b"))
    assert job.env.kwargs["reward"] == "em_format"
    assert [r.target for r in job.rewards] == ["rag_r1.f1"] and job.reward_weights == (0.5,)


def test_valid_action_rate_counts_garbage_in_the_answer_turn(counted, world):
    from aworld_rl_rag_r1.metrics import rollout_metrics

    cfg, _ = counted
    one = SearchEnvConfig(retriever=cfg.retriever, max_search_turns=1)
    garbage, _ = _play(one, world[1][0], ["<search>a</search>", "no tags at all"])
    late, _ = _play(one, world[1][0], ["<search>a</search>", "<search>b</search>"])
    assert garbage.info()["invalid_actions"] == 1 and late.info()["invalid_actions"] == 0
    assert rollout_metrics([garbage.info()])["valid_action_rate"] == 0.5
    assert rollout_metrics([late.info()])["valid_action_rate"] == 1.0


def test_step_s_leaves_out_the_one_time_load(hash_index, world):
    """The first step loads the index (load_s); step_s is the turn's own cost."""
    clear("rag_r1.search")
    try:
        cfg = SearchEnvConfig(retriever=RetrieverConfig(backend="local", index=str(hash_index)))
        env = SearchEnv(_row(world[1][0]), cfg)
        env.reset()
        env.step("<search>a</search>")
        info = env.info()
        assert info["load_s"] > 0.0 and info["step_s"] > 0.0  # reported apart
    finally:
        clear("rag_r1.search")


# ---------------------------------------------------------------- model text never escapes


class Poisoned(Counting):
    """Raises like a Hugging Face tokenizer on a query it cannot encode."""

    def search(self, queries, topk, gold=None):
        if any("poison" in q for q in queries):
            raise TypeError("TextEncodeInput must be Union[TextInputSequence, ...]")
        return super().search(queries, topk, gold)


@pytest.mark.parametrize("fmt", ["json", "auto"])
def test_hostile_search_blocks_become_format_errors(counted, world, fmt):
    cfg, counting = counted
    cfg = SearchEnvConfig(retriever=cfg.retriever, query_format=fmt)
    hostile = [
        "[" * 1000,  # RecursionError from json
        "[" + "1" * 4301 + "]",  # ValueError: int over the 4,300-digit limit
        '["a\ud800b"]',  # a lone surrogate: tokenizers raise TypeError
    ]
    for body in hostile:
        env = SearchEnv(_row(world[1][0]), cfg)
        env.reset()
        step = env.step(f"<search>{body}</search>")
        assert step.inline == INVALID_ACTION and not step.done
        assert step.info["invalid"] and step.info["invalid_actions"] == 1
    assert counting.calls == []


def test_one_episodes_failing_search_does_not_end_the_others(hash_index, world):
    clear("rag_r1.search")
    retriever = RetrieverConfig(backend="local", index=str(hash_index), cache=False)
    poisoned = Poisoned(load_retriever(hash_index))
    shared("rag_r1.search", to_dict(retriever), lambda: BatchedSearch(poisoned, topk=3))
    try:
        cfg = SearchEnvConfig(retriever=retriever)
        envs = [SearchEnv(_row(q), cfg) for q in world[1][:3]]
        for env in envs:
            env.reset()
        texts = ["<search>alpha</search>", "<search>poison</search>", "<search>beta</search>"]
        steps = step_many(envs, texts)
    finally:
        clear("rag_r1.search")
    assert steps[1].inline == INVALID_ACTION and "TypeError" in steps[1].info["invalid"]
    for i in (0, 2):
        assert steps[i].inline.startswith(OPEN) and "invalid" not in steps[i].info
    assert json.loads(steps[0].inline[len(OPEN) : -len(CLOSE)])["query"] == ["alpha"]


def test_echoed_queries_are_bounded(counted, world):
    cfg, counting = counted
    env = SearchEnv(_row(world[1][0]), cfg)
    env.reset()
    step = env.step(f"<search>{'x' * 1_000_000}</search>")
    assert counting.calls[-1] == ["x" * 512]
    assert len(step.inline) < 20_000
    many = SearchEnv(_row(world[1][0]), SearchEnvConfig(retriever=cfg.retriever, max_queries=0))
    many.reset()
    step = many.step("<search>" + ", ".join(f"q{i}" for i in range(1000)) + "</search>")
    echoed = json.loads(step.inline[len(OPEN) : -len(CLOSE)])
    assert echoed["query"] == [f"q{i}" for i in range(16)]
    assert step.info["dropped_queries"] == 984
