"""Multi-query search episodes in verl's own ``AgentLoopWorker`` against the synthetic world's
in-process MiniLM index (the index ``rag_r1.train --preset tiny-cpu`` searches), as the trl path
is tested in ``tests/test_rollouts.py``: every ``<information>`` block is masked 0 in
``response_mask`` and only there, and all concurrent episodes' searches of a turn go to the
retriever as one request.

The LLM server is a test double that plays the scripted searcher (``aworld_rl_rag_r1.scripted``)
on the token ids verl sends it. Runs where verl is installed (``nox -s tests_verl``).
"""

import json

import pytest

pytest.importorskip("verl.trainer")

from aworld_rl_core.backends.verl.specs import EpisodeSpec
from aworld_rl_core.config import to_dict
from aworld_rl_core.refs import Ref
from aworld_rl_core.resources import clear, shared
from aworld_rl_core.testing.verl_loop import run_worker
from aworld_rl_rag_r1.observations import CLOSE, OPEN
from aworld_rl_rag_r1.retrieval import RetrieverConfig
from aworld_rl_rag_r1.retrievers import load_retriever
from aworld_rl_rag_r1.scripted import ScriptedSearcher, plan
from aworld_rl_rag_r1.search import BatchedSearch
from aworld_rl_rag_r1.testing import CountingRetriever

LOGPROB = -0.25
USER, ASSISTANT, END = "<|im_start|>user\n", "<|im_start|>assistant\n", "<|im_end|>"


class ScriptedServer:
    """verl's server manager as a test double: the scripted searcher's next step for the
    episode the prompt ids hold (the user turn, then the assistant's text with the retrieved
    blocks inline)."""

    def __init__(self, tokenizer):
        self.tokenizer, self.agent, self.calls = tokenizer, ScriptedSearcher("mq", 3), []

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        from verl.workers.rollout.replica import TokenOutput

        self.calls.append((request_id, tuple(sampling_params["stop"])))
        text = self.tokenizer.decode(prompt_ids)
        user = text.split(USER, 1)[1].split(END, 1)[0]
        done = text.rsplit(ASSISTANT, 1)[1]
        messages = [{"role": "user", "content": user}]
        if done.strip():
            messages.append({"role": "assistant", "content": done})
        ids = self.tokenizer(self.agent.reply(messages), add_special_tokens=False)["input_ids"]
        return TokenOutput(token_ids=ids, log_probs=[LOGPROB] * len(ids), stop_reason="completed")


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    """A tiny random Qwen3 with its tokenizer on disk (verl's worker loads both)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AWORLD_RL_HOME", str(tmp_path_factory.mktemp("aworld_home")))
        from aworld_rl_core.models import tiny_model_dir

        return tiny_model_dir("qwen3")


def world_city(question):
    """The bridge city of a birth-country question (its second sub-question names it)."""
    return question["decomposition"][1].removeprefix("Which country is ").removesuffix(" in?")


def runs(ids, mask):
    """Consecutive runs of equal mask value: [(mask, ids), ...]."""
    out: list[tuple[int, list[int]]] = []
    for token, m in zip(ids, mask, strict=True):
        if out and out[-1][0] == m:
            out[-1][1].append(token)
        else:
            out.append((m, [token]))
    return out


def test_multi_query_episodes_in_verl_worker(world, minilm_index, model_path):
    bridge = [q for q in world[1] if "country" in q["question"]][:2]
    compare = [q for q in world[1] if "earlier" in q["question"]][:2]
    questions = [*bridge, *compare]
    assert len(questions) == 4 and all(plan(q["question"]) for q in questions)
    retriever = RetrieverConfig(backend="local", index=str(minilm_index), cache=False)
    clear("rag_r1.search")
    counting = CountingRetriever(load_retriever(minilm_index))
    shared("rag_r1.search", to_dict(retriever), lambda: BatchedSearch(counting, topk=3))
    env = Ref("rag_r1.search", kwargs={"retriever": to_dict(retriever)})
    specs = [
        EpisodeSpec(
            task={"question": q["question"], "golden_answers": q["golden_answers"]},
            env=env,
            max_new_tokens=128,
            step_window_s=1.0,  # wide: on a loaded machine each turn's searches still meet
        )
        for q in questions
    ]
    servers = []

    def server(tokenizer):
        servers.append(ScriptedServer(tokenizer))
        return servers[0]

    try:
        out = run_worker(
            model_path, specs, server, max_turns=6, response_length=2048, max_prompt_length=512
        )
    finally:
        clear("rag_r1.search")
    tokenizer = servers[0].tokenizer

    # turn 1: all four episodes search (a bridge question's first hop; a comparison's two
    # birth years in one multi-query search); turn 2: only the bridge questions search again
    # (the country of the city the first hop found), the comparisons answer
    assert len(counting.calls) == 2
    first = [q["decomposition"][0] for q in bridge] + [
        sub for q in compare for sub in q["decomposition"][:2]
    ]
    assert sorted(counting.calls[0]) == sorted(dict.fromkeys(first))
    second = sorted(f"Which country is {world_city(q)} in?" for q in bridge)
    assert sorted(counting.calls[1]) == second
    stops = {stop for _, stop in servers[0].calls}
    assert stops == {("</search>", "</answer>")}
    assert len(servers[0].calls) == 2 * 3 + 2 * 2  # bridge: 3 turns each, comparison: 2

    mask = out.batch["response_mask"]
    ids = out.batch["responses"]
    logprobs = out.batch["rollout_log_probs"]
    searches = [2, 2, 1, 1]
    for i in range(len(questions)):
        n = int(out.batch["attention_mask"][i, -ids.shape[1] :].sum())
        row_ids, row_mask = ids[i, :n].tolist(), mask[i, :n].tolist()
        pieces = runs(row_ids, row_mask)
        masked = [tokenizer.decode(t) for m, t in pieces if m == 0]
        trained = "".join(tokenizer.decode(t) for m, t in pieces if m == 1)
        # model text and retrieved blocks alternate: one masked block per search, nothing else
        assert [m for m, _ in pieces] == [1, 0] * searches[i] + [1]
        for block in masked:
            assert block.startswith(OPEN) and block.endswith(CLOSE)
            payload = json.loads(block[len(OPEN) : -len(CLOSE)])
            assert len(payload["documents"]) == len(payload["query"])
        assert "<information>" not in trained and "Doc 1:" not in trained
        assert trained.count("<search>") == searches[i] and trained.endswith("</answer>")
        assert logprobs[i, :n].tolist() == [LOGPROB if m else 0.0 for m in row_mask]
        assert out.non_tensor_batch["env_info"][i]["searches"] == float(searches[i])
        assert out.batch["rm_scores"][i].sum().item() == 1.0  # EM of the right answer
    assert (
        json.loads(
            tokenizer.decode(runs(ids[2].tolist(), mask[2].tolist())[1][1])[len(OPEN) : -len(CLOSE)]
        )["query"]
        == compare[0]["decomposition"][:2]
    )
    assert out.batch["rm_scores"].sum().item() == 4.0  # every episode answered correctly
