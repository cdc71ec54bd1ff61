import json

import pytest

from aworld_rl_core import registry
from aworld_rl_core.config import load_config
from aworld_rl_core.runs import execute


def _tiny_run(recipe, tmp_path, overrides, preset="tiny-cpu"):
    """Run ``recipe`` with a preset and overrides; (result, run directory) of a completed run."""
    entry = registry.get_recipe(recipe)
    cfg = load_config(entry.config_cls(), preset=preset, presets=entry.presets, overrides=overrides)
    result, run = execute(recipe, entry.run_fn(), cfg, output_dir=tmp_path / "run", quiet=True)
    assert json.loads((run.dir / "status.json").read_text())["status"] == "completed"
    return result, run.dir


@pytest.fixture
def tiny_run():
    """``tiny_run(recipe, tmp_path, overrides)``: a completed run's (result, run directory)."""
    return _tiny_run


@pytest.fixture(scope="session")
def tiny_v2p():
    """A tiny random V2P model (core's tiny Qwen2.5-VL + pointer tokens + head) and its parts."""
    from aworld_rl_core.models import tiny_vl_model
    from aworld_rl_v2p.modeling import from_base

    vl = tiny_vl_model(seed=0)
    model = from_base(vl.model, vl.tokenizer)
    model.eval()
    return model, vl.tokenizer, vl.image_processor


@pytest.fixture(scope="session")
def tiny_v2p_dir(tiny_v2p, tmp_path_factory):
    """The tiny V2P model saved where load_v2p (and so the recipes) can read it."""
    from aworld_rl_v2p.loading import save_v2p

    model, tokenizer, image_processor = tiny_v2p
    return save_v2p(model, tokenizer, image_processor, tmp_path_factory.mktemp("tiny-v2p"))


@pytest.fixture(scope="session")
def synthetic_dir(tmp_path_factory):
    """Twenty samples on ten rendered pages (chromium when installed, else PIL)."""
    from aworld_rl_v2p.synthetic import GenerateOptions, generate

    out = tmp_path_factory.mktemp("synthetic")
    generate(out, GenerateOptions(pages=10, resolutions=((448, 336), (392, 280)), seed=1))
    return out
