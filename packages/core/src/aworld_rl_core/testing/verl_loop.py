"""verl's agent loop built the way its ``AgentLoopWorker`` builds it, for tests of
environments in core's ``aworld_env`` loop against a test double of verl's LLM server.

Needs verl (the ``tests_verl`` venv); nothing here imports it at module level.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aworld_rl_core.backends.verl.launcher import LaunchPaths, build_overrides
from aworld_rl_core.models.config import ModelConfig
from aworld_rl_core.trainer_config import RLConfig, TrainerConfig


def compose_verl(overrides: list[str]) -> Any:
    """verl's ``ppo_trainer`` config with ``overrides`` applied, as ``main_ppo`` would see it."""
    import verl
    from hydra import compose, initialize_config_dir

    config_dir = Path(verl.__file__).parent / "trainer" / "config"
    with initialize_config_dir(config_dir=str(config_dir), version_base=None):
        return compose(config_name="ppo_trainer", overrides=overrides)


def agent_loop(tokenizer: Any, server: Any, *, max_turns: int = 5, response_length: int = 256):
    """Core's registered ``aworld_env`` agent loop over ``server`` (verl's server manager)."""
    import hydra
    from verl.experimental.agent_loop.agent_loop import (
        DictConfigWrap,
        ToolListWrap,
        _agent_loop_registry,
    )
    from verl.utils.dataset.rl_dataset import RLHFDataset

    import aworld_rl_core.backends.verl.entry_point  # noqa: F401  (registers the agent loop)

    rl = RLConfig(max_turns=max_turns, max_response_tokens=response_length)
    trainer = TrainerConfig(backend="verl", batch_size=1, rl=rl)
    paths = LaunchPaths(train_file="t.parquet", val_file="v.parquet", checkpoint_dir="ckpt")
    overrides = build_overrides(
        ModelConfig(name_or_path="qwen3"), trainer, paths, n_rows=1, uses_env=True
    )
    cfg = compose_verl(overrides)
    return hydra.utils.instantiate(
        _agent_loop_registry["aworld_env"],
        trainer_config=DictConfigWrap(cfg),
        server_manager=server,
        tokenizer=tokenizer,
        processor=None,
        hf_model_type="qwen3",
        dataset_cls=RLHFDataset,
        data_config=DictConfigWrap(cfg.data),
        tools=ToolListWrap([]),
    )


def run_worker(
    model_path: str | Path,
    specs: list[Any],
    server: Any,
    *,
    max_turns: int = 4,
    response_length: int = 64,
    max_prompt_length: int = 64,
) -> Any:
    """verl's own ``AgentLoopWorker`` over one row per ``EpisodeSpec`` in ``specs``, its LLM
    client replaced by ``server(tokenizer)`` (a test double built on the worker's tokenizer);
    the ``DataProto`` batch it builds for training."""
    import numpy as np
    from verl import DataProto
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker
    from verl.utils.ray_utils import get_event_loop  # the loop verl's agent loops use

    import aworld_rl_core.backends.verl.entry_point  # noqa: F401  (registers the agent loop)
    from aworld_rl_core.backends.verl.specs import SPEC_KEY

    n = len(specs)
    rl = RLConfig(max_turns=max_turns, max_response_tokens=response_length)
    trainer = TrainerConfig(backend="verl", batch_size=n, rl=rl)
    paths = LaunchPaths(train_file="t.parquet", val_file="v.parquet", checkpoint_dir="ckpt")
    model = ModelConfig(name_or_path=str(model_path))
    overrides = build_overrides(model, trainer, paths, n_rows=n, uses_env=True)
    worker = AgentLoopWorker(
        compose_verl([*overrides, f"data.max_prompt_length={max_prompt_length}"]), None
    )
    worker.llm_client = server(worker.tokenizer)
    extra = [{"index": i, SPEC_KEY: s.dumps()} for i, s in enumerate(specs)]
    batch = DataProto.from_dict(
        non_tensors={
            "raw_prompt": np.array([[{"role": "user", "content": "x"}]] * n, dtype=object),
            "extra_info": np.array(extra, dtype=object),
            "agent_name": np.array(["aworld_env"] * n, dtype=object),
            "index": np.arange(n),
        }
    )
    return get_event_loop().run_until_complete(worker.generate_sequences(batch))
