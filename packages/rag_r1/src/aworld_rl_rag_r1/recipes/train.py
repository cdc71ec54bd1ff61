"""Recipe ``rag_r1.train``: RL of a deep-search agent in ``rag_r1.search`` on core's backends.

The default (``paper`` preset) is the paper's: verl PPO with GAE and a critic, one rollout per
prompt, the KL penalty in the reward (0.001) with retrieved tokens masked out of the loss and
the KL, 5 search turns of up to 500 tokens plus an answer turn. ``grpo`` switches to GRPO
(Search-R1's variant: 5 samples, KL loss 0.001). ``tiny-cpu`` runs trl's GRPO on a tiny model
against the in-process retriever of the synthetic world. The episode reward is the
environment's EM; ``rewards`` adds registered rewards (e.g. ``rag_r1.em_format``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aworld_rl_core.backends.config import ModelConfig, RLConfig, TrainerConfig
from aworld_rl_core.backends.verl.config import CriticConfig, VerlConfig
from aworld_rl_core.config import option, to_dict
from aworld_rl_core.runs import Run, RunResult
from aworld_rl_core.tracking import TrackingConfig
from aworld_rl_rag_r1.env import SearchEnvConfig
from aworld_rl_rag_r1.qa import QAFormat
from aworld_rl_rag_r1.recipes.common import WorldConfig


def paper_trainer() -> TrainerConfig:
    """The paper's PPO (``train_ppo_mq.sh`` and the verl defaults it relies on)."""
    return TrainerConfig(
        backend="verl",
        learning_rate=1e-6,
        batch_size=512,
        micro_batch_size=32,
        max_grad_norm=1.0,
        max_steps=500,
        save_steps=50,
        rl=RLConfig(
            group_size=1,
            kl_coef=0.0,  # PPO: the KL is in the reward (verl.kl_in_reward), not a loss
            clip_low=0.2,
            clip_high=0.2,
            entropy_coef=0.001,
            max_turns=6,
            max_new_tokens=500,
            max_response_tokens=6144,
            temperature=1.0,
            top_p=0.95,
        ),
        sections={
            "verl": VerlConfig(
                adv_estimator="gae",
                mini_batch_size=128,
                max_prompt_length=2048,
                # pack passes by tokens (two full 8k trajectories per GPU) with fused log-prob
                # kernels: micro-batches of 32 sequences would hold ~490 GiB of logits per GPU
                dynamic_batch_size=True,
                max_tokens_per_gpu=16384,
                fused_kernels=True,
                gpu_memory_utilization=0.6,
                param_offload=True,
                optimizer_offload=True,
                test_freq=50,
                val_before_train=True,
                gamma=1.0,
                lam=1.0,
                kl_in_reward=True,
                kl_in_reward_coef=0.001,
                kl_penalty="kl",
                actor_warmup_ratio=0.285,
                ppo_epochs=1,
                critic=CriticConfig(
                    learning_rate=1e-5,
                    warmup_ratio=0.015,
                    micro_batch_size=8,
                    cliprange_value=0.5,
                    param_offload=True,
                    optimizer_offload=True,
                ),
            ),
        },
    )


@dataclass(frozen=True, kw_only=True)
class TrainDataConfig:
    """Training and validation questions."""

    train: str = option(
        "data/hotpotqa_train_filter_mq/train_data.json",
        help="question file (see rag_r1.eval's formats), 'fanoutqa' or 'synthetic'",
    )
    val: str = option("", help="validation question file (empty: none)")
    format: QAFormat = option("auto", help="file format")
    limit: int = option(0, help="first N training questions (0 = all)")
    val_limit: int = option(0, help="first N validation questions (0 = all)")


@dataclass(frozen=True, kw_only=True)
class TrainConfig:
    """RL of a RAG-R1 search agent (the paper: PPO + GAE on 8 GPUs)."""

    model: ModelConfig = option(
        factory=lambda: ModelConfig(name_or_path="Qwen/Qwen2.5-7B-Instruct"),
        help="the policy (the paper starts from its SFT checkpoint)",
    )
    trainer: TrainerConfig = option(factory=paper_trainer, help="training")
    env: SearchEnvConfig = option(factory=SearchEnvConfig, help="the search environment")
    data: TrainDataConfig = option(factory=TrainDataConfig, help="questions")
    rewards: tuple[str, ...] = option(
        (), help="registered rewards added to the environment's EM (e.g. rag_r1.em_format)"
    )
    world: WorldConfig = option(factory=WorldConfig, help="'synthetic' data / index: its size")
    tracking: TrackingConfig = option(factory=TrackingConfig, help="experiment trackers")


def _rows(path: str, cfg: TrainConfig, limit: int) -> list[dict[str, Any]]:
    from aworld_rl_rag_r1.recipes.eval import EvalDataConfig, load_questions

    if not path:
        return []
    data = EvalDataConfig(files=(path,), format=cfg.data.format, limit=limit)
    return [item.row() for items in load_questions(data, cfg.world).values() for item in items]


def env_options(cfg: TrainConfig) -> dict[str, Any]:
    """The environment's JSON options: ``synthetic`` resolved, the policy's tokenizer counting
    the observation budget unless ``env.obs_tokenizer`` names one."""
    from dataclasses import replace

    from aworld_rl_rag_r1.recipes.eval import resolve_env

    env = resolve_env(cfg.env, cfg.world)
    if env.obs_tokenizer is None:
        env = replace(env, obs_tokenizer=cfg.model.tokenizer or cfg.model.name_or_path)
    return to_dict(env)


def build_job(cfg: TrainConfig, run: Run) -> Any:
    from aworld_rl_core.backends.base import TrainJob
    from aworld_rl_core.refs import Ref

    if cfg.trainer.rl.max_turns < cfg.env.max_search_turns + 1:
        raise ValueError(
            f"trainer.rl.max_turns={cfg.trainer.rl.max_turns} leaves no answer turn after "
            f"env.max_search_turns={cfg.env.max_search_turns}: set it to "
            f"{cfg.env.max_search_turns + 1}"
        )
    train = _rows(cfg.data.train, cfg, cfg.data.limit)
    if not train:
        raise ValueError(f"data.train={cfg.data.train!r} holds no question")
    return TrainJob(
        model=cfg.model,
        trainer=cfg.trainer,
        run=run,
        train_rows=train,
        eval_rows=_rows(cfg.data.val, cfg, cfg.data.val_limit),
        env=Ref.named("rag_r1.search", env_options(cfg)),
        rewards=[Ref.named(name) for name in cfg.rewards],
    )


def run(cfg: TrainConfig, run: Run) -> RunResult:
    from aworld_rl_core.registry import get_trainer

    job = build_job(cfg, run)
    result = get_trainer(cfg.trainer.backend)().train(job)
    return RunResult(
        metrics=dict(result.metrics), outputs=result.outputs, checkpoints=result.checkpoints
    )
