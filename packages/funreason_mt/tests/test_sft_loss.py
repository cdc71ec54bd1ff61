"""funreason_mt.sft's loss: funreason.srml through the registry when installed, else plain CE."""

import pytest
import srml_double

from aworld_rl_core import registry
from aworld_rl_core.config import load_config
from aworld_rl_core.errors import ConfigError
from aworld_rl_core.runs import execute
from aworld_rl_funreason_mt.recipes.sft import loss_installed


def tiny(tmp_path, *overrides):
    entry = registry.get_recipe("funreason_mt.sft")
    overrides = [
        "trainer.max_steps=1",
        "data.limit=1",
        "trainer.batch_size=1",
        "trainer.micro_batch_size=1",
        *overrides,
    ]
    cfg = load_config(
        entry.config_cls(), preset="tiny-cpu", presets=entry.presets, overrides=overrides
    )
    return execute("funreason_mt.sft", entry.run_fn(), cfg, output_dir=tmp_path / "run", quiet=True)


def test_the_paper_loss_is_srml_by_name():
    cfg = load_config(registry.get_recipe("funreason_mt.sft").config_cls())
    assert cfg.trainer.loss == "funreason.srml" and cfg.trainer.loss_options == {"alpha": 0.7}


def test_srml_resolved_through_the_registry(tmp_path, aworld_home, monkeypatch):
    # the double stands in for an installed funreason (its plugin name: names are namespaced)
    reg = registry.build_registry(extra=[("funreason", srml_double.SrmlDouble())])
    srml_double.CALLS.clear()
    with registry.use_registry(reg):
        assert loss_installed("funreason.srml")
        result, run = tiny(tmp_path)
    assert result.metrics["srml"] == 1.0
    assert srml_double.CALLS and srml_double.CALLS[0]["alpha"] == 0.7  # trainer.loss_options
    assert srml_double.CALLS[0]["think_tokens"] > 0  # the <think> spans reached the loss
    assert "`funreason.srml`" in (run.dir / "report.md").read_text()


def test_without_the_plugin_plain_cross_entropy_or_an_error(tmp_path, aworld_home, monkeypatch):
    monkeypatch.setenv("AWORLD_RL_DISABLE_PLUGINS", "funreason")  # as if it were not installed
    with registry.use_registry(registry.build_registry()):
        assert not loss_installed("funreason.srml")
        result, run = tiny(tmp_path / "ce")
        assert result.metrics["srml"] == 0.0 and result.metrics["global_step"] == 1
        assert "pip install aworld-rl-funreason" in (run.dir / "report.md").read_text()
        with pytest.raises(ConfigError, match="pip install aworld-rl-funreason"):
            tiny(tmp_path / "err", "loss_fallback=error")
