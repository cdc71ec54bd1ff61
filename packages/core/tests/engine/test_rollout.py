"""The episode engine at the token level (scripted generation, no model) and the toy game."""

from __future__ import annotations

import functools

import pytest
from scripted_generation import ScriptedGenerator

from aworld_rl_core.engine import ChatCodec, Limits, Rollout, run_batched
from aworld_rl_core.environment import Step
from aworld_rl_core.envs.toy import LowercaseEnv, lowercase_reward, lowercase_score, toy_tasks
from aworld_rl_core.models.generate import generate_turns
from aworld_rl_core.testing.contracts import heavy_modules_after


def run_episodes(envs, generate, codec, limits, *, batch_size=None):
    """The trl driver's loop with a scripted generator."""
    rollout = Rollout(envs, limits, codec=codec)
    return run_batched(rollout, functools.partial(generate_turns, generate), batch_size=batch_size)


@pytest.fixture(scope="module")
def codec():
    from aworld_rl_core.models import tiny_tokenizer

    return ChatCodec(tiny_tokenizer())


def test_codec_renders_prompt_and_observation_suffix(codec):
    tok = codec.tokenizer
    prompt = codec.prompt_ids([{"role": "user", "content": "hi"}])
    assert tok.decode(prompt) == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    user = codec.observation_ids([{"role": "user", "content": "again"}])
    assert tok.decode(user) == "\n<|im_start|>user\nagain<|im_end|>\n<|im_start|>assistant\n"
    tool = codec.observation_ids([{"role": "tool", "content": "42"}])
    assert tok.decode(tool) == (
        "\n<|im_start|>user\n<tool_response>\n42\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n"
    )


def test_codec_decodes_model_text_keeping_tool_tags(codec):
    text = '<think>hm</think><tool_call>{"a": 1}</tool_call>'
    ids = codec.tokenizer.encode(text, add_special_tokens=False)
    assert codec.decode([*ids, codec.eos_id]) == text  # only the closing end-of-turn is dropped


def test_two_turn_episode_tokens_and_env_mask(codec):
    tok = codec.tokenizer
    gen = ScriptedGenerator(codec, ["hello there", "Bye"])
    limits = Limits(max_turns=4, max_new_tokens=16, max_response_tokens=256)
    [episode] = run_episodes([LowercaseEnv({"topic": "rain"}, turns=2)], gen, codec, limits)

    first, second = gen.ids
    feedback = codec.observation_ids([{"role": "user", "content": "Score 1.00. Again."}])
    assert episode.completion_ids == first + feedback + second
    assert episode.loss_mask == [1] * len(first) + [0] * len(feedback) + [1] * len(second)
    assert tok.decode(episode.prompt_ids).endswith(
        "Say something about rain.<|im_end|>\n<|im_start|>assistant\n"
    )
    assert [m["role"] for m in episode.completion] == ["assistant", "user", "assistant"]
    assert episode.completion[2]["content"] == "Bye"
    assert episode.reward == pytest.approx((1.0 + 2 / 3) / 2)  # "Bye": 2 of 3 chars lowercase
    assert (episode.turns, episode.done, episode.truncated) == (2, True, False)
    assert episode.logprobs is None  # the scripted generator reports none


def test_cut_off_turn_is_closed_with_a_masked_eos(codec):
    gen = ScriptedGenerator(codec, ["abc def ghi", "x"], close=False)
    limits = Limits(max_turns=2, max_new_tokens=2, max_response_tokens=256)
    [episode] = run_episodes([LowercaseEnv(turns=2)], gen, codec, limits)

    first = gen.ids[0][:2]  # the turn budget cuts the reply after 2 tokens
    feedback = codec.observation_ids(
        [{"role": "user", "content": f"Score {lowercase_score(codec.decode(first)):.2f}. Again."}]
    )
    n = len(first)
    assert episode.completion_ids[: n + 1 + len(feedback)] == [*first, codec.eos_id, *feedback]
    assert episode.loss_mask[: n + 1 + len(feedback)] == [1] * n + [0] * (1 + len(feedback))


def test_batched_and_sequential_rollouts_agree(codec):
    limits = Limits(max_turns=3, max_new_tokens=8, max_response_tokens=256)
    tasks = toy_tasks()[:3]
    batched = ScriptedGenerator(codec, ["one", "two", "three"])
    sequential = ScriptedGenerator(codec, ["one", "two", "three"])
    a = run_episodes([LowercaseEnv(t, turns=3) for t in tasks], batched, codec, limits)
    b = run_episodes(
        [LowercaseEnv(t, turns=3) for t in tasks], sequential, codec, limits, batch_size=1
    )
    assert [e.completion_ids for e in a] == [e.completion_ids for e in b]
    assert [e.loss_mask for e in a] == [e.loss_mask for e in b]
    assert [size for size, _ in batched.calls] == [3, 3, 3]  # one call per turn
    assert [size for size, _ in sequential.calls] == [1] * 9  # one call per episode turn


def test_response_budget_ends_the_episode(codec):
    gen = ScriptedGenerator(codec, ["alpha beta", "gamma delta", "x"])
    first_turn = len(gen.ids[0])
    limits = Limits(max_turns=3, max_new_tokens=16, max_response_tokens=first_turn + 3)
    [episode] = run_episodes([LowercaseEnv(turns=3)], gen, codec, limits)
    # the feedback does not fit in the 3 tokens left: the episode stops after the first turn
    assert episode.completion_ids == gen.ids[0]
    assert (episode.turns, episode.truncated) == (1, True)


class _SilentEnv:
    def reset(self):
        return [{"role": "user", "content": "go"}]

    def step(self, model_text):
        return Step(observation=[], done=False)

    def close(self):
        pass


def test_unfinished_step_without_observation_is_an_error(codec):
    gen = ScriptedGenerator(codec, ["a", "b"])
    with pytest.raises(ValueError, match="no observation"):
        run_episodes([_SilentEnv()], gen, codec, Limits(max_turns=2, max_new_tokens=8))


def test_lowercase_game_scores_and_rewards():
    assert lowercase_score("ab C1") == pytest.approx(3 / 5)
    assert lowercase_score("") == 0.0
    env = LowercaseEnv({"topic": "bread"}, turns=2)
    opening = env.reset()
    assert opening[-1] == {"role": "user", "content": "Say something about bread."}
    first = env.step("Hi there")  # 7 of 8 characters
    assert first.reward == pytest.approx(7 / 8 / 2)
    assert not first.done and first.observation[0]["content"] == "Score 0.88. Again."
    last = env.step("ok")
    assert last.done and last.observation == [] and last.reward == pytest.approx(0.5)
    assert last.info["mean_score"] == pytest.approx((7 / 8 + 1) / 2)
    messages = [
        {"role": "assistant", "content": "Hi there"},
        {"role": "user", "content": "IGNORED"},
        {"role": "assistant", "content": "ok"},
    ]
    assert lowercase_reward([messages, "AB", []]) == pytest.approx([(7 / 8 + 1) / 2, 0.0, 0.0])


def test_toy_tasks_are_deterministic():
    assert toy_tasks() == toy_tasks()
    assert len(toy_tasks()) == 64 and all("topic" in row for row in toy_tasks())


def test_backend_recipe_and_toy_modules_import_nothing_heavy():
    code = (
        "import aworld_rl_core.backends.trl_grpo, aworld_rl_core.engine\n"
        "import aworld_rl_core.models.generate, aworld_rl_core.envs.toy\n"
        "import aworld_rl_core.recipes.grpo\n"
    )
    assert heavy_modules_after(code, ("torch", "transformers", "trl", "datasets")) == []
