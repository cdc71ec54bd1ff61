"""Known samples and job builders shared by the LLaMA-Factory backend tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aworld_rl_core.backends.base import TrainJob
from aworld_rl_core.backends.llamafactory.config import LlamaFactoryConfig
from aworld_rl_core.models.config import ModelConfig
from aworld_rl_core.runs import Run
from aworld_rl_core.trainer_config import SFTConfig, TrainerConfig

ADD_TOOL = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add two integers",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    },
}

# A reasoned tool call, its result, then a reasoned final answer.
CALC_RECORD: dict[str, Any] = {
    "id": "calc-1",
    "messages": [
        {"role": "system", "content": "You are a calculator."},
        {"role": "user", "content": "What is 2 + 3?"},
        {
            "role": "assistant",
            "content": "<think>Use add.</think>",
            "tool_calls": [
                {"type": "function", "function": {"name": "add", "arguments": {"a": 2, "b": 3}}}
            ],
        },
        {"role": "tool", "content": "5"},
        {"role": "assistant", "content": "<think>It is 5.</think>The answer is 5."},
    ],
    "tools": [ADD_TOOL],
}

# What LLaMA-Factory's qwen template supervises for CALC_RECORD, split by our segments.
# (LLaMA-Factory writes a function_call thought as "<think>\n...\n</think>\n\n".)
CALL_JSON = '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call><|im_end|>\n'
CALL_TURN = "<think>\nUse add.\n</think>\n\n" + CALL_JSON
ANSWER_TURN = "<think>It is 5.</think>The answer is 5.<|im_end|>\n"
THINK_TEXT = "<think>\nUse add.\n</think><think>It is 5.</think>"  # both blocks, in order
CALL_TEXT = "\n\n" + CALL_JSON + "The answer is 5.<|im_end|>\n"


def make_job(
    run_dir: Path,
    *,
    rows: list[dict[str, Any]] | None = None,
    eval_rows: list[dict[str, Any]] = (),
    loss: Any = None,
    python: str | None = None,
    resume: bool = False,
    **trainer: Any,
) -> TrainJob:
    """A tiny-model SFT job for the llamafactory backend (CPU, float32)."""
    lf = LlamaFactoryConfig(python=python, extra_args={"disable_gradient_checkpointing": True})
    settings: dict[str, Any] = dict(
        backend="llamafactory",
        learning_rate=1e-3,
        max_steps=2,
        batch_size=2,
        micro_batch_size=2,
        save_steps=1,
        seed=0,
        resume=resume,
        sft=SFTConfig(max_length=512, per_turn=False, lr_scheduler="constant"),
        sections={"llamafactory": lf},
    )
    settings.update(trainer)
    return TrainJob(
        model=ModelConfig(name_or_path="tiny:qwen3", dtype="float32"),
        trainer=TrainerConfig(**settings),
        run=Run(run_dir, quiet=True),
        train_rows=rows if rows is not None else [CALC_RECORD] * 2,
        eval_rows=eval_rows,
        loss=loss,
    )
