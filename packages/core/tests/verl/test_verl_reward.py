"""The ``compute_score`` adapter gives what our reward functions give, also through verl."""

from __future__ import annotations

import pytest

pytest.importorskip("verl.trainer")  # not tests/verl, which is on sys.path as a namespace

from verl_toys import brevity, exact_answer

from aworld_rl_core.backends.verl.reward import compute_score
from aworld_rl_core.backends.verl.specs import SPEC_KEY, EpisodeSpec, Ref
from aworld_rl_core.errors import ConfigError

SPEC = EpisodeSpec(
    task={"prompt": [{"role": "user", "content": "6*7?"}], "ground_truth": "42", "limit": 1},
    rewards=(Ref("toy.exact"), Ref("verl_toys:brevity")),
    weights=(2.0, 0.5),
)


@pytest.mark.parametrize("answer", ["42", "41", "it is 42 for sure"])
def test_adapter_matches_our_rewards(toy_registry, answer):
    completion = [[{"role": "assistant", "content": answer}]]
    exact = exact_answer(completions=completion, ground_truth=["42"])[0]
    short = brevity(completions=completion, limit=[1])[0]
    got = compute_score("toy", answer, "42", extra_info={"index": 0, SPEC_KEY: SPEC.dumps()})
    assert got == {
        "score": pytest.approx(2.0 * exact + 0.5 * short),
        "reward/toy.exact": exact,
        "reward/brevity": short,
    }


def test_reward_kwargs_override_the_row_and_text_completions(toy_registry):
    got = compute_score(
        "toy", " 42 ", "42", extra_info={}, rewards=["toy.exact"], completion_format="text"
    )
    assert got == {"score": 1.0, "reward/toy.exact": 1.0}  # ground truth comes from verl's column


def test_no_reward_is_a_clear_error(toy_registry):
    with pytest.raises(ConfigError, match="no reward for data source 'toy'"):
        compute_score("toy", "42", "42", extra_info={"index": 0})


def test_verl_reward_manager_scores_a_rollout_with_our_adapter(
    verl_compose, qwen3_tokenizer, toy_registry
):
    import numpy as np
    import torch
    from verl import DataProto
    from verl.trainer.ppo.reward import load_reward_manager

    from aworld_rl_core.backends.verl.launcher import LaunchPaths, build_overrides
    from aworld_rl_core.models.config import ModelConfig
    from aworld_rl_core.trainer_config import TrainerConfig

    paths = LaunchPaths(train_file="t.parquet", val_file="v.parquet", checkpoint_dir="ckpt")
    overrides = build_overrides(
        ModelConfig(name_or_path="m"),
        TrainerConfig(backend="verl", batch_size=1),
        paths,
        n_rows=1,
        uses_env=False,
    )
    manager = load_reward_manager(verl_compose(overrides), qwen3_tokenizer)
    tok = qwen3_tokenizer
    prompt = torch.tensor(tok("6*7?")["input_ids"])
    response = torch.tensor([*tok("42")["input_ids"], tok.convert_tokens_to_ids("<|im_end|>")])
    pad = torch.full((3,), tok.pad_token_id)
    responses = torch.cat([response, pad])
    data = DataProto.from_dict(
        tensors={
            "prompts": prompt[None],
            "responses": responses[None],
            "attention_mask": torch.cat(
                [torch.ones_like(prompt), torch.ones_like(response), torch.zeros_like(pad)]
            )[None],
        },
        non_tensors={
            "data_source": np.array(["toy"], dtype=object),
            "reward_model": np.array([{"ground_truth": "42"}], dtype=object),
            "extra_info": np.array([{"index": 0, SPEC_KEY: SPEC.dumps()}], dtype=object),
        },
    )
    out = manager.loop.run_until_complete(manager.run_single(data))
    # "42" (special tokens skipped): exact 1.0, brevity 1.0 -> 2.0 * 1 + 0.5 * 1
    assert out["reward_score"] == pytest.approx(2.5)
    assert out["reward_extra_info"]["reward/toy.exact"] == 1.0
