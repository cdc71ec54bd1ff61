"""Training backends: one protocol, chosen by ``trainer.backend`` in every recipe config."""

from aworld_rl_core.backends.base import Backend, LossFn, RewardFn, TrainJob
from aworld_rl_core.models.config import ModelConfig
from aworld_rl_core.trainer_config import RLConfig, SFTConfig, TrainerConfig

__all__ = [
    "Backend",
    "LossFn",
    "ModelConfig",
    "RLConfig",
    "RewardFn",
    "SFTConfig",
    "TrainJob",
    "TrainerConfig",
]
