"""``funreason.refine`` end to end: the tiny-cpu preset offline, and against a scripted judge
served by core's OpenAI-compatible test server."""

from __future__ import annotations

import json

from aworld_rl_core.config import load_config
from aworld_rl_core.llm.scripted_server import ScriptedLLMServer
from aworld_rl_core.runs import execute
from aworld_rl_funreason.recipes.refine import RefineConfig, run
from aworld_rl_funreason.testing import scripted_reply

PRESETS = "aworld_rl_funreason:configs/refine"


def _read(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_presets_load():
    for preset in ("tiny-cpu", "paper"):
        cfg = load_config(RefineConfig, preset=preset, presets=PRESETS)
        assert cfg.fcdr.stages[0] == "classify"
    assert load_config(RefineConfig, preset="paper", presets=PRESETS).teacher.temperature == 0.1


def test_tiny_cpu_preset_runs_offline(tmp_path):
    cfg = load_config(RefineConfig, preset="tiny-cpu", presets=PRESETS)
    result, _ = execute("funreason.refine", run, cfg, output_dir=tmp_path, quiet=True)
    kept = {r["id"]: r for r in _read(result.outputs["kept"])}
    hard = {r["id"]: r for r in _read(result.outputs["hard"])}
    assert set(kept) == {"fcdr-1", "fcdr-2", "fcdr-3", "fcdr-6"}
    assert kept["fcdr-2"]["sample"]["answer"] == "[get_weather(city='Rome', days=3)]"
    assert kept["fcdr-3"]["status"] == "statement"
    assert set(hard) == {"fcdr-4", "fcdr-5"}
    assert "is not of type number" in hard["fcdr-5"]["reason"]
    assert result.metrics["status/kept"] == 3
    assert "FCDR outcomes" in (tmp_path / "report.md").read_text()


def test_scripted_judge_regenerates_and_drops_then_resumes(tmp_path):
    fix4 = "<judge>False</judge><NewFC>[get_weather(city='Lima')]</NewFC>"
    fix5 = (
        "<judge>False</judge>"
        "<NewFC>[convert_currency(amount=100, source='USD', target='EUR')]</NewFC>"
    )
    script = {
        ("classify", "Tell me a joke."): "<judge>False</judge>",
        ("function_params", "Weather in Lima, please."): fix4,
        ("function_params", "Convert 100 USD to EUR."): fix5,
        ("query_tools", "Weather in Oslo and 50 EUR in NOK?"): "<judge>False</judge>",
    }
    reply = scripted_reply(script)
    with ScriptedLLMServer(reply) as server:
        overrides = [
            "fcdr.judge=llm",
            f"judge.base_url={server.base_url}",
            f"judge.model={server.model}",
            "judge.max_retries=0",
        ]
        cfg = load_config(RefineConfig, preset="tiny-cpu", presets=PRESETS, overrides=overrides)
        result, _ = execute("funreason.refine", run, cfg, output_dir=tmp_path, quiet=True)
        first_calls = len(server.chat_bodies)
        kept = {r["id"]: r["sample"]["answer"] for r in _read(result.outputs["kept"])}
        assert kept == {
            "fcdr-1": "[get_weather(city='Paris')]",
            "fcdr-2": "[get_weather(city='Rome', days=3)]",
            "fcdr-3": "Sorry, I can only look up the weather.",
            "fcdr-4": "[get_weather(city='Lima')]",
            "fcdr-5": "[convert_currency(amount=100, source='USD', target='EUR')]",
        }
        [dropped] = _read(result.outputs["dropped"])
        assert dropped["id"] == "fcdr-6" and dropped["reason"] == "query_tools: judged False"
        assert first_calls == len(reply.judge.calls) > 0
        # a resumed run finds every sample done and asks the judge nothing
        again, _ = execute(
            "funreason.refine", run, cfg, output_dir=tmp_path, resume=True, quiet=True
        )
        assert len(server.chat_bodies) == first_calls
        assert result.metrics["llm_calls"] == first_calls and result.metrics["llm_errors"] == 0
        assert again.metrics == {**result.metrics, "llm_calls": 0}  # this run asked nothing
