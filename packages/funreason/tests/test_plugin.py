"""The plugin registers every recipe and the loss; importing it pulls in nothing heavy."""

from __future__ import annotations

import subprocess
import sys

from aworld_rl_funreason import plugin

RECIPES = ("funreason.refine", "funreason.sft", "funreason.self-refine", "funreason.eval")


def test_registrations_resolve():
    import importlib

    seen = {}

    def register(name, target=None, **kw):
        seen[name] = (target, kw)

    plugin.register_recipes(register)
    assert tuple(seen) == RECIPES
    for _, kw in seen.values():
        for key in ("config", "run"):
            mod, attr = kw[key].split(":")
            assert callable(getattr(importlib.import_module(mod), attr))
    losses = {}
    plugin.register_losses(lambda name, target, **kw: losses.update({name: (target, kw["kind"])}))
    assert losses == {"funreason.srml": ("aworld_rl_funreason.loss:SRMLLoss", "token")}
    datasets = {}
    plugin.register_datasets(lambda name, target, **kw: datasets.update({name: target}))
    assert set(datasets) == {"funreason.samples", "funreason.bfcl"}


def test_samples_dataset_builds_records(tmp_path, monkeypatch):
    from aworld_rl_funreason.datasets import samples_dataset

    monkeypatch.setenv("BFCL_PROJECT_ROOT", str(tmp_path))
    records = samples_dataset("aworld_rl_funreason:sample_data/xlam_tiny.jsonl")
    assert [r.id for r in records] == ["0", "1"]
    assert records[1].ground_truth == (
        "[get_weather(city='Madrid', days=2), get_weather(city='Lisbon', days=2)]"
    )
    assert records[0].messages[-1]["content"] == "[get_weather(city='Berlin')]"


def test_plugin_import_is_light():
    code = (
        "import sys, aworld_rl_funreason.plugin, aworld_rl_funreason.recipes.refine;"
        "heavy = [m for m in ('torch', 'transformers', 'trl', 'bfcl_eval', 'httpx') "
        "if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
