"""Import hygiene of the BFCL adapter, its install command, and the missing-package error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import aworld_rl_core.tooluse.bfcl as bfcl
from aworld_rl_core.tooluse.bfcl import _install, install

VENDOR_MODULES = [
    "openai",
    "anthropic",
    "cohere",
    "mistralai",
    "google.genai",
    "boto3",
    "qwen_agent",
    "dashscope",
    "sentence_transformers",
    "torch",
    "numpy",
    "transformers",
    "bfcl_eval.constants.model_config",
    "bfcl_eval.constants.eval_config",
    "bfcl_eval.utils",
]

SCRIPT = """
import json, sys
import aworld_rl_core.tooluse.bfcl as bfcl
entry = bfcl.load_category("multi_turn_long_context")[0]
verdict = bfcl.judge_multi_turn(entry, entry.ground_truth)
single = bfcl.load_category("simple")[0]
text = "[" + ", ".join(c.to_python() for c in bfcl.ground_truth_calls(single)) + "]"
ok = verdict.valid and bfcl.judge_single_turn(single, text).valid
for category in bfcl.JAVA_JS_CATEGORIES:  # BFCL's tree-sitter decoders and converters
    other = bfcl.load_category(category)[1]
    ok = ok and bfcl.judge_single_turn(other, bfcl.ground_truth_text(other)).valid
print(json.dumps({"ok": ok, "version": bfcl.version(), "modules": sorted(sys.modules)}))
"""


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if "__pycache__" not in p.parts}


def test_import_and_use_write_nothing_and_load_no_vendor_sdk(tmp_path):
    pytest.importorskip("bfcl_eval")
    package = _install.bfcl_root()
    before = _tree(package)
    env = {k: v for k, v in os.environ.items() if k != "BFCL_PROJECT_ROOT"}
    env["HOME"] = str(tmp_path)
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    report = json.loads(out.stdout)
    assert report["ok"] and report["version"] == _install.BFCL_EVAL_VERSION
    loaded = set(report["modules"])
    assert [m for m in VENDOR_MODULES if m in loaded] == []
    assert list(tmp_path.iterdir()) == []  # nothing written in the working or home folder
    assert _tree(package) == before  # nothing written into site-packages/bfcl_eval


def test_missing_bfcl_eval_names_the_install_command(monkeypatch):
    real = _install.importlib.util.find_spec
    monkeypatch.setattr(
        _install.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "bfcl_eval" else real(name, *a),
    )
    with pytest.raises(ImportError, match=r"python -m aworld_rl_core\.tooluse\.bfcl\.install"):
        bfcl.__getattr__("MultiTurnEpisode")
    with pytest.raises(bfcl.BfclNotInstalledError, match="--no-deps bfcl-eval==2026.3.23"):
        _install.data_dir()


def test_install_command(capsys):
    first, second = install.pip_commands()
    assert first == [sys.executable, "-m", "pip", "install", "--no-deps", "bfcl-eval==2026.3.23"]
    assert second[:4] == [sys.executable, "-m", "pip", "install"]
    assert set(second[4:]) == {
        "filelock",
        "tenacity",
        "mpmath",
        "overrides",
        "tree_sitter==0.21.3",
        "tree-sitter-java==0.21.0",
        "tree-sitter-javascript==0.21.4",
    }
    assert install.main(["--dry-run"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 2 and printed[0].endswith("--no-deps bfcl-eval==2026.3.23")
