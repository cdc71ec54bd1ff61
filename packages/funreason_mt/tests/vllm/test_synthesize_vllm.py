"""funreason_mt.synthesize for a few records with vLLM's own server playing the four agents (CPU,
a random tiny Qwen3: its replies are garbage, so every record is dropped and the run must still
complete, every call answered). Run by ``nox -s tests_vllm``."""

from __future__ import annotations

import pytest

pytest.importorskip("vllm")

from aworld_rl_core.config import load_config
from aworld_rl_core.registry import get_recipe
from aworld_rl_core.runs import execute


def test_synthesis_of_a_few_records_through_vllm(tmp_path, aworld_home, vllm_server):
    entry = get_recipe("funreason_mt.synthesize")
    cfg = load_config(
        entry.config_cls(),
        preset="tiny-cpu",
        presets=entry.presets,
        overrides=[
            "records=2",
            "agents.llm.provider=openai",
            f"agents.llm.base_url={vllm_server.base_url}",
            f"agents.llm.model={vllm_server.model}",
            "agents.llm.max_tokens=16",
            "agents.llm.temperature=0",
            "agents.llm.max_retries=0",
        ],
    )
    result, run = execute(
        "funreason_mt.synthesize", entry.run_fn(), cfg, output_dir=tmp_path / "run", quiet=True
    )
    m = result.metrics
    assert m["attempted"] == 2.0 and m["kept"] == 0.0  # random text passes no stage
    assert m["llm_errors"] == 0 and m["llm_calls"] >= 2
    assert "| round1/" in (run.dir / "report.md").read_text()
