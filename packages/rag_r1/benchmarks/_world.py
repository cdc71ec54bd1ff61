"""The benchmarks' corpus: a large synthetic world indexed once (cached by its settings)."""

from __future__ import annotations

import os
from pathlib import Path

from aworld_rl_rag_r1.encoders import EncoderConfig
from aworld_rl_rag_r1.recipes.common import WorldConfig, synthetic_world
from aworld_rl_rag_r1.synthetic import SyntheticConfig


def world(people: int, encoder: str) -> object:
    """Build (once) a synthetic world of about ``people`` passages under $AWORLD_RL_HOME."""
    os.environ.setdefault("AWORLD_RL_HOME", str(Path.home() / ".cache" / "aworld-rl"))
    cfg = WorldConfig(
        synthetic=SyntheticConfig(
            people=people,
            cities=max(2, people // 20),
            universities=40,
            companies=people // 10,
            questions=600,
            seed=7,
        ),
        encoder=EncoderConfig(name_or_path=encoder, batch_size=128, device="cpu"),
    )
    return synthetic_world(cfg, log=lambda line: print(line))
