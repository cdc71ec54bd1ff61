"""The drivers of the episode engine play the same scripted episode identically.

The trl driver (``EpisodeRollout``, TRL's ``rollout_func``) and ``play`` over an OpenAI client
(the scripted server answers as vLLM does with ``stop``) must give the same messages, tokens,
loss mask (inline observations masked 0) and rewards; the verl driver is held to the same
expectation in ``tests/verl/test_verl_agent_loop.py``. With 64 episodes, a service behind the
environments sees one request per turn.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
from types import SimpleNamespace

import pytest
from lookup_env import (
    EXPECTED_MESSAGES,
    EXPECTED_REWARD,
    EXPECTED_STEP_REWARDS,
    EXPECTED_TEXTS,
    SCRIPT,
    LookupEnv,
    expected_tokens,
    scripted_ids,
    vllm_reply,
)

from aworld_rl_core.engine import ChatCodec, Limits, Output, Rollout, play, play_many, run_batched
from aworld_rl_core.environment import Step
from aworld_rl_core.llm import Completion, OpenAIClient
from aworld_rl_core.llm.scripted_server import ScriptedLLMServer
from aworld_rl_core.models.generate import generate_turns
from aworld_rl_core.resources import shared

LIMITS = Limits(max_turns=5, max_new_tokens=32, max_response_tokens=256)


@pytest.fixture(scope="module")
def codec(tiny_tokenizer):
    return ChatCodec(tiny_tokenizer)


class ScriptedModel:
    """Test double with ``HfGenerator``'s call shape: turn k of an episode gets reply k (tokens,
    then junk past the end, as a padded batch has); episodes are told apart by their opening
    message (the prompt through its first end-of-turn token)."""

    def __init__(self, replies: list[list[int]], eos_id: int) -> None:
        self.replies, self.eos_id = replies, eos_id
        self.turns: dict[tuple[int, ...], int] = {}
        self.calls: list[tuple[int, int, tuple[str, ...]]] = []

    def __call__(self, prompts, max_new_tokens, *, stop_strings=()):
        self.calls.append((len(prompts), max_new_tokens, tuple(stop_strings)))
        out = []
        for prompt in prompts:
            key = tuple(prompt[: prompt.index(self.eos_id) + 1])
            turn = self.turns.get(key, 0)
            self.turns[key] = turn + 1
            out.append(([*self.replies[turn], 7, 7], None))
        return out


class FakeTrainer:
    """Test double for the parts of a ``GRPOTrainer`` the rollout function touches."""

    def __init__(self, tokenizer) -> None:
        self.processing_class = tokenizer
        self.model = None
        self.accelerator = SimpleNamespace(unwrap_model=lambda model: model)
        self.metrics: dict[str, float] = {}

    def _log_metric(self, key: str, value: float) -> None:
        self.metrics[key] = value


def trl_driver(rows, env_factory, model, codec, monkeypatch):
    """Run TRL's ``rollout_func`` of the trl backend with ``model`` as the generator."""
    pytest.importorskip("trl")
    from aworld_rl_core.backends import trl_trainer

    monkeypatch.setattr(trl_trainer, "HfGenerator", lambda *args, **kwargs: model)
    rollout = trl_trainer.EpisodeRollout(
        rows, env_factory, codec, LIMITS, temperature=1.0, top_p=1.0
    )
    rollout.bind([{trl_trainer.ROW_INDEX: i} for i in range(len(rows))])
    trainer = FakeTrainer(codec.tokenizer)
    return rollout([f"row {i}" for i in range(len(rows))], trainer), trainer


def test_trl_driver_plays_the_scripted_episode(codec, monkeypatch):
    model = ScriptedModel(scripted_ids(codec.tokenizer), codec.eos_id)
    out, trainer = trl_driver([{}], LookupEnv, model, codec, monkeypatch)
    ids, mask = expected_tokens(codec)
    [episode] = out["episode"]
    assert out["completion_ids"] == [ids]
    assert out["env_mask"] == [mask]  # inline result and the hint turn are masked 0
    assert episode.messages == EXPECTED_MESSAGES
    assert LookupEnv.played[-1] == EXPECTED_TEXTS  # what the environment read, turn by turn
    assert episode.reward == pytest.approx(EXPECTED_REWARD)
    assert episode.step_rewards == pytest.approx(EXPECTED_STEP_REWARDS)
    assert (episode.turns, episode.done, episode.truncated) == (3, True, False)
    # every turn generated with the environment's stop strings (HF stopping criteria)
    assert [c[2] for c in model.calls] == [LookupEnv.stop] * 3
    assert trainer.metrics["episode/turns"] == 3.0
    assert trainer.metrics["episode/answered"] == 1.0  # the environment's numeric info, averaged


def test_play_plays_the_scripted_episode_over_an_openai_client(codec):
    bodies, replies = [], itertools.cycle(SCRIPT)

    def reply(body):
        bodies.append(body)
        return vllm_reply(body, next(replies))

    with ScriptedLLMServer(reply) as server:
        client = OpenAIClient(base_url=server.base_url, model=server.model, api_key_env=None)
        episode = asyncio.run(play(client, LookupEnv(), limits=LIMITS, codec=codec))
        assert LookupEnv.played[-1] == EXPECTED_TEXTS
        again = asyncio.run(play(client, LookupEnv(), sampling={"temperature": 0.0}))
    ids, mask = expected_tokens(codec)
    assert episode.messages == EXPECTED_MESSAGES  # stop strings re-appended from stop_reason
    assert (episode.completion_ids, episode.loss_mask) == (ids, mask)
    assert episode.reward == pytest.approx(EXPECTED_REWARD)
    assert episode.step_rewards == pytest.approx(EXPECTED_STEP_REWARDS)
    assert (episode.turns, episode.done, episode.truncated) == (3, True, False)
    assert [b["stop"] for b in bodies[:3]] == [list(LookupEnv.stop)] * 3
    # after the inline result the open assistant message is continued, not a new turn
    assert bodies[1]["continue_final_message"] is True
    assert bodies[1]["add_generation_prompt"] is False
    assert bodies[1]["messages"][-1] == {
        "role": "assistant",
        "content": "<lookup>capital of France</lookup><result>Paris</result>",
    }
    assert "continue_final_message" not in bodies[2]
    assert [b["max_tokens"] for b in bodies[:3]] == [32, 32, 32]
    # without a codec: the same conversation, no tokens, the client's own turn length
    assert again.messages == EXPECTED_MESSAGES and again.completion_ids == []
    assert "max_tokens" not in bodies[3] and bodies[3]["temperature"] == 0.0


def test_the_engine_ends_turns_at_the_budget_and_the_turn_cap(codec):
    # a 10-token response budget: the first turn is cut to fit, the episode ends truncated
    model = ScriptedModel(scripted_ids(codec.tokenizer), codec.eos_id)
    tight = Limits(max_turns=5, max_new_tokens=32, max_response_tokens=10)
    rollout = Rollout([LookupEnv()], tight, codec=codec)
    [episode] = run_batched(rollout, functools.partial(generate_turns, model))
    assert len(episode.completion_ids) <= 10 and episode.truncated and episode.turns == 1
    assert model.calls[0][1] == 10
    # one turn allowed: the inline result is not appended, the episode is truncated
    model = ScriptedModel(scripted_ids(codec.tokenizer), codec.eos_id)
    rollout = Rollout([LookupEnv()], Limits(max_turns=1, max_new_tokens=32), codec=codec)
    [episode] = run_batched(rollout, functools.partial(generate_turns, model))
    assert episode.messages[-1]["content"] == "<lookup>capital of France</lookup>"
    assert (episode.turns, episode.truncated, episode.reward) == (1, True, pytest.approx(0.1))


class _Both:
    def reset(self):
        return [{"role": "user", "content": "go"}]

    def step(self, model_text):
        return Step([{"role": "user", "content": "x"}], inline="y")

    def close(self):
        pass


def test_a_step_with_both_observation_kinds_is_an_error(codec):
    model = ScriptedModel(scripted_ids(codec.tokenizer), codec.eos_id)
    rollout = Rollout([_Both()], LIMITS, codec=codec)
    with pytest.raises(ValueError, match="both an observation and inline text"):
        run_batched(rollout, functools.partial(generate_turns, model))


# ------------------------------------------------------------------ one request per turn


class CountingService:
    """Test double for a retriever behind environments: counts requests and their sizes."""

    def __init__(self) -> None:
        self.requests: list[int] = []

    def answer(self, queries: list[str]) -> list[str]:
        self.requests.append(len(queries))
        return [q.upper() for q in queries]


class ServiceEnv:
    """Three turns; each model text is sent to the service, all episodes of a turn at once."""

    def __init__(self, row, *, service: str = "counting") -> None:
        self.topic = row["topic"]
        self.service = shared("test.service", {"name": service}, CountingService)
        self.turn = 0

    def reset(self):
        return [{"role": "user", "content": f"Talk about {self.topic}."}]

    @classmethod
    def step_many(cls, envs, texts):
        answers = envs[0].service.answer(list(texts))
        return [env._after(answer) for env, answer in zip(envs, answers, strict=True)]

    def step(self, model_text):  # pragma: no cover - step_many is always used
        raise AssertionError("the engine must step these environments together")

    def _after(self, answer: str) -> Step:
        self.turn += 1
        if self.turn == 3:
            return Step(reward=1.0, done=True)
        return Step([{"role": "user", "content": answer}])

    def close(self):
        pass


ROWS = [{"topic": f"topic {i}"} for i in range(64)]


def test_64_episodes_one_service_request_per_turn_in_the_trl_driver(codec, monkeypatch):
    service = shared("test.service", {"name": "trl"}, CountingService)
    replies = [[*codec.encode(t), codec.eos_id] for t in ("one", "two", "three")]
    model = ScriptedModel(replies, codec.eos_id)
    factory = functools.partial(ServiceEnv, service="trl")
    out, _ = trl_driver(ROWS, factory, model, codec, monkeypatch)
    assert service.requests == [64, 64, 64]
    assert [c[0] for c in model.calls] == [64, 64, 64]  # one batched generate per turn too
    assert all(e.reward == 1.0 and e.turns == 3 for e in out["episode"])


def test_64_episodes_one_service_request_per_turn_in_play_many():
    service = shared("test.service", {"name": "play"}, CountingService)

    class Client:  # test double: an LLM client answering with the number of its turn
        async def chat(self, messages, **sampling):
            turn = sum(m["role"] == "assistant" for m in messages)
            return Completion(text=["one", "two", "three"][turn], finish_reason="stop")

    envs = [ServiceEnv(row, service="play") for row in ROWS]
    episodes = asyncio.run(play_many(Client(), envs))
    assert service.requests == [64, 64, 64]
    assert [e.completion[-1]["content"] for e in episodes] == ["three"] * 64
    # generation chunked into batches of 8: still one service request per turn
    service.requests.clear()
    calls = []

    def generate(turns):
        calls.append(len(turns))
        said = [sum(m["role"] == "assistant" for m in t.messages) for t in turns]
        return [Output(text=["one", "two", "three"][n], finish="stop") for n in said]

    rollout = Rollout([ServiceEnv(row, service="play") for row in ROWS])
    run_batched(rollout, generate, batch_size=8)
    assert service.requests == [64, 64, 64] and calls == [8] * 24


def test_trl_driver_plays_validation_episodes_with_their_own_limits(codec, monkeypatch):
    pytest.importorskip("trl")
    from aworld_rl_core.backends import trl_trainer

    def played(limits):
        model = ScriptedModel(scripted_ids(codec.tokenizer), codec.eos_id)
        monkeypatch.setattr(trl_trainer, "HfGenerator", lambda *args, **kwargs: model)
        training = Limits(max_turns=2, max_new_tokens=32, max_response_tokens=256)
        rollout = trl_trainer.EpisodeRollout(
            [{}], LookupEnv, codec, training, temperature=1.0, top_p=1.0
        )
        [episode] = rollout.play(None, codec.tokenizer, [{}], temperature=0.0, limits=limits)
        return episode.turns, episode.done, episode.truncated

    assert played(None) == (2, True, True)  # the rollout's (training) limits cut it
    assert played(LIMITS) == (3, True, False)  # validation's own limits: the whole episode
