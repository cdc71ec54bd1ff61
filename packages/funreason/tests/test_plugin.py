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
    trainers = {}
    plugin.register_trainers(lambda name, target, **kw: trainers.update({name: target}))
    assert trainers == {"funreason.srml": "aworld_rl_funreason.loss:srml_default"}


def test_plugin_import_is_light():
    code = (
        "import sys, aworld_rl_funreason.plugin, aworld_rl_funreason.recipes.refine;"
        "heavy = [m for m in ('torch', 'transformers', 'trl', 'bfcl_eval', 'httpx') "
        "if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
