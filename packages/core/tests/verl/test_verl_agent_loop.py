"""Our agent loop against a scripted LLM server (a test double) and the toy counter environment.

The double stands in for verl's ``server_manager`` (vLLM / SGLang): it returns scripted
``TokenOutput``s and records what it was asked. The agent loop is built the way verl's
``AgentLoopWorker`` builds it (``hydra.utils.instantiate`` of the registry entry).
"""

from __future__ import annotations

import pytest

pytest.importorskip("verl.trainer")  # not tests/verl, which is on sys.path as a namespace

from lookup_env import (
    EXPECTED_REWARD,
    EXPECTED_STEP_REWARDS,
    EXPECTED_TEXTS,
    SCRIPT,
    LookupEnv,
    expected_tokens,
)
from verl_toys import CounterEnv

from aworld_rl_core.backends.verl.specs import SPEC_KEY, EpisodeSpec
from aworld_rl_core.engine import ChatCodec
from aworld_rl_core.refs import Ref
from aworld_rl_core.testing import verl_loop

LOGPROB = -0.5


class ScriptedServer:
    """Test double for verl's LLM server client: replies are scripted texts, in order."""

    def __init__(self, tokenizer, replies: list[str]):
        self.tokenizer = tokenizer
        self.replies = list(replies)
        self.calls: list[dict] = []

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        from verl.workers.rollout.replica import TokenOutput

        self.calls.append(
            {"request_id": request_id, "prompt_ids": list(prompt_ids), **sampling_params}
        )
        text = self.replies.pop(0)
        end = self.tokenizer.convert_tokens_to_ids("<|im_end|>")
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"] + [end]
        return TokenOutput(token_ids=ids, log_probs=[LOGPROB] * len(ids), stop_reason="completed")


def run_episode(loop, spec: EpisodeSpec):
    params = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "logprobs": True}
    raw_prompt = [{"role": "user", "content": "unused: the environment opens the episode"}]
    extra_info = {"index": 0, SPEC_KEY: spec.dumps()}
    return loop.loop.run_until_complete(
        loop.run(params, raw_prompt=raw_prompt, extra_info=extra_info)
    )


def segments(tokenizer, ids, mask):
    """Consecutive runs of equal mask value, decoded: [(mask, text), ...]."""
    runs: list[tuple[int, list[int]]] = []
    for token, m in zip(ids, mask, strict=True):
        if runs and runs[-1][0] == m:
            runs[-1][1].append(token)
        else:
            runs.append((m, [token]))
    return [(m, tokenizer.decode(tokens)) for m, tokens in runs]


@pytest.fixture
def agent_loop(qwen3_tokenizer, toy_registry):
    def build(replies, **kw):
        server = ScriptedServer(qwen3_tokenizer, replies)
        return verl_loop.agent_loop(qwen3_tokenizer, server, **kw), server

    return build


def test_episode_masks_environment_tokens_and_scores_the_episode(agent_loop, qwen3_tokenizer):
    loop, server = agent_loop(["add 1", "oops", "add 2"])
    closed = CounterEnv.closed_count
    spec = EpisodeSpec(task={"target": 3}, env=Ref("toy.counter"), max_new_tokens=32)
    out = run_episode(loop, spec)

    tok = qwen3_tokenizer
    got = segments(tok, out.response_ids, out.response_mask)
    assert [m for m, _ in got] == [1, 0, 1, 0, 1]
    assert [text for m, text in got if m == 1] == [
        "add 1<|im_end|>",
        "oops<|im_end|>",
        "add 2<|im_end|>",
    ]
    assert "value=1" in got[1][1] and "error: answer exactly 'add N'" in got[3][1]
    for _, text in got[1::2]:  # each observation ends by opening the next assistant turn
        assert text.startswith("\n<|im_start|>user\n") and "<|im_start|>assistant\n" in text
    assert tok.decode(out.prompt_ids).startswith(
        "<|im_start|>user\nBring the counter to 3. Say: add N<|im_end|>"
    )
    assert out.response_logprobs == [LOGPROB if m else 0.0 for m in out.response_mask]

    # episode reward: -0.1 format penalty + 1.0 on reaching the target; compute_score is skipped
    assert out.reward_score == pytest.approx(0.9)
    assert out.extra_fields["turn_scores"] == [0.0, -0.1, 1.0]
    info = out.extra_fields["reward_extra_info"]
    assert info["env/return"] == pytest.approx(0.9) and info["env/done"] == 1.0
    assert set(info) == {"score", "env/return", "env/done"}  # same keys in every episode
    assert out.extra_fields["env_info"] == {"value": 3.0}
    assert out.num_turns == 6  # 3 assistant + 2 observations + the prompt
    assert CounterEnv.closed_count == closed + 1

    # one request id for the whole episode; each turn sees the full context so far
    assert len({c["request_id"] for c in server.calls}) == 1
    assert server.calls[0]["prompt_ids"] == list(out.prompt_ids)
    full = list(out.prompt_ids) + list(out.response_ids)
    for call in server.calls[1:]:
        assert full[: len(call["prompt_ids"])] == call["prompt_ids"]
    assert [c["max_tokens"] for c in server.calls] == [32, 32, 32]  # per-turn cap


def test_the_scripted_episode_matches_the_other_drivers(agent_loop, qwen3_tokenizer):
    """The episode of ``tests/engine/test_drivers.py``: stop strings through vLLM's ``stop``,
    an inline observation masked 0, a new user turn, the same tokens, texts and rewards."""
    loop, server = agent_loop(list(SCRIPT))
    spec = EpisodeSpec(task={}, env=Ref("lookup_env:LookupEnv"), max_new_tokens=32)
    out = run_episode(loop, spec)
    ids, mask = expected_tokens(ChatCodec(qwen3_tokenizer))
    assert (list(out.response_ids), list(out.response_mask)) == (ids, mask)
    assert LookupEnv.played[-1] == EXPECTED_TEXTS
    assert out.reward_score == pytest.approx(EXPECTED_REWARD)
    assert out.extra_fields["turn_scores"] == pytest.approx(EXPECTED_STEP_REWARDS)
    assert [c["stop"] for c in server.calls] == [list(LookupEnv.stop)] * 3
    assert all(c["include_stop_str_in_output"] for c in server.calls)
    # the turn after the inline result continues the same assistant turn: no new header
    continued = qwen3_tokenizer.decode(server.calls[1]["prompt_ids"])
    assert continued.endswith("<lookup>capital of France</lookup><result>Paris</result>")


def test_turn_limit_and_reward_functions(agent_loop, qwen3_tokenizer):
    loop, server = agent_loop(["oops", "add 1", "add 1"], max_turns=2)
    spec = EpisodeSpec(
        task={"target": 3, "limit": 1},
        env=Ref("toy.counter"),
        rewards=(Ref("toy.brevity"), Ref("verl_toys:episode_shape")),
        weights=(0.5, 0.01),
    )
    out = run_episode(loop, spec)
    assert len(server.calls) == 2 and server.replies == ["add 1"]
    got = segments(qwen3_tokenizer, out.response_ids, out.response_mask)
    assert [m for m, _ in got] == [1, 0, 1]
    # not done: env return -0.1 (one format error); brevity on the last message "add 1"
    # (2 words, limit 1) = 0.9; episode_shape = -0.1 + 10 * 3 messages (assistant, user, assistant)
    info = out.extra_fields["reward_extra_info"]
    assert info["env/done"] == 0.0 and info["env/return"] == pytest.approx(-0.1)
    assert info["reward/toy.brevity"] == pytest.approx(0.9)
    assert info["reward/episode_shape"] == pytest.approx(29.9)
    assert out.reward_score == pytest.approx(-0.1 + 0.5 * 0.9 + 0.01 * 29.9)


def test_response_budget_caps_generation(agent_loop, qwen3_tokenizer):
    # "add 1<|im_end|>" is 4 tokens, the observation turn 12: the 2nd turn may use 24 - 16 = 8
    loop, server = agent_loop(["add 1", "add 2"], response_length=24)
    out = run_episode(loop, EpisodeSpec(task={"target": 3}, env=Ref("toy.counter")))
    assert [c["max_tokens"] for c in server.calls] == [24, 8]
    assert len(out.response_ids) == len(out.response_mask) == 4 + 12 + 4
    assert out.reward_score == 1.0

    # an observation that does not fit ends the episode before it
    loop, server = agent_loop(["add 1", "add 2"], response_length=10)
    out = run_episode(loop, EpisodeSpec(task={"target": 3}, env=Ref("toy.counter")))
    assert len(server.calls) == 1 and out.response_mask == [1, 1, 1, 1]
    assert qwen3_tokenizer.decode(out.response_ids) == "add 1<|im_end|>"
    assert out.reward_score == 0.0


def test_task_tools_are_rendered_into_the_prompt(agent_loop, qwen3_tokenizer):
    tool = {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add to the counter.",
            "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}},
        },
    }
    loop, _ = agent_loop(["add 1"])
    out = run_episode(
        loop, EpisodeSpec(task={"target": 1, "tools": [tool]}, env=Ref("toy.counter"))
    )
    prompt = qwen3_tokenizer.decode(out.prompt_ids)
    assert "<tools>" in prompt and '"name": "add"' in prompt
    assert prompt.rstrip().endswith("<|im_start|>assistant")


def test_rows_without_an_environment_are_rejected(agent_loop):
    loop, _ = agent_loop([])
    with pytest.raises(ValueError, match="without an environment spec"):
        loop.loop.run_until_complete(loop.run({}, raw_prompt=[], extra_info={"index": 0}))


class PerRequestServer(ScriptedServer):
    """Test double serving several episodes at once: each request id gets its own script."""

    def __init__(self, tokenizer, replies: list[str]):
        super().__init__(tokenizer, [])
        self.script = replies
        self.by_request: dict[str, list[str]] = {}

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        self.replies = self.by_request.setdefault(request_id, list(self.script))
        return await super().generate(
            request_id, prompt_ids=prompt_ids, sampling_params=sampling_params
        )


@pytest.fixture(scope="module")
def tiny_model_path(tmp_path_factory):
    """A tiny random Qwen3 with its tokenizer on disk (verl's workers load the model config)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AWORLD_RL_HOME", str(tmp_path_factory.mktemp("aworld_home")))
        from aworld_rl_core.models import tiny_model_dir

        return tiny_model_dir("qwen3")


def run_worker(verl_compose, model_path, specs, replies, *, registry=None):
    """Run verl's own AgentLoopWorker over rows carrying ``specs`` (the scripted server)."""
    return verl_loop.run_worker(
        model_path, specs, lambda tokenizer: PerRequestServer(tokenizer, replies)
    )


def test_verl_worker_batches_our_episodes(verl_compose, toy_registry, tiny_model_path):
    """verl's own AgentLoopWorker runs our loop per row and builds the training batch."""
    specs = [EpisodeSpec(task={"target": t}, env=Ref("toy.counter")) for t in (1, 2)]
    out = run_worker(verl_compose, tiny_model_path, specs, ["add 1", "add 1", "add 1"])

    mask = out.batch["response_mask"]
    assert mask.shape == (2, 64)
    # target 1: one turn "add 1<|im_end|>" (4 tokens); target 2: two turns and the observation
    assert mask.sum(-1).tolist() == [4, 8]
    assert mask[0, :4].tolist() == [1, 1, 1, 1] and mask[0, 4:].sum() == 0
    assert mask[1, :4].tolist() == [1, 1, 1, 1] and mask[1, 4:16].sum() == 0  # observation
    assert mask[1, 16:20].tolist() == [1, 1, 1, 1]
    # the episode reward sits on the last response token; compute_score was not needed
    scores = out.batch["rm_scores"]
    assert scores[0, 3] == 1.0 and scores[1, 19] == 1.0 and scores.sum().item() == 2.0
    assert out.non_tensor_batch["__num_turns__"].tolist() == [2, 4]
    assert out.non_tensor_batch["env/return"].tolist() == [1.0, 1.0]
    assert [e["value"] for e in out.non_tensor_batch["env_info"]] == [1.0, 2.0]
    assert out.batch["rollout_log_probs"][1, :4].tolist() == [LOGPROB] * 4


def test_a_worker_steps_its_concurrent_episodes_together(verl_compose, tiny_model_path):
    """Eight episodes in one verl worker: each turn, one step_many (one service request)."""
    from verl_toys import ServiceEnv

    # a wide window: on a loaded CI machine every episode's turn still lands in one batch
    spec = EpisodeSpec(task={}, env=Ref("verl_toys:ServiceEnv"), step_window_s=0.5)
    ServiceEnv.requests.clear()
    out = run_worker(verl_compose, tiny_model_path, [spec] * 8, ["one", "two", "three"])
    assert ServiceEnv.requests == [8, 8, 8]
    assert out.batch["rm_scores"].sum().item() == 8.0
