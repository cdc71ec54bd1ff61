"""The multi-query budget: five searches of three queries each, over 100-word passages, fit the
paper's 6,144-token response budget and reach the answer turn (core's engine, a real tokenizer).

Without a budget the observations (about 9 passages x 100 words per search) outgrow it: core's
engine ends the episode truncated, before the answer, with reward 0.
"""

import random

import pytest

from aworld_rl_core.config import to_dict
from aworld_rl_core.engine import ChatCodec, Limits, Output, Rollout, run_batched
from aworld_rl_core.resources import clear
from aworld_rl_rag_r1 import observations
from aworld_rl_rag_r1.corpus import passages
from aworld_rl_rag_r1.encoders import EncoderConfig, load_encoder
from aworld_rl_rag_r1.env import SearchEnv, SearchEnvConfig
from aworld_rl_rag_r1.index import IndexConfig, build_index
from aworld_rl_rag_r1.retrieval import RetrieverConfig

WORDS = [
    "river",
    "mountain",
    "castle",
    "harbour",
    "forest",
    "painter",
    "engineer",
    "village",
    "market",
    "bridge",
]


@pytest.fixture(scope="module")
def long_index(tmp_path_factory):
    """40 documents of 300 words: 120 passages of 100 words each."""
    rng = random.Random(0)
    docs = [
        {
            "id": f"d{i}",
            "title": f"Place {i}",
            "text": " ".join(rng.choice(WORDS) + str(rng.randrange(50)) for _ in range(300)),
        }
        for i in range(40)
    ]
    directory = tmp_path_factory.mktemp("long")
    encoder = load_encoder(EncoderConfig(name_or_path="hash", hash_dim=32))
    build_index(passages(docs), directory, IndexConfig(), encoder, log=lambda _: None)
    return directory


class FiveSearchesThenAnswer:
    """Five 3-query searches, then the answer (text written by hand, tokenised for real)."""

    def __init__(self, tokenizer):
        self.tokenizer, self.turns = tokenizer, 0

    def __call__(self, turns):
        out = []
        for _ in turns:
            self.turns += 1
            if self.turns <= 5:
                k = self.turns
                text = f"<think>step {k}</think><search> river{k}, castle{k}, market{k} </search>"
            else:
                text = "<think>done</think><answer> Place 3 </answer>"
            out.append(Output(ids=self.tokenizer.encode(text, add_special_tokens=False)))
        return out


def _play(index, tokenizer, **env):
    clear("rag_r1.search")
    clear("rag_r1.tokenizer")
    retriever = RetrieverConfig(backend="local", index=str(index), cache=False)
    cfg = SearchEnvConfig(retriever=retriever, obs_tokenizer="tiny:qwen3", **env)
    row = {"question": "Which place has the castle?", "golden_answers": ["Place 3"]}
    rollout = Rollout(
        [SearchEnv(row, cfg)],
        Limits(max_turns=6, max_new_tokens=500, max_response_tokens=6144),  # the paper's
        codec=ChatCodec(tokenizer),
    )
    [episode] = run_batched(rollout, FiveSearchesThenAnswer(tokenizer))
    clear("rag_r1.search")
    return episode, rollout.envs[0]


def test_without_a_budget_five_full_searches_do_not_fit(long_index, tiny_tokenizer):
    episode, env = _play(long_index, tiny_tokenizer)
    assert episode.truncated and episode.reward == 0.0
    assert env.counters.searches < 5 or episode.info.get("answer") is None


def test_five_three_query_searches_reach_the_answer_turn(long_index, tiny_tokenizer):
    budget = 6144 - 6 * 500  # what rag_r1.train's obs_budget_tokens=-1 resolves to
    episode, env = _play(long_index, tiny_tokenizer, obs_budget_tokens=budget)
    assert not episode.truncated and episode.done
    assert env.counters.searches == 5 and env.counters.queries == 15
    assert episode.info["answer"] == "Place 3" and episode.reward == 1.0
    assert 0 < env.counters.obs_tokens <= budget
    masked = sum(1 for m in episode.loss_mask if m == 0)
    assert masked == env.counters.obs_tokens  # observations are exactly the budgeted tokens
    # each search had its fair share: every block has all three queries' documents
    content = episode.messages[-1]["content"]
    assert content.count("<information>") == 5 and content.count('"documents"') == 5


def test_per_passage_truncation(tiny_tokenizer):
    truncator = observations.TokenTruncator(tiny_tokenizer)
    text = " ".join(f"word{i}" for i in range(100))
    block = observations.multi_query(["q"], [[text, text]], truncator, 1000, max_passage_tokens=7)
    docs = observations.cut_passages([text], truncator, 7)
    assert len(tiny_tokenizer.encode(docs[0], add_special_tokens=False)) == 7
    assert f"Doc 1: {docs[0]}" in block.replace("\\n", "\n") and text not in block


def test_train_resolves_the_budget_from_the_trainer():
    from dataclasses import replace

    from aworld_rl_core.trainer_config import RLConfig, TrainerConfig
    from aworld_rl_rag_r1.recipes.train import TrainConfig, observation_budget

    paper = TrainConfig()
    assert paper.env.obs_budget_tokens == -1 and observation_budget(paper) == 6144 - 6 * 500
    fixed = replace(paper, env=replace(paper.env, obs_budget_tokens=0))
    assert observation_budget(fixed) == 0
    tight = replace(
        paper,
        trainer=TrainerConfig(
            rl=RLConfig(max_turns=6, max_new_tokens=500, max_response_tokens=3000)
        ),
    )
    with pytest.raises(ValueError, match="trainer.rl.max_response_tokens=3000"):
        observation_budget(tight)
    assert to_dict(paper.env)["obs_budget_tokens"] == -1
