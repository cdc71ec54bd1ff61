"""FunReason's part of core's smoke run (``python -m aworld_rl_core.smoke``): SRML through
LLaMA-Factory, plain and with DeepSpeed ZeRO-3 on one GPU.

``funreason.sft`` on the packaged toy samples with ``trainer.backend=llamafactory`` and the
registered SRML loss: a few steps, a finite loss, a saved model; then the same with the
packaged ZeRO-3 config as one torchrun-style rank (ZeRO-3 needs a GPU: on CPU that half is
skipped with the reason). Skipped where LLaMA-Factory is not installed (its own environment:
install ``aworld-rl-core[llamafactory]`` there, or give ``trainer.llamafactory.python``).
"""

from __future__ import annotations

import importlib.metadata
import math
from pathlib import Path
from typing import Any

STEPS = 2


def _installed(dist: str) -> bool:
    try:
        importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def _train(name: str, device: str, model: str | None, out: Path, extra: list[str]) -> dict:
    from aworld_rl_core import registry
    from aworld_rl_core.config import load_config
    from aworld_rl_core.runs import execute

    entry = registry.get_recipe("funreason.sft")
    overrides = [
        "trainer.backend=llamafactory",
        f"model.name_or_path={model or 'tiny:qwen3'}",
        f"model.dtype={'bfloat16' if device == 'cuda' else 'float32'}",
        f"trainer.max_steps={STEPS}",
        "trainer.loss_options.learnable=false",
        "trainer.llamafactory.template=null",
        "data.prompt=chat_tools",  # tools through the chat template: no bfcl-eval needed
        "trainer.llamafactory.nproc_per_node=1",  # one GPU (the recipe default is the paper 8)
        "trainer.llamafactory.deepspeed=null",
        "trainer.llamafactory.zero_stage=0",
        *extra,
    ]
    cfg = load_config(entry.config_cls(), preset="tiny-cpu", presets=entry.presets,
                      overrides=overrides)  # fmt: skip
    result, _ = execute("funreason.sft", entry.run_fn(), cfg, output_dir=out / name, quiet=True)
    loss = result.metrics.get("train_loss", math.nan)
    assert math.isfinite(loss), f"{name}: train loss {loss} is not finite"
    model_dir = Path(result.outputs["model"])
    assert any(model_dir.glob("**/config.json")), f"{name}: no model saved in {model_dir}"
    return {f"{name}_loss": loss}


def llamafactory_srml(device: str, model: str | None, out: Path) -> dict[str, Any]:
    if not _installed("llamafactory"):
        return {
            "status": "skip",
            "why": "llamafactory is not installed here (its own environment: "
            "pip install 'aworld-rl-core[llamafactory]' with aworld-rl-funreason)",
        }
    detail = _train("plain", device, model, out, [])
    if device != "cuda":
        return {**detail, "zero3": "skipped: DeepSpeed ZeRO-3 needs a GPU"}
    if not _installed("deepspeed"):
        raise AssertionError("ZeRO-3: deepspeed is not installed (the llamafactory extra has it)")
    # core's ZeRO-3 config; the backend launches it through torchrun (one rank)
    zero3 = "trainer.llamafactory.zero_stage=3"
    return {**detail, **_train("zero3", device, model, out, [zero3])}
