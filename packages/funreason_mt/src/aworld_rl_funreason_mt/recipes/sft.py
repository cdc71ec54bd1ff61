"""``funreason_mt.sft``: SFT on the synthesized trajectories, split per assistant turn.

The paper trains with FunReason's loss (SRML: ``alpha * L_think + (1 - alpha) * L_result``):
``trainer.loss=funreason.srml`` is resolved through the registry when ``aworld-rl-funreason`` is
installed (this package never imports it); otherwise ``loss_fallback`` decides: plain
cross-entropy (the default, said in the report) or an error naming the package to install.

The paper trains each trajectory split at every assistant response, with loss only on that
response (MT-v2 5.1): ``trainer.sft.per_turn`` (core's backends split the records). The records
are core records: the FunReason-MT system prompt with the tools, the rounds' messages with the
real tool responses (``tools_in_template=false``: the tools are in the system prompt only, as
the paper's prompt-based format).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from aworld_rl_core.backends.llamafactory.config import LlamaFactoryConfig
from aworld_rl_core.config import option
from aworld_rl_core.models.config import ModelConfig
from aworld_rl_core.records import ToolUseRecord
from aworld_rl_core.runs import Run, RunResult
from aworld_rl_core.tracking import TrackingConfig
from aworld_rl_core.trainer_config import SFTConfig, TrainerConfig
from aworld_rl_funreason_mt.data import read_records
from aworld_rl_funreason_mt.recipes.common import TrajectoryData
from aworld_rl_funreason_mt.round_env import ToolDocs, system_prompt

SRML = "funreason.srml"


@dataclass(frozen=True, kw_only=True)
class SftDataConfig(TrajectoryData):
    """The training trajectories."""

    extra_paths: tuple[str, ...] = option(
        (), help="more record files to mix in (the paper mixes APIGen/xLAM function-calling data)"
    )
    tools_in_template: bool = option(
        False, help="also give the tools to the chat template (false: system prompt only)"
    )


PAPER_GPUS = 8
"""GPUs of the paper launch: FunReason-MT publishes no GPU count; 8 x 80 GB on one node is the
assumption (as FunReason's SFT and the verl presets)."""


def paper_trainer() -> TrainerConfig:
    """LLaMA-Factory SFT with FunReason's loss, per assistant turn (the paper gives no
    hyperparameters), on 8 GPUs with DeepSpeed ZeRO-3: 32k-token samples of a 4B model need the
    optimizer state sharded (one GPU holding it all: about 115 GiB)."""
    return TrainerConfig(
        backend="llamafactory",
        loss=SRML,
        loss_options={"alpha": 0.7},
        learning_rate=1e-5,
        batch_size=64,
        micro_batch_size=1,
        epochs=3.0,
        sft=SFTConfig(max_length=32768, per_turn=True, warmup_ratio=0.1),
        sections={"llamafactory": LlamaFactoryConfig(nproc_per_node=PAPER_GPUS, zero_stage=3)},
    )


@dataclass(frozen=True, kw_only=True)
class SftRecipeConfig:
    """SFT on synthesized multi-turn trajectories."""

    data: SftDataConfig = option(factory=SftDataConfig, help="training data")
    model: ModelConfig = option(
        factory=lambda: ModelConfig(name_or_path="Qwen/Qwen3-4B-Instruct-2507"),
        help="base model (paper: Qwen3-4B-Instruct-2507)",
    )
    trainer: TrainerConfig = option(factory=paper_trainer, help="backend and optimisation")
    loss_fallback: Literal["cross_entropy", "error"] = option(
        "cross_entropy",
        help="when trainer.loss is not installed (funreason.srml without aworld-rl-funreason): "
        "train with plain cross-entropy, or stop with the package to install",
    )
    tracking: TrackingConfig = option(factory=TrackingConfig, help="experiment trackers")


def _with_system(record: ToolUseRecord, tool_docs: ToolDocs) -> ToolUseRecord:
    entry = record.metadata.get("bfcl_entry")
    if tool_docs == "json" or entry is None or record.messages[0]["role"] != "system":
        return record
    system = {"role": "system", "content": system_prompt(entry["function"], tool_docs)}
    data = record.to_dict()
    data["messages"] = [system, *record.messages[1:]]
    return ToolUseRecord.from_dict(data)


def training_rows(cfg: SftDataConfig) -> list[dict]:
    """Record dicts for the backend (the chosen data, filtered, with the chosen tool docs)."""
    records = read_records(cfg.path, with_tools=cfg.tools_in_template)
    if cfg.drop_error_responses:
        records = [r for r in records if not r.metadata.get("error_tool_response")]
    if cfg.limit is not None:
        records = records[: cfg.limit]
    records = [_with_system(r, cfg.tool_docs) for r in records]
    for extra in cfg.extra_paths:
        records += read_records(extra, with_tools=cfg.tools_in_template)
    rows = [r.to_dict() for r in records]
    for row in rows:
        row["metadata"].pop("bfcl_entry", None)  # the backends need the conversation only
    return rows


def loss_installed(name: str) -> bool:
    """Whether ``name`` is a registered loss (or an importable ``module:attr``)."""
    from aworld_rl_core.errors import PluginError
    from aworld_rl_core.registry import get_loss

    if ":" in name:
        return True
    try:
        get_loss(name)
    except PluginError:
        return False
    return True


def chosen_trainer(cfg: SftRecipeConfig, run: Run) -> TrainerConfig:
    """The trainer with its loss, or without it (plain cross-entropy) per ``loss_fallback``."""
    from aworld_rl_core.errors import ConfigError

    loss = cfg.trainer.loss
    if not loss or loss_installed(loss):
        run.add_section("Loss", f"`{loss}`\n" if loss else "the backend's cross-entropy\n")
        return cfg.trainer
    package = loss.split(".", 1)[0]
    hint = f"pip install aworld-rl-{package.replace('_', '-')}"
    if cfg.loss_fallback == "error":
        raise ConfigError(
            f"trainer.loss={loss} is not installed: {hint} (or loss_fallback=cross_entropy)"
        )
    run.add_section(
        "Loss", f"`{loss}` is not installed ({hint}): trained with plain cross-entropy.\n"
    )
    return replace(cfg.trainer, loss=None, loss_options={})


def run(cfg: SftRecipeConfig, run: Run) -> RunResult:
    """Train on the trajectories with ``trainer.backend``."""
    from aworld_rl_core.backends.base import TrainJob
    from aworld_rl_core.registry import get_trainer

    rows = training_rows(cfg.data)
    if not rows:
        raise ValueError(f"no training trajectories in {cfg.data.path}")
    trainer = chosen_trainer(cfg, run)
    job = TrainJob(model=cfg.model, trainer=trainer, run=run, train_rows=rows)
    result = get_trainer(trainer.backend)().train(job)
    metrics = {
        **result.metrics,
        "trajectories": float(len(rows)),
        "srml": float(trainer.loss == SRML),
    }
    return RunResult(
        metrics=metrics, outputs=dict(result.outputs), checkpoints=list(result.checkpoints)
    )
