"""rag_r1.eval against vLLM's own server (CPU, a random tiny Qwen3 forced by regex to search) with
``</search>`` as a stop string, over the in-process retriever. Run by ``nox -s tests_vllm``."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("vllm")

from aworld_rl_core.config import load_config
from aworld_rl_core.registry import get_recipe
from aworld_rl_core.runs import execute

SEARCH = "<think>look</think><search> alpha </search>"
SEARCHES = 2  # env.max_search_turns


def test_eval_stops_at_search_and_continues_after_the_information(
    tmp_path, aworld_home, vllm_server
):
    from dataclasses import replace

    from aworld_rl_core.testing.vllm_server import forced

    entry = get_recipe("rag_r1.eval")
    cfg = load_config(
        entry.config_cls(),
        preset="tiny-cpu",
        presets=entry.presets,
        overrides=[
            "world.encoder.name_or_path=hash",
            "agent=llm",  # the preset plays the scripted searcher
            "llm.provider=openai",
            f"llm.base_url={vllm_server.base_url}",
            f"llm.model={vllm_server.model}",
            "llm.temperature=0",
            "llm.max_tokens=64",
            "llm.max_retries=0",
            f"env.max_search_turns={SEARCHES}",
            "data.limit=3",
        ],
    )
    regex = "".join("\\" + c if c in ".^$*+?{}[]|()" else c for c in SEARCH)
    cfg = replace(cfg, llm=replace(cfg.llm, extra_body=forced(regex)))
    result, run = execute(
        "rag_r1.eval", entry.run_fn(), cfg, output_dir=tmp_path / "run", quiet=True
    )
    rows = [json.loads(line) for line in (run.dir / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 3
    for row in rows:
        text = row["completion"][0]["content"]
        # vLLM stopped at </search> (not in its text): the engine put it back, the retriever
        # answered inline, and the model continued the same assistant turn
        assert row["searches"] == SEARCHES
        assert text.count("<information>") == SEARCHES
        # the answer turn searched again: cut at </search> too, and no retrieval
        assert text.count("<search> alpha </search>") == SEARCHES + 1
        assert text.endswith("<search> alpha </search>")
        assert row["em"] == 0.0
    m = result.metrics
    assert m["llm_errors"] == 0 and m["synthetic/searches_per_question"] == SEARCHES
