"""A dead or misconfigured server fails envtuning.eval (status failed, with the reason) instead of
reporting a 0% made of errors; the error count is in every summary."""

from __future__ import annotations

import json
import socket

import pytest

from aworld_rl_core import registry
from aworld_rl_core.config import load_config
from aworld_rl_core.llm import LLMErrorBudgetExceeded, LLMPreflightError
from aworld_rl_core.llm.scripted_server import Fault, ScriptedLLMServer
from aworld_rl_core.runs import execute

FEW = ["limit=1", "categories=[multi_turn_base]", "llm.max_retries=0"]


def _eval(tmp_path, *overrides):
    entry = registry.get_recipe("envtuning.eval")
    cfg = load_config(entry.config_cls(), overrides=[*FEW, "llm.temperature=0", *overrides])
    return execute("envtuning.eval", entry.run_fn(), cfg, output_dir=tmp_path / "run", quiet=True)


def _status(tmp_path):
    return json.loads((tmp_path / "run" / "status.json").read_text())


def test_a_dead_server_fails_the_evaluation(tmp_path, aworld_home):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens once closed
    with pytest.raises(LLMPreflightError, match="cannot reach the model server"):
        _eval(tmp_path, f"llm.base_url=http://127.0.0.1:{port}/v1")
    status = _status(tmp_path)
    assert status["status"] == "failed"
    assert status["error"].startswith("LLMPreflightError: preflight: cannot reach")


@pytest.mark.parametrize("protocol", ["bfcl", "envtuning"])
def test_a_server_answering_400_fails_the_evaluation_with_the_count(
    tmp_path, aworld_home, protocol
):
    too_long = "This model's maximum context length is 2048 tokens."
    with (
        ScriptedLLMServer(Fault.error(400, too_long), model="Qwen/Qwen3-8B") as server,
        pytest.raises(LLMErrorBudgetExceeded, match="1 of 1 calls") as err,
    ):
        _eval(tmp_path, f"llm.base_url={server.base_url}", f"protocol={protocol}")
    assert too_long in str(err.value)
    status = _status(tmp_path)
    assert (
        status["status"] == "failed" and "LLMErrorBudgetExceeded: 1 of 1 calls" in status["error"]
    )
    metrics = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").open()]
    assert {"llm_calls": 1, "llm_errors": 1}.items() <= metrics[-1].items()


def test_a_healthy_run_reports_zero_errors_in_its_summary(tmp_path, aworld_home, capsys):
    with ScriptedLLMServer("I will just talk.", model="Qwen/Qwen3-8B") as server:
        result, _ = _eval(tmp_path, f"llm.base_url={server.base_url}")
    assert result.metrics["llm_errors"] == 0 and result.metrics["llm_calls"] >= 1
    assert _status(tmp_path)["status"] == "completed"
