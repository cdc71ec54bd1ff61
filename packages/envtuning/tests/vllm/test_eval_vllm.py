"""envtuning.eval against vLLM's own server (CPU, a random tiny Qwen3 whose replies are forced by
regex), in BFCL's protocol and EnvTuning's, and through a ``--reasoning-parser qwen3`` server.
Run by ``nox -s tests_vllm``."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

pytest.importorskip("vllm")

from aworld_rl_core import registry
from aworld_rl_core.config import load_config
from aworld_rl_core.runs import execute
from aworld_rl_core.testing.vllm_server import forced

STEPS = 3  # env.max_steps_per_turn
CALL_PWD_BFCL = r"\[pwd\(\)\]"
CALL_PWD_ENVTUNING = (
    r'<think>look</think><tool_call>\[\{"name": "pwd", "arguments": \{\}\}\]</tool_call>'
)


def _eval(tmp_path, server, protocol, regex, name):
    entry = registry.get_recipe("envtuning.eval")
    overrides = [
        "limit=2",
        "categories=[multi_turn_base]",
        f"protocol={protocol}",
        f"llm.base_url={server.base_url}",
        f"llm.model={server.model}",
        "llm.temperature=0",
        "llm.max_tokens=128",
        "llm.max_retries=0",
        f"env.max_steps_per_turn={STEPS}",
    ]
    cfg = load_config(entry.config_cls(), overrides=overrides)
    cfg = replace(cfg, llm=replace(cfg.llm, extra_body=forced(regex)))
    result, run = execute(
        "envtuning.eval", entry.run_fn(), cfg, output_dir=tmp_path / name, quiet=True
    )
    outcomes = [json.loads(line) for line in (run.dir / "outcomes.jsonl").open()]
    return result, outcomes


def test_bfcl_protocol_force_quits_an_agent_that_only_calls(tmp_path, aworld_home, vllm_server):
    result, outcomes = _eval(tmp_path, vllm_server, "bfcl", CALL_PWD_BFCL, "bfcl")
    assert result.metrics["llm_errors"] == 0
    # BFCL force-quits the entry at the first reply past STEPS replies with calls in a turn
    assert result.metrics["llm_calls"] == 2 * (STEPS + 1)
    figures = [(o["steps"], o["force_quit"], o["valid"]) for o in outcomes]
    assert figures == [(STEPS + 1, True, False)] * 2
    assert result.metrics["accuracy/average"] == 0.0


def _envtuning_figures(outcomes):
    return [(o["steps"], o["tool_calls"], o["format_errors"], o["valid"]) for o in outcomes]


def test_envtuning_protocol_counts_calls_and_no_format_errors(tmp_path, aworld_home, vllm_server):
    result, outcomes = _eval(tmp_path, vllm_server, "envtuning", CALL_PWD_ENVTUNING, "envtuning")
    assert result.metrics["llm_errors"] == 0
    for o in outcomes:  # every reply one call; each turn moved on after STEPS replies
        turns = len(o["turn_scores"])
        assert (o["steps"], o["tool_calls"], o["format_errors"]) == (
            STEPS * turns,
            STEPS * turns,
            0,
        )
    assert result.metrics["llm_calls"] == sum(o["steps"] for o in outcomes)


def test_a_reasoning_parser_server_gives_the_same_evaluation(
    tmp_path, aworld_home, vllm_server, vllm_reasoning_server
):
    _, plain = _eval(tmp_path, vllm_server, "envtuning", CALL_PWD_ENVTUNING, "plain")
    _, parsed = _eval(tmp_path, vllm_reasoning_server, "envtuning", CALL_PWD_ENVTUNING, "parsed")
    assert _envtuning_figures(parsed) == _envtuning_figures(plain)
    assert all(o["format_errors"] == 0 and o["tool_calls"] > 0 for o in parsed)
