"""Recipe ``rag_r1.train``: RL of a deep-search agent in ``rag_r1.search`` on core's backends.

The default (``paper`` preset) is the paper's: verl PPO with GAE and a critic, one rollout per
prompt, the KL penalty in the reward (0.001) with retrieved tokens masked out of the loss and
the KL, 5 search turns of up to 500 tokens plus an answer turn. ``grpo`` switches to GRPO
(Search-R1's variant: 5 samples, KL loss 0.001). ``tiny-cpu`` runs trl's GRPO on a tiny model
against the in-process retriever of the synthetic world. The reward is ``reward``'s: the
environment scores the episode (``reward.episode``: the paper's EM by default, 1.0 for a
correct answer; ``em_format`` puts Search-R1's format score in its place, it does not add to
EM) times ``reward.episode_weight``, plus ``reward.extra`` registered rewards times
``reward.extra_weights``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aworld_rl_core.backends.verl.config import CriticConfig, VerlConfig
from aworld_rl_core.config import limit_option, option, to_dict
from aworld_rl_core.models.config import ModelConfig
from aworld_rl_core.runs import Run, RunResult
from aworld_rl_core.tracking import TrackingConfig
from aworld_rl_core.trainer_config import RLConfig, TrainerConfig
from aworld_rl_rag_r1.env import EpisodeReward, SearchEnvConfig
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
    limit: int | None = limit_option(
        "first N training questions of RL (after warm_start.questions)"
    )
    val_limit: int | None = limit_option("first N validation questions")
    heldout: int = option(
        0,
        help="the last N questions of data.train are held out (never trained on, never used to "
        "choose a preset) and scored greedily at the random start, the warm start and the end "
        "(heldout/<metric>/<point>; 0: none)",
        ge=0,
    )
    validation: int = option(
        0,
        help="the N questions of data.train before the held-out ones: the validation split, "
        "scored at the same points (val/<metric>/<point>) to choose presets on (0: none)",
        ge=0,
    )


@dataclass(frozen=True, kw_only=True)
class WarmStartConfig:
    """Supervised steps on the scripted searcher's correct trajectories before RL."""

    steps: int = option(
        0,
        help="hf-sft optimizer steps (0: RL starts from model.name_or_path, as the paper "
        "starts from its SFT checkpoint)",
        ge=0,
    )
    batch_size: int = option(8, help="trajectories per optimizer step", ge=1)
    learning_rate: float = option(3e-3, help="constant learning rate", gt=0)
    max_length: int = option(1024, help="max tokens per trajectory (longer ones are cut)", ge=1)
    questions: int = option(
        0,
        help="the first N training questions are the warm start's (the scripted searcher's "
        "trajectories) and RL trains on the rest, as the paper's SFT and RL pools are apart "
        "(0: both use every training question)",
        ge=0,
    )
    from_run: str = option(
        "",
        help="a finished rag_r1.train run directory whose warm start to reuse: its "
        "<dir>/warm-start/model starts RL and its <dir>/init is the random point (with "
        "world_tokenizer; else model.name_or_path), so seeds or RL settings share one warm "
        "start; no SFT runs, and the config must be the one that run was made with apart from "
        "the RL settings (empty: warm-start here when steps > 0)",
    )
    world_tokenizer: bool = option(
        False,
        help="a tiny:<arch>:...,vocab=N model gets its byte-level BPE trained on the synthetic "
        "world's text (core's micro-world recipe on this world's passages, prompts and "
        "trajectories) in place of the tool-use micro-world's",
    )


@dataclass(frozen=True, kw_only=True)
class RewardConfig:
    """How an episode is scored: total = episode_weight x episode + sum(extra_weights x extra)."""

    episode: EpisodeReward = option(
        "em",
        help="the environment's episode reward: em (the paper's: 1.0 for a correct answer, "
        "else 0), em_format (Search-R1 v0.3's format score in place of EM, never on top of "
        "it) or f1",
    )
    episode_weight: float = option(1.0, help="weight of the episode reward (0 switches it off)")
    extra: tuple[str, ...] = option(
        (), help="registered rewards added to the episode reward (e.g. rag_r1.f1)"
    )
    extra_weights: tuple[float, ...] = option(
        (), help="one weight per extra reward (empty: 1.0 each)"
    )

    def check(self) -> None:
        """Errors naming the keys when the weights do not match or an answer counts twice."""
        if self.extra_weights and len(self.extra_weights) != len(self.extra):
            raise ValueError(
                f"reward.extra_weights has {len(self.extra_weights)} weights for "
                f"{len(self.extra)} reward.extra rewards: give one per reward or none"
            )
        if "rag_r1.em" in self.extra and self.episode_weight:
            raise ValueError(
                "reward.extra names rag_r1.em on top of the episode's reward: the score would "
                "count the answer twice; set reward.episode_weight=0 or drop it"
            )
        if "rag_r1.em_format" in self.extra and self.episode_weight:
            raise ValueError(
                "reward.extra names rag_r1.em_format on top of the episode's reward (EM): a "
                "correct answer would score 2.0; set reward.episode=em_format instead (it "
                "replaces EM)"
            )

    def weights(self) -> tuple[float, ...] | None:
        return tuple(self.extra_weights) or None


@dataclass(frozen=True, kw_only=True)
class TrainConfig:
    """RL of a RAG-R1 search agent (the paper: PPO + GAE on 8 GPUs)."""

    model: ModelConfig = option(
        factory=lambda: ModelConfig(name_or_path="Qwen/Qwen2.5-7B-Instruct"),
        help="the policy (the paper starts from its SFT checkpoint)",
    )
    trainer: TrainerConfig = option(factory=paper_trainer, help="training")
    env: SearchEnvConfig = option(
        factory=lambda: SearchEnvConfig(obs_budget_tokens=-1),
        help="the search environment (obs_budget_tokens -1: every search fits the trainer's "
        "response budget)",
    )
    data: TrainDataConfig = option(factory=TrainDataConfig, help="questions")
    reward: RewardConfig = option(
        factory=RewardConfig, help="the reward (the paper: EM alone, 1.0 for a correct answer)"
    )
    world: WorldConfig = option(factory=WorldConfig, help="'synthetic' data / index: its size")
    warm_start: WarmStartConfig = option(
        factory=WarmStartConfig, help="an SFT warm start on scripted trajectories (tiny models)"
    )
    tracking: TrackingConfig = option(factory=TrackingConfig, help="experiment trackers")


def _rows(path: str, cfg: TrainConfig, limit: int | None) -> list[dict[str, Any]]:
    from aworld_rl_rag_r1.recipes.eval import EvalDataConfig, load_questions

    if not path:
        return []
    data = EvalDataConfig(files=(path,), format=cfg.data.format, limit=limit)
    return [item.row() for items in load_questions(data, cfg.world).values() for item in items]


def observation_budget(cfg: TrainConfig) -> int:
    """``env.obs_budget_tokens``, with -1 resolved: the response budget less the model's turns
    at their longest (``max_response_tokens - max_turns x max_new_tokens``), so all
    ``env.max_search_turns`` searches and the answer turn fit and no episode is cut short."""
    if cfg.env.obs_budget_tokens >= 0:
        return cfg.env.obs_budget_tokens
    rl = cfg.trainer.rl
    if rl.max_response_tokens is None or rl.max_new_tokens is None:
        return 0
    budget = rl.max_response_tokens - rl.max_turns * rl.max_new_tokens
    if budget <= 0:
        raise ValueError(
            f"env.obs_budget_tokens=-1 leaves no room for observations: "
            f"trainer.rl.max_response_tokens={rl.max_response_tokens} <= trainer.rl.max_turns "
            f"({rl.max_turns}) x trainer.rl.max_new_tokens ({rl.max_new_tokens}); raise "
            "max_response_tokens or set env.obs_budget_tokens to a number of tokens (0: none)"
        )
    return budget


def env_options(cfg: TrainConfig) -> dict[str, Any]:
    """The environment's JSON options: ``synthetic`` resolved, the policy's tokenizer counting
    the observation budget unless ``env.obs_tokenizer`` names one."""
    from dataclasses import replace

    from aworld_rl_rag_r1.recipes.eval import resolve_env

    env = resolve_env(cfg.env, cfg.world)
    env = replace(
        env,
        reward=cfg.reward.episode,
        reward_weight=cfg.reward.episode_weight,
        obs_budget_tokens=observation_budget(cfg),
    )
    if env.obs_tokenizer is None:
        env = replace(env, obs_tokenizer=cfg.model.tokenizer or cfg.model.name_or_path)
    return to_dict(env)


@dataclass(frozen=True)
class Splits:
    train: list[dict[str, Any]]
    """RL's questions."""
    validation: list[dict[str, Any]]
    heldout: list[dict[str, Any]]
    warm: list[dict[str, Any]]
    """The warm start's questions (``warm_start.questions``; else the same as ``train``)."""


def splits(cfg: TrainConfig) -> Splits:
    """data.train cut into training, validation and held-out questions (see data.heldout)."""
    rows = _rows(cfg.data.train, cfg, None)
    n_held, n_val = cfg.data.heldout, cfg.data.validation
    if n_held + n_val >= len(rows) and (n_held or n_val):
        raise ValueError(
            f"data.heldout={n_held} + data.validation={n_val} leave no training question of "
            f"the {len(rows)} in data.train={cfg.data.train!r}: lower them"
        )
    end = len(rows) - n_held
    train = rows[: end - n_val]
    n_warm = cfg.warm_start.questions
    if n_warm and n_warm >= len(train):
        raise ValueError(
            f"warm_start.questions={n_warm} leaves none of the {len(train)} training questions "
            "for RL: lower it (0: the warm start and RL share every training question)"
        )
    warm, rl = (train[:n_warm], train[n_warm:]) if n_warm else (train, train)
    if cfg.data.limit is not None:
        rl = rl[: cfg.data.limit]
        warm = warm if n_warm else rl
    return Splits(rl, rows[end - n_val : end], rows[end:], warm)


def build_job(cfg: TrainConfig, run: Run, split: Splits | None = None) -> Any:
    from aworld_rl_core.backends.base import TrainJob
    from aworld_rl_core.refs import Ref

    if cfg.trainer.rl.max_turns < cfg.env.max_search_turns + 1:
        raise ValueError(
            f"trainer.rl.max_turns={cfg.trainer.rl.max_turns} leaves no answer turn after "
            f"env.max_search_turns={cfg.env.max_search_turns}: set it to "
            f"{cfg.env.max_search_turns + 1}"
        )
    cfg.reward.check()
    train = (split or splits(cfg)).train
    if not train:
        raise ValueError(f"data.train={cfg.data.train!r} holds no question")
    return TrainJob(
        model=cfg.model,
        trainer=cfg.trainer,
        run=run,
        train_rows=train,
        eval_rows=_rows(cfg.data.val, cfg, cfg.data.val_limit),
        env=Ref.named("rag_r1.search", env_options(cfg)),
        rewards=[Ref.named(name) for name in cfg.reward.extra],
        reward_weights=cfg.reward.weights(),
    )


def run(cfg: TrainConfig, run: Run) -> RunResult:
    from dataclasses import replace

    from aworld_rl_core.backends.plan import planning_active
    from aworld_rl_core.registry import get_trainer

    split = splits(cfg)
    fresh = cfg.warm_start.steps == 0 and not cfg.warm_start.from_run
    if planning_active() or (fresh and not split.heldout):
        job = build_job(cfg, run, split)
        result = get_trainer(cfg.trainer.backend)().train(job)
        return RunResult(
            metrics=dict(result.metrics), outputs=result.outputs, checkpoints=result.checkpoints
        )
    from aworld_rl_rag_r1.recipes.learn import learn

    start, warm, points = learn(cfg, run, split, env_options)
    job = build_job(replace(cfg, model=replace(cfg.model, name_or_path=warm)), run, split)
    result = get_trainer(cfg.trainer.backend)().train(job)
    final = result.outputs.get("model")
    metrics = dict(result.metrics)
    metrics.update(points(start, warm, None if final is None else str(final)))
    return RunResult(metrics=metrics, outputs=result.outputs, checkpoints=result.checkpoints)
