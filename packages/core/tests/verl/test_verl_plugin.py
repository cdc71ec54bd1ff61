"""``import verl`` loads our ``verl.plugins`` entry point; packages register losses/estimators."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("verl.trainer")  # not tests/verl, which is on sys.path as a namespace


def test_import_verl_registers_our_agent_loop():
    # A fresh process: verl loads entry points once, at its first import.
    code = (
        "import json, verl\n"
        "from verl.experimental.agent_loop.agent_loop import _agent_loop_registry as r\n"
        "print(json.dumps(r.get('aworld_env')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    registered = json.loads(out.stdout.strip().splitlines()[-1])
    assert registered == {"_target_": "aworld_rl_core.backends.verl.agent_loop.EnvAgentLoop"}


def test_entry_point_is_declared():
    import importlib.metadata as md

    targets = {ep.value for ep in md.entry_points(group="verl.plugins")}
    assert "aworld_rl_core.backends.verl.entry_point" in targets


def _mean_baseline(token_level_rewards, response_mask, config=None, index=None, **kw):
    scores = token_level_rewards.sum(-1)
    adv = (scores - scores.mean()).unsqueeze(-1) * response_mask
    return adv, adv


def _other(token_level_rewards, response_mask, **kw):
    return token_level_rewards, token_level_rewards


def _half_vanilla(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode="token-mean",
                  config=None, rollout_is_weights=None):  # fmt: skip
    from verl.trainer.ppo.core_algos import compute_policy_loss_vanilla

    loss, metrics = compute_policy_loss_vanilla(
        old_log_prob, log_prob, advantages, response_mask, loss_agg_mode, config, rollout_is_weights
    )
    return 0.5 * loss, metrics


def test_packages_register_estimators_and_losses():
    import torch
    from verl.trainer.ppo.core_algos import get_adv_estimator_fn, get_policy_loss_fn

    from aworld_rl_core.backends.verl.extensions import (
        register_advantage_estimator,
        register_policy_loss,
    )

    register_advantage_estimator("aworld_test_mean_baseline", _mean_baseline)
    register_advantage_estimator("aworld_test_mean_baseline", _mean_baseline)  # idempotent
    with pytest.raises(ValueError, match="already has 'aworld_test_mean_baseline'"):
        register_advantage_estimator("aworld_test_mean_baseline", _other)
    rewards = torch.tensor([[0.0, 1.0], [0.0, 3.0]])
    mask = torch.ones(2, 2)
    adv, _ = get_adv_estimator_fn("aworld_test_mean_baseline")(rewards, mask)
    assert torch.equal(adv, torch.tensor([[-1.0, -1.0], [1.0, 1.0]]))

    register_policy_loss("aworld_test_half", _half_vanilla)
    assert get_policy_loss_fn("aworld_test_half") is _half_vanilla
    with pytest.raises(ValueError, match="choose another name"):
        register_policy_loss("vanilla", _half_vanilla)
