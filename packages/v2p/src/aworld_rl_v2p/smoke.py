"""V2P's part of core's smoke run (``python -m aworld_rl_core.smoke``): the warm-up stage.

``v2p.train`` (stage ``warmup``, hf-sft) trains a few steps on the packaged sample (four rendered
pages, eight targets); the part checks that the row mask sits on its parameter's device, that
only the new token rows of the embeddings moved, that the pointer loss fell, and that the
trained model reads out a point inside the screenshot.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

SAMPLE = "aworld_rl_v2p:sample_data/data.json"
STEPS = 6


def warmup(device: str, model: str | None, out: Path) -> dict[str, Any]:
    from aworld_rl_core import registry
    from aworld_rl_core.backends.config import ModelConfig
    from aworld_rl_core.config import load_config
    from aworld_rl_core.runs import execute
    from aworld_rl_v2p.modeling import new_token_rows
    from aworld_rl_v2p.training import model_factory, warmup_trainable

    dtype: Literal["bfloat16", "float32"] = "bfloat16" if device == "cuda" else "float32"
    name = model or "tiny:qwen2_5_vl"
    # the row mask follows its parameter onto the device
    built, _ = model_factory(ModelConfig(name_or_path=name, dtype=dtype))
    built.to(device)
    masks = warmup_trainable(built, "warmup")
    params = dict(built.named_parameters())
    wrong = {n: str(m.device) for n, m in masks.items() if m.device != params[n].device}
    assert masks and not wrong, f"row masks off their parameters' device: {wrong}"
    del built, params, masks

    entry = registry.get_recipe("v2p.train")
    cfg = load_config(
        entry.config_cls(),
        preset="tiny-cpu",
        presets=entry.presets,
        overrides=[
            f"model.name_or_path={name}",
            f"model.dtype={dtype}",
            "stage=warmup",
            "data.sources=[]",
            f"data.paths=[{SAMPLE}]",
            f"trainer.max_steps={STEPS}",
        ],
    )
    result, run = execute("v2p.train", entry.run_fn(), cfg, output_dir=out / "run", quiet=True)
    logged = [json.loads(x) for x in (run.dir / "metrics.jsonl").read_text().splitlines() if x]
    losses = [r["pointer_loss"] for r in logged if "pointer_loss" in r]
    assert len(losses) == STEPS, f"{len(losses)} pointer-loss rows, not {STEPS}"
    assert losses[-1] < losses[0], f"the pointer loss did not fall: {losses}"

    from PIL import Image

    from aworld_rl_v2p.data import read_aguvis
    from aworld_rl_v2p.inference import Grounder
    from aworld_rl_v2p.loading import load_v2p
    from aworld_rl_v2p.recipes.train import packaged

    trained, tokenizer, image_processor = load_v2p(
        str(result.outputs["model"]), dtype=dtype, device=device
    )
    rows = new_token_rows(trained).to(device)
    embed = trained.get_input_embeddings().weight
    base, _ = model_factory(ModelConfig(name_or_path=name, dtype=dtype))
    moved = (embed.float() - base.get_input_embeddings().weight.to(device).float()).abs().sum(-1)
    outside = int(((moved > 0) & ~rows.bool()).sum())
    assert outside == 0, f"{outside} embedding rows outside V2P's tokens moved in the warm-up"
    sample = read_aguvis(packaged(SAMPLE))[0]
    grounder = Grounder(
        trained, tokenizer, image_processor, max_pixels=cfg.data.max_pixels, min_pixels=3136
    )
    with Image.open(sample.image) as image:
        (grounding,) = grounder.predict([image], [sample.instruction])
    assert grounding.points, "no point read out"
    point = grounding.points[0]
    assert 0 <= point.x <= 1 and 0 <= point.y <= 1, f"point {point} outside the screenshot"
    return {
        "first_pointer_loss": round(losses[0], 4),
        "last_pointer_loss": round(losses[-1], 4),
        "new_rows_moved": int((moved > 0).sum()),
        "point": [round(point.x, 3), round(point.y, 3)],
        "device": str(embed.device),
        "param_dtype": str(embed.dtype).removeprefix("torch."),
    }
