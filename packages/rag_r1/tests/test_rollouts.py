"""Search episodes through core's trl driver: one retrieval per turn for every trajectory, and
the ``<information>`` tokens masked out of the loss."""

import functools
import itertools
from types import SimpleNamespace

import pytest

from aworld_rl_core.config import to_dict
from aworld_rl_core.engine import ChatCodec, Limits
from aworld_rl_core.resources import clear, shared
from aworld_rl_rag_r1.env import make_env
from aworld_rl_rag_r1.retrieval import RetrieverConfig
from aworld_rl_rag_r1.retrievers import load_retriever
from aworld_rl_rag_r1.search import BatchedSearch

from .test_env import Counting

pytest.importorskip("trl")


class SearchThenAnswer:
    """Test double with ``HfGenerator``'s call shape: a turn whose prompt holds no retrieved
    passages searches the question's two sub-questions; after them it answers. Junk tokens follow
    the stop string, as in a padded batch."""

    def __init__(self, tokenizer, plan):
        self.tokenizer, self.plan, self.calls = tokenizer, plan, []

    def __call__(self, prompts, max_new_tokens, *, stop_strings=()):
        self.calls.append((len(prompts), tuple(stop_strings)))
        out = []
        for prompt in prompts:
            text = self.tokenizer.decode(prompt)
            question = next(q for q in self.plan if q in text)
            sub, answer = self.plan[question]
            if "\n</information>\n" in text:  # a retrieved block (the prompt names the tag too)
                reply = f"<think>found it</think><answer> {answer} </answer>"
            else:
                reply = f"<think>two hops</think><search> {sub[0]}, {sub[1]} </search>"
            out.append(([*self.tokenizer.encode(reply + " junk junk"), 7], None))
        return out


class FakeTrainer:
    def __init__(self, tokenizer):
        self.processing_class, self.model = tokenizer, None
        self.accelerator = SimpleNamespace(unwrap_model=lambda model: model)
        self.metrics = {}

    def _log_metric(self, key, value):
        self.metrics[key] = value


def test_trl_driver_one_retrieval_per_turn_and_information_masked(
    hash_index, world, tiny_tokenizer, monkeypatch
):
    from aworld_rl_core.backends import trl_trainer

    clear("rag_r1.search")
    retriever = RetrieverConfig(backend="local", index=str(hash_index), cache=False)
    counting = Counting(load_retriever(hash_index))
    shared("rag_r1.search", to_dict(retriever), lambda: BatchedSearch(counting, topk=3))
    questions = world[1][:8]
    plan = {q["question"]: (q["decomposition"], q["golden_answers"][0]) for q in questions}
    rows = [
        {"question": q["question"], "golden_answers": q["golden_answers"]}
        for q in questions
        for _ in range(2)  # GRPO: two samples per question
    ]
    model = SearchThenAnswer(tiny_tokenizer, plan)
    monkeypatch.setattr(trl_trainer, "HfGenerator", lambda *a, **k: model)
    codec = ChatCodec(tiny_tokenizer)
    factory = functools.partial(make_env, retriever=to_dict(retriever))
    rollout = trl_trainer.EpisodeRollout(
        rows,
        factory,
        codec,
        Limits(max_turns=6, max_new_tokens=64, max_response_tokens=4096),
        temperature=1.0,
        top_p=1.0,
    )
    rollout.bind([{trl_trainer.ROW_INDEX: i} for i in range(len(rows))])
    out = rollout([f"row {i}" for i in range(len(rows))], FakeTrainer(tiny_tokenizer))
    clear("rag_r1.search")

    assert len(counting.calls) == 1  # 16 trajectories x 2 queries: one retrieval in all
    assert counting.calls[0] == list(
        dict.fromkeys(q for q in itertools.chain(*(p[0][:2] for p in plan.values())))
    )
    assert [n for n, _ in model.calls] == [16, 16]  # two batched generate calls (two turns)
    assert all(stops == ("</search>", "</answer>") for _, stops in model.calls)
    for episode, ids, mask in zip(
        out["episode"], out["completion_ids"], out["env_mask"], strict=True
    ):
        assert episode.reward == 1.0 and episode.done and not episode.truncated
        masked = tiny_tokenizer.decode([t for t, m in zip(ids, mask, strict=True) if m == 0])
        trained = tiny_tokenizer.decode([t for t, m in zip(ids, mask, strict=True) if m == 1])
        assert masked.startswith("\n<information>\n{") and masked.endswith("\n</information>\n")
        assert "<information>" not in trained and "Doc 1:" not in trained
        assert trained.startswith("<think>two hops</think><search>")
        assert "</search><think>found it</think><answer>" in trained
        content = episode.messages[-1]["content"]  # one assistant message holding the block
        assert content.count("<information>") == 1 and episode.messages[-1]["role"] == "assistant"
