"""The ``trl`` backend: loss masking, training end to end, checkpoints, resume, learning."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from scripted_generation import ScriptedGenerator
from small_vocab import small_vocab_model_dir

from aworld_rl_core.backends import trl_grpo
from aworld_rl_core.backends.base import TrainJob
from aworld_rl_core.engine import ChatCodec
from aworld_rl_core.envs.toy import lowercase_reward, toy_tasks
from aworld_rl_core.models.config import ModelConfig
from aworld_rl_core.refs import Ref
from aworld_rl_core.runs import Run
from aworld_rl_core.trainer_config import RLConfig, TrainerConfig

pytest.importorskip("trl")


ROOMY = RLConfig(group_size=2, max_turns=2, max_new_tokens=32, max_response_tokens=128)
"""Room for the scripted replies (the small vocabulary spends several tokens per word)."""


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    return small_vocab_model_dir(tmp_path_factory.mktemp("small-vocab"))


def make_job(
    run_dir: Path, model_dir: Path, *, rewards=(), rl=None, eval_rows=(), **trainer
) -> TrainJob:
    rl = rl or RLConfig(group_size=2, max_turns=2, max_new_tokens=6, max_response_tokens=80)
    defaults = dict(learning_rate=1e-2, max_steps=2, batch_size=2, micro_batch_size=4, seed=0)
    return TrainJob(
        model=ModelConfig(name_or_path=str(model_dir)),
        trainer=TrainerConfig(rl=rl, **{**defaults, **trainer}),
        run=Run(run_dir, quiet=True),
        train_rows=toy_tasks()[:8],
        eval_rows=list(eval_rows),
        env=Ref.named("core.toy-lowercase", {"turns": 2}),
        rewards=list(rewards),
    )


def logged(run_dir: Path) -> list[dict]:
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_hf_generator_batches_left_padded_prompts_like_single_ones(model_dir):
    import torch

    from aworld_rl_core.models import load_model_and_tokenizer
    from aworld_rl_core.models.generate import HfGenerator

    model, tok = load_model_and_tokenizer(ModelConfig(name_or_path=str(model_dir)))
    with torch.no_grad():
        model.model.norm.weight.mul_(50)  # sharp logits: greedy margins far above float noise
    greedy = HfGenerator(model, pad_id=tok.pad_token_id, stop_ids=[tok.eos_token_id], temperature=0)
    prompts = [tok.encode("say something about rain"), tok.encode("the sea")]
    batched = greedy(prompts, 6)
    assert batched == [greedy([prompt], 6)[0] for prompt in prompts]
    assert [len(ids) for ids, _ in batched] == [6, 6] and batched[0][1] is None
    first = batched[0][0][0]
    stopping = HfGenerator(model, pad_id=tok.pad_token_id, stop_ids=[first], temperature=0)
    assert stopping([prompts[0]], 6) == [([first], None)]  # cut after the stop token


def test_environment_tokens_are_masked_out_of_the_loss(model_dir, tmp_path, monkeypatch):
    from aworld_rl_core.backends import trl_trainer

    trainer, _ = trl_grpo.TrlGrpoBackend().build_trainer(make_job(tmp_path, model_dir, rl=ROOMY))
    codec = ChatCodec(trainer.processing_class)
    scripted = ScriptedGenerator(codec, ["hello there", "Bye"])
    monkeypatch.setattr(trl_trainer, "HfGenerator", lambda *args, **kwargs: scripted)

    out = trainer._generate_and_score_completions([{"prompt": "row 0", "row_index": 0}] * 2)

    first, second = scripted.ids
    feedback = codec.observation_ids([{"role": "user", "content": "Score 1.00. Again."}])
    expected = [1] * len(first) + [0] * len(feedback) + [1] * len(second)
    assert out["completion_ids"][0].tolist() == first + feedback + second
    loss_mask = out["completion_mask"] * out["tool_mask"]  # what TRL's loss multiplies by
    assert loss_mask.tolist() == [expected, expected]
    # identical episodes: the reward is the episode return, its group advantage zero
    assert out["advantages"].tolist() == [0.0, 0.0]


def test_rows_without_environment_are_one_turn_episodes(model_dir, tmp_path, monkeypatch):
    from aworld_rl_core.backends import trl_trainer

    seen = {}

    def recording_reward(completions, prompts, topic, env_return, **kwargs):
        seen.update(completions=completions, prompts=prompts, topic=topic, returns=env_return)
        return lowercase_reward(completions)

    rows = [{"prompt": [{"role": "user", "content": "hi"}], "topic": "rain"}]
    job = replace(
        make_job(tmp_path, model_dir, rl=ROOMY),
        env=None,
        rewards=[recording_reward],
        train_rows=rows * 2,  # one full batch (trainer.batch_size=2): the partial one is dropped
    )
    trainer, _ = trl_grpo.TrlGrpoBackend().build_trainer(job)
    scripted = ScriptedGenerator(ChatCodec(trainer.processing_class), ["hello there"])
    monkeypatch.setattr(trl_trainer, "HfGenerator", lambda *args, **kwargs: scripted)

    out = trainer._generate_and_score_completions([{"prompt": "row 0", "row_index": 0}] * 2)

    assert out["completion_ids"][0].tolist() == scripted.ids[0]
    assert out["tool_mask"].tolist() == [[1] * len(scripted.ids[0])] * 2
    assert seen == {
        "completions": [[{"role": "assistant", "content": "hello there"}]] * 2,
        "prompts": [rows[0]["prompt"]] * 2,
        "topic": ["rain", "rain"],
        "returns": [0.0, 0.0],
    }
    assert out["advantages"].tolist() == [0.0, 0.0]  # one group, equal rewards


def test_trains_checkpoints_and_resumes_to_the_same_weights(model_dir, tmp_path):
    from safetensors.torch import load_file

    backend = trl_grpo.TrlGrpoBackend()
    kl = RLConfig(group_size=2, max_turns=2, max_new_tokens=6, max_response_tokens=80, kl_coef=0.05)
    straight = backend.train(
        make_job(
            tmp_path / "a",
            model_dir,
            rl=kl,
            rewards=[lowercase_reward],
            eval_rows=toy_tasks()[8:9],
        )
    )

    assert [p.name for p in straight.checkpoints] == ["checkpoint-2"]
    assert straight.outputs["model"] == straight.checkpoints[-1]
    assert straight.metrics["global_step"] == 2
    assert 0.0 < straight.metrics["eval_rewards/env_return/mean"] <= 1.0  # held-out episodes
    records = logged(tmp_path / "a")
    steps = [r for r in records if "reward_mean" in r]
    assert [r["step"] for r in steps] == [1, 2]
    for key in ("reward_std", "kl", "entropy", "grad_norm", "tokens_per_s", "episode/turns"):
        assert key in steps[-1], key
    assert steps[-1]["episode/turns"] == 2.0
    # two reward sources: our reward function on the episode messages and the env return,
    # both the mean lowercase score over the two turns, so they agree
    assert steps[-1]["rewards/lowercase_reward/mean"] == pytest.approx(
        steps[-1]["rewards/env_return/mean"], abs=1e-6
    )
    assert steps[-1]["reward_mean"] == pytest.approx(2 * steps[-1]["rewards/env_return/mean"])

    job = make_job(tmp_path / "b", model_dir, rl=kl, rewards=[lowercase_reward], max_steps=1)
    backend.train(job)
    resumed = backend.train(
        make_job(tmp_path / "b", model_dir, rl=kl, rewards=[lowercase_reward], resume=True)
    )
    assert [p.name for p in resumed.checkpoints] == ["checkpoint-1", "checkpoint-2"]
    assert [r["step"] for r in logged(tmp_path / "b") if "reward_mean" in r] == [1, 2]
    a = load_file(straight.checkpoints[-1] / "model.safetensors")
    b = load_file(resumed.checkpoints[-1] / "model.safetensors")
    assert a.keys() == b.keys()
    for name in a:
        assert (a[name] - b[name]).abs().max().item() < 1e-6, name


def test_kl_reference_of_a_tiny_model_is_its_initial_weights(aworld_home, tmp_path):
    job = make_job(tmp_path, model_dir=Path("unused"), rl=RLConfig(group_size=2, kl_coef=0.1))
    job = replace(job, model=ModelConfig(name_or_path="tiny:qwen3"))
    trainer, _ = trl_grpo.TrlGrpoBackend().build_trainer(job)
    assert trainer.beta == 0.1 and trainer.ref_model is not None
    policy = dict(trainer.model.named_parameters())
    for name, param in trainer.ref_model.named_parameters():
        assert param.equal(policy[name]), name


def test_rejects_what_it_cannot_train(tmp_path):
    def job(**kw):
        fields = dict(
            model=ModelConfig(),
            trainer=TrainerConfig(),
            run=Run(tmp_path, quiet=True),
            train_rows=[{"topic": "x"}],
            rewards=[lowercase_reward],
        )
        return TrainJob(**{**fields, **kw})

    with pytest.raises(ValueError, match="hf-sft"):
        trl_grpo.check_job(job(loss=lambda logits, labels, segments: 0.0))
    with pytest.raises(ValueError, match="kl_estimator='k1'"):
        trl_grpo.check_job(job(trainer=TrainerConfig(rl=RLConfig(kl_estimator="k1"))))
    with pytest.raises(ValueError, match="micro_batch_size=3"):
        trl_grpo.check_job(job(trainer=TrainerConfig(batch_size=2, micro_batch_size=3)))
    with pytest.raises(ValueError, match="2 reward weights for 1 reward"):
        trl_grpo.check_job(job(reward_weights=[1.0, 2.0]))
    with pytest.raises(ValueError, match="no training rows"):
        trl_grpo.check_job(job(train_rows=[]))
    from aworld_rl_core.backends.batching import plan_batches

    layout = plan_batches(
        TrainerConfig(batch_size=4, micro_batch_size=8, rl=RLConfig(group_size=8)),
        n_rows=4,
        rl=True,
    )
    assert (layout.micro_batch, layout.accumulation) == (8, 4)


@pytest.mark.slow
def test_grpo_learns_the_lowercase_game(model_dir, tmp_path):
    rl = RLConfig(group_size=4, max_turns=2, max_new_tokens=8, max_response_tokens=96)
    job = make_job(tmp_path, model_dir, rl=rl, max_steps=40, batch_size=4, micro_batch_size=16)
    trl_grpo.TrlGrpoBackend().train(job)
    rewards = [r["reward_mean"] for r in logged(tmp_path) if "reward_mean" in r]
    start, end = sum(rewards[:5]) / 5, sum(rewards[-5:]) / 5
    assert end > start + 0.1, rewards


def test_a_resumed_run_shuffles_each_epoch_as_the_uninterrupted_run_did():
    """TRL's sampler drew epoch e's order from a generator advanced by the epochs this process
    iterated, so the first epoch after a resume took epoch 0's order (found by the crash harness:
    a curriculum killed mid-save of a checkpoint at an epoch boundary resumed to other weights)."""
    from trl.trainer.utils import RepeatSampler

    from aworld_rl_core.backends.trl_trainer import _ResumableRepeatSampler

    def orders(sampler, epochs):
        found = []
        for epoch in epochs:
            if hasattr(sampler, "set_epoch"):
                sampler.set_epoch(epoch)
            found.append(list(sampler))
        return found

    def build(cls):
        return cls(list(range(6)), mini_repeat_count=2, batch_size=3, seed=7)

    uninterrupted = orders(build(RepeatSampler), range(5))
    assert len({tuple(o) for o in uninterrupted}) > 1  # the order changes from epoch to epoch
    assert orders(build(_ResumableRepeatSampler), range(5)) == uninterrupted  # same stream
    assert orders(build(_ResumableRepeatSampler), [3, 4]) == uninterrupted[3:]  # resumed at 3
    assert orders(build(RepeatSampler), [3, 4]) == uninterrupted[:2]  # TRL's: epochs 0 and 1
