"""Recipe ``core.bfcl-check``: the recipe contract, plus replay results and agreement."""

from __future__ import annotations

import json

import pytest

from aworld_rl_core.config import load_config
from aworld_rl_core.errors import ConfigError
from aworld_rl_core.recipes.bfcl_check import DEFAULT_CATEGORIES, BfclCheckConfig, run
from aworld_rl_core.runs import execute
from aworld_rl_core.testing.contracts import RecipeContract

PRESETS = "aworld_rl_core:configs/bfcl-check"


class TestBfclCheckRecipe(RecipeContract):
    recipe = "core.bfcl-check"

    def check_result(self, result, run_dir):
        pytest.importorskip("bfcl_eval")
        m = result.metrics
        assert m["entries"] == 5 * 7
        assert m["pass_rate"] == 1.0 and m["agreement"] == 1.0
        assert m["passed/multi_turn_miss_func"] == 5 and m["total/simple_python"] == 5
        summary = json.loads((run_dir / "summary.json").read_text())
        assert summary["bfcl_eval_version"] == "2026.3.23"
        assert (run_dir / "failures.jsonl").read_text() == ""
        report = (run_dir / "report.md").read_text()
        assert "| multi_turn_long_context | 5 | 5 | 100.00% |" in report


def test_presets():
    tiny = load_config(BfclCheckConfig, preset="tiny-cpu", presets=PRESETS)
    assert tiny.data.limit == 5 and "multi_turn_miss_func" in tiny.data.categories
    full = load_config(BfclCheckConfig, preset="full", presets=PRESETS)
    assert full.data.limit is None and full.data.categories == DEFAULT_CATEGORIES
    with pytest.raises(ConfigError):
        load_config(BfclCheckConfig, preset="tiny-cpu", presets=PRESETS, overrides=["data.limt=3"])


def test_failures_are_listed(tmp_path):
    pytest.importorskip("bfcl_eval")
    # live_simple_106-63-0's possible answer cannot be satisfied (an empty allowed list for a
    # required parameter): both checkers fail it, and it is the only failure listed.
    cfg = load_config(
        BfclCheckConfig,
        presets=PRESETS,
        overrides=["data.categories=[live_simple]", "data.limit=110"],
    )
    result, _ = execute("core.bfcl-check", run, cfg, output_dir=tmp_path, quiet=True)
    rows = [json.loads(x) for x in (tmp_path / "failures.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == ["live_simple_106-63-0"]
    assert rows[0]["bfcl_eval_valid"] is False and rows[0]["error_type"] == "type_error:simple"
    assert result.metrics["passed/live_simple"] == 109 and result.metrics["agreement"] == 1.0
