"""funreason.eval on a few single-turn BFCL entries against vLLM's own server (CPU, a random tiny
Qwen3 whose reply is forced by regex). Run by ``nox -s tests_vllm``."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

pytest.importorskip("vllm")

from aworld_rl_core.config import load_config
from aworld_rl_core.runs import execute
from aworld_rl_core.testing.vllm_server import forced
from aworld_rl_funreason.recipes.evaluate import EvalConfig, run

ABSTAIN = "I cannot answer that with these functions."


@pytest.mark.parametrize("protocol", ["bfcl", "funreason"])
def test_a_forced_abstention_passes_irrelevance_only(tmp_path, aworld_home, vllm_server, protocol):
    reply = ABSTAIN if protocol == "bfcl" else f"<think>none fits</think>{ABSTAIN}"
    cfg = load_config(
        EvalConfig,
        overrides=[
            f"protocol={protocol}",
            "source=model",
            "categories=[simple_python,irrelevance]",
            "limit=3",
            f"generator.base_url={vllm_server.base_url}",
            f"generator.model={vllm_server.model}",
            "generator.temperature=0",
            "generator.max_tokens=64",
            "generator.max_retries=0",
        ],
    )
    regex = "".join("\\" + c if c in ".^$*+?{}[]|()" else c for c in reply)
    cfg = replace(cfg, generator=replace(cfg.generator, extra_body=forced(regex)))
    result, _ = execute("funreason.eval", run, cfg, output_dir=tmp_path / "run", quiet=True)
    rows = [json.loads(x) for x in (tmp_path / "run/outputs.jsonl").read_text().splitlines()]
    assert len(rows) == 6 and all(r["output"] == reply for r in rows)
    assert all(r["answer"] == ABSTAIN for r in rows)  # funreason strips through </think>
    m = result.metrics
    assert (m["acc/irrelevance"], m["acc/simple_python"]) == (1.0, 0.0)  # no call: right, wrong
    assert (m["llm_calls"], m["llm_errors"]) == (6, 0)
    assert all(r["input_token_count"] > 50 and r["output_token_count"] > 0 for r in rows)
