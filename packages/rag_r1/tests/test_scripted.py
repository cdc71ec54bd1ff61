"""The scripted searcher (a test double for the synthetic world) and the warm start's pieces."""

import asyncio

import pytest

from aworld_rl_core.engine import Limits, play_many
from aworld_rl_rag_r1.env import SearchEnv, SearchEnvConfig
from aworld_rl_rag_r1.retrieval import RetrieverConfig
from aworld_rl_rag_r1.scripted import ScriptedSearcher, plan


def test_plan_reads_the_four_templates():
    assert plan("In which country was Kalo Ravorsil born?").a == "Kalo Ravorsil"
    assert plan("In which city is the university where Mi Ra studied?").kind == "university_city"
    assert plan("In which city was the founder of Belten Works born?").a == "Belten Works"
    p = plan("Who was born earlier, Ka Lomi or Ten Vor?")
    assert (p.kind, p.a, p.b) == ("earlier", "Ka Lomi", "Ten Vor")
    assert plan("What is the capital of France?") is None


def _reply(agent, question, done=""):
    messages = [{"role": "user", "content": f"Answer it. Question: {question}\n"}]
    if done:
        messages.append({"role": "assistant", "content": done})
    return agent.reply(messages)


def _info(text):
    return f"\n<information>\n{text}\n</information>\n"


def test_bridge_question_searches_the_second_hop_with_what_the_first_found():
    agent = ScriptedSearcher("mq")
    q = "In which country was Kalo Ravorsil born?"
    first = _reply(agent, q)
    assert first.endswith("<search> Where was Kalo Ravorsil born? </search>")
    done = first + _info("Doc 1: Kalo Ravorsil was a poet born in 1850 in Belton. Kalo studied.")
    second = _reply(agent, q, done)
    assert second.endswith("<search> Which country is Belton in? </search>")
    done += second + _info("Doc 1: Belton is a city located in Ostia. It lies on a river delta.")
    assert _reply(agent, q, done).endswith("<answer> Ostia </answer>")
    # the page was not retrieved: it says so and answers unknown (a wrong trajectory)
    assert _reply(agent, q, first + _info("Doc 1: nothing")).endswith("<answer> unknown </answer>")


def test_comparison_is_one_multi_query_search_or_two_single_ones():
    q = "Who was born earlier, Ka Lomi or Ten Vor?"
    mq = _reply(ScriptedSearcher("mq"), q)
    assert mq.endswith("<search> When was Ka Lomi born?, When was Ten Vor born? </search>")
    sq = _reply(ScriptedSearcher("sq"), q)
    assert sq.endswith("<search> When was Ka Lomi born? </search>")
    assert _reply(ScriptedSearcher("mq", max_queries=1), q) == sq
    info = _info(
        "Doc 1: Ka Lomi was a poet born in 1901 in Belton.\n"
        "Doc 2: Ten Vor was an engineer born in 1899 in Belton."
    )
    assert _reply(ScriptedSearcher("mq"), q, mq + info).endswith("<answer> Ten Vor </answer>")


@pytest.mark.parametrize(("mode", "max_queries", "rounds"), [("mq", 3, 1), ("sq", 1, 2)])
def test_scripted_searcher_on_the_real_index(world, minilm_index, mode, max_queries, rounds):
    """Against all-MiniLM-L6-v2 over the synthetic corpus: every question answered correctly,
    bridge questions in two rounds, comparisons in one (mq) or two (sq)."""
    questions = world[1][:16]
    cfg = SearchEnvConfig(
        mode=mode,
        max_queries=max_queries,
        retriever=RetrieverConfig(backend="local", index=str(minilm_index), cache=False),
    )
    envs = [SearchEnv(q, cfg) for q in questions]
    episodes = asyncio.run(
        play_many(ScriptedSearcher(mode, max_queries), envs, limits=Limits(max_turns=6))
    )
    assert [e.info["em"] for e in episodes] == [1.0] * len(questions)
    for q, e in zip(questions, episodes, strict=True):
        expected = rounds if q["type"] == "comparison" else 2
        assert e.info["searches"] == expected, q["question"]
        assert e.info["queries"] == 2 and e.info["invalid_actions"] == 0


def test_information_masked_ce_leaves_the_passages_out():
    torch = pytest.importorskip("torch")
    from aworld_rl_rag_r1.learning import information_masked_ce

    logits = torch.zeros(1, 4, 3)
    logits[0, 0, 1] = 2.0  # position 0 predicts token 1 well; the others are uniform
    labels = torch.tensor([[1, 2, 0, -100]])
    info = torch.tensor([[False, True, True, False]])
    loss = information_masked_ce(logits, labels, {"information": info, "call": ~info})
    expected = torch.nn.functional.cross_entropy(logits[0, :1], labels[0, :1])
    assert torch.isclose(loss, expected)
    everything = information_masked_ce(logits, labels, {})
    assert torch.isclose(
        everything, torch.nn.functional.cross_entropy(logits[0, :3], labels[0, :3])
    )


def test_warm_start_questions_keep_the_warm_start_and_rl_apart(aworld_home):
    from aworld_rl_core.config import from_dict
    from aworld_rl_rag_r1.recipes.train import TrainConfig, splits

    def cut(warm, limit=None):
        data = {"train": "synthetic", "heldout": 10, "validation": 5, "limit": limit}
        world = {"synthetic": {"questions": 60}}
        return from_dict(
            TrainConfig, {"data": data, "world": world, "warm_start": {"questions": warm}}
        )

    shared = splits(cut(0))
    assert shared.warm is shared.train and len(shared.train) == 45
    apart = splits(cut(20))
    assert [len(apart.warm), len(apart.train)] == [20, 25]
    assert [r["question"] for r in (*apart.warm, *apart.train)] == [
        r["question"] for r in shared.train
    ]
    assert apart.validation == shared.validation and apart.heldout == shared.heldout
    limited = splits(cut(20, limit=5))  # data.limit cuts RL's questions, not the warm start's
    assert limited.warm == apart.warm and limited.train == apart.train[:5]
    with pytest.raises(ValueError, match="warm_start.questions=45 leaves none of the 45"):
        splits(cut(45))


def test_from_run_reuses_a_finished_warm_start(tmp_path):
    """warm_start.from_run: RL starts from the run's warm start and the random point is its
    init (world tokenizer) or model.name_or_path; a run without them is refused by name."""
    from aworld_rl_core.config import from_dict
    from aworld_rl_rag_r1.recipes.learn import reused
    from aworld_rl_rag_r1.recipes.train import TrainConfig

    def cfg(world_tokenizer):
        ws = {"from_run": str(tmp_path), "world_tokenizer": world_tokenizer}
        return from_dict(TrainConfig, {"model": {"name_or_path": "tiny:x"}, "warm_start": ws})

    with pytest.raises(ValueError, match="holds no warm-start/model/ model"):
        reused(cfg(False))
    (tmp_path / "warm-start" / "model").mkdir(parents=True)
    (tmp_path / "warm-start" / "model" / "config.json").write_text("{}")
    assert reused(cfg(False)) == ("tiny:x", str(tmp_path / "warm-start" / "model"))
    with pytest.raises(ValueError, match="holds no init/ model"):
        reused(cfg(True))
    (tmp_path / "init").mkdir()
    (tmp_path / "init" / "config.json").write_text("{}")
    assert reused(cfg(True)) == (str(tmp_path / "init"), str(tmp_path / "warm-start" / "model"))


def test_tiny_cpu_split_holds_out_200_questions_never_trained_on(aworld_home):
    """The train preset's world: 240 warm-start, 160 RL, 200 validation and 200 held-out
    questions (one = 0.005), and no held-out comparison asks a pair of people that a training
    or validation question asked (in either order)."""
    from aworld_rl_core.config import load_config
    from aworld_rl_core.registry import get_recipe
    from aworld_rl_rag_r1.recipes.train import splits

    entry = get_recipe("rag_r1.train")
    cfg = load_config(
        entry.config_cls(),
        preset="tiny-cpu",
        presets=entry.presets,
        overrides=["world.encoder.name_or_path=hash"],  # the split does not depend on it
    )
    split = splits(cfg)
    parts = (split.warm, split.train, split.validation, split.heldout)
    assert [len(p) for p in parts] == [240, 160, 200, 200]

    def pairs(rows):
        return {frozenset(r["gold_docs"]) for r in rows}

    held, val = pairs(split.heldout), pairs(split.validation)
    trained = pairs(split.warm) | pairs(split.train)
    assert not held & trained and not held & val and not val & trained
    comparisons = (r["question"].startswith("Who was born earlier") for r in split.heldout)
    assert all(comparisons)  # the 90 bridge questions come first (see the README)
