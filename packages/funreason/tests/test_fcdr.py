"""FCDR on crafted samples that must be kept, dropped, regenerated or sent to the hard pool."""

from __future__ import annotations

import asyncio

import pytest

from aworld_rl_funreason.data import FcSample
from aworld_rl_funreason.fcdr import STAGES, FcdrSettings, count_outcomes, parse_judge, parse_new_fc
from aworld_rl_funreason.fcdr import refine_sample as _refine
from aworld_rl_funreason.testing import ScriptedJudge


def refine(sample, judge, **settings):
    return asyncio.run(_refine(sample, judge, FcdrSettings(**settings)))


def sample(weather_tool, query, answer, reasoning="The user asks for weather; call it."):
    return FcSample(id=query, query=query, tools=[weather_tool], answer=answer, reasoning=reasoning)


def test_parse_judge_and_new_fc():
    assert parse_judge("<think><judge>False</judge>?</think> ok <judge> True </judge>") is True
    assert parse_judge("<judge>false.</judge>") is False
    assert parse_judge("no tag") is None
    assert parse_judge("<judge>maybe</judge>") is None
    assert parse_new_fc("x <NewFC> [f(a=1)] </NewFC>") == "[f(a=1)]"
    assert parse_new_fc("<judge>True</judge>") is None


def test_clean_sample_is_kept_unchanged_and_the_judge_checks_every_stage(weather_tool):
    s = sample(weather_tool, "weather in Paris", "[get_weather(city='Paris')]")
    judge = ScriptedJudge()
    out = refine(s, judge)
    assert out.status == "kept"
    assert out.sample.answer == "[get_weather(city='Paris')]"
    assert [(r.stage, r.verdict, r.by) for r in out.trail] == [
        (stage, "pass", "judge") for stage in STAGES
    ]
    assert [c[0] for c in judge.calls] == list(STAGES)  # the paper: the judge checks all five


def test_rules_decide_saves_the_judge_stages_1_and_5(weather_tool):
    s = sample(weather_tool, "weather in Paris", "[get_weather(city='Paris')]")
    judge = ScriptedJudge()
    out = refine(s, judge, rules_decide=True)
    assert [(r.stage, r.by) for r in out.trail] == [
        ("classify", "rule"),
        ("query_tools", "judge"),
        ("cot", "judge"),
        ("function_params", "judge"),
        ("format", "rule"),
    ]
    assert [c[0] for c in judge.calls] == ["query_tools", "cot", "function_params"]


def test_leading_space_is_rewritten_by_rule_then_judged(weather_tool):
    s = sample(weather_tool, "weather in Rome", "[ get_weather(city='Rome', days=2)]")
    judge = ScriptedJudge()
    out = refine(s, judge)
    assert out.status == "kept"
    assert out.sample.answer == "[get_weather(city='Rome', days=2)]"
    assert [(r.verdict, r.by) for r in out.trail[-2:]] == [
        ("regenerated", "rule"),
        ("pass", "judge"),
    ]
    assert "[get_weather(city='Rome', days=2)]" in judge.last_messages["format"]  # canonical


def test_a_regenerated_answer_gets_its_cot_rewritten_and_rechecked(weather_tool):
    fix = "<judge>False</judge><NewFC>[get_weather(city='Lima')]</NewFC>"
    s = sample(weather_tool, "weather in Lima", "[get_weather(city='Lim')]", "Old CoT for Lim.")
    judge = ScriptedJudge({("function_params", "weather in Lima"): fix})
    out = refine(s, judge)
    assert out.status == "kept" and out.sample.answer == "[get_weather(city='Lima')]"
    assert out.sample.reasoning == "The user wants the weather, so call get_weather."  # teacher
    assert [c[0] for c in judge.calls] == [
        "classify", "query_tools", "cot", "function_params", "teacher", "cot", "format",
    ]  # fmt: skip
    assert ("cot", "regenerated", "teacher") in [(r.stage, r.verdict, r.by) for r in out.trail]
    rejected = ScriptedJudge(
        {("function_params", "weather in Lima"): fix}, after_teacher={"cot": "<judge>False</judge>"}
    )
    out = refine(s, rejected)
    assert out.status == "dropped" and out.reason == "cot (after function_params): judged False"
    no_teacher = refine(s, judge, generate_cot=False)
    assert no_teacher.status == "kept" and no_teacher.sample.reasoning is None


def test_statement_is_kept_as_statement(weather_tool):
    s = sample(weather_tool, "tell a joke", "Sorry, none of the tools can tell jokes.")
    judge = ScriptedJudge({("classify", "tell a joke"): "<judge>False</judge>"})
    out = refine(s, judge)
    assert out.status == "statement"
    assert judge.calls == [("classify", "tell a joke")]


def test_unsolvable_query_is_dropped(weather_tool):
    s = sample(weather_tool, "book a flight", "[get_weather(city='Oslo')]")
    judge = ScriptedJudge({("query_tools", "book a flight"): "<judge>False</judge>"})
    out = refine(s, judge)
    assert out.status == "dropped"
    assert out.reason == "query_tools: judged False"


def test_bad_cot_is_dropped(weather_tool):
    s = sample(weather_tool, "weather in Kyiv", "[get_weather(city='Kyiv')]", "I like trains.")
    judge = ScriptedJudge({("cot", "weather in Kyiv"): "<judge>False</judge>"})
    assert refine(s, judge).status == "dropped"


def test_unknown_parameter_fails_by_rule_and_is_regenerated(weather_tool):
    s = sample(weather_tool, "weather in Lima", "[get_weather(town='Lima')]")
    fix = "<judge>False</judge><NewFC>[get_weather(city='Lima')]</NewFC>"
    judge = ScriptedJudge({("function_params", "weather in Lima"): fix})
    out = refine(s, judge)
    assert out.status == "kept"
    assert out.sample.answer == "[get_weather(city='Lima')]"
    rec = next(r for r in out.trail if r.stage == "function_params")
    assert (rec.verdict, rec.by) == ("regenerated", "judge")
    assert "unknown parameter 'town'" in rec.reason
    assert out.sample.meta["function_params_previous_answer"] == "[get_weather(town='Lima')]"


def test_wrong_value_regenerated_from_judge(weather_tool):
    s = sample(weather_tool, "weather in Bern", "[get_weather(city='Zurich')]")
    fix = '<judge>False</judge><NewFC>[get_weather(city="Bern")]</NewFC>'
    out = refine(s, ScriptedJudge({("function_params", "weather in Bern"): fix}))
    assert out.sample.answer == "[get_weather(city='Bern')]"
    assert out.status == "kept"


def test_invalid_regeneration_goes_to_hard_pool(weather_tool):
    s = sample(weather_tool, "weather in Nice", "[get_weather(city='Paris')]")
    bad = "<judge>False</judge><NewFC>[get_weather(place='Nice')]</NewFC>"
    out = refine(s, ScriptedJudge({("function_params", "weather in Nice"): bad}))
    assert out.status == "hard"
    assert "unknown parameter 'place'" in out.reason


def test_hard_pool_mode_sends_answer_failures_to_the_pool(weather_tool):
    s = sample(weather_tool, "weather in Pisa", "[get_weather(city='Rome')]")
    judge = ScriptedJudge({("function_params", "weather in Pisa"): "<judge>False</judge>"})
    out = refine(s, judge, answer_fail="hard_pool")
    assert out.status == "hard"


def test_unparseable_answer_judged_call_is_fixed_in_format_stage(weather_tool):
    s = sample(weather_tool, "weather in Bonn", "get_weather city=Bonn")
    judge = ScriptedJudge(
        {
            ("classify", "weather in Bonn"): "<judge>True</judge>",
            ("function_params", "weather in Bonn"): (
                "<judge>False</judge><NewFC>[get_weather(city='Bonn')]</NewFC>"
            ),
        }
    )
    out = refine(s, judge)
    assert out.status == "kept"
    assert out.sample.answer == "[get_weather(city='Bonn')]"


def test_missing_reasoning_is_generated_by_the_teacher(weather_tool):
    s = sample(weather_tool, "weather in Graz", "[get_weather(city='Graz')]", reasoning=None)
    out = refine(s, ScriptedJudge())
    assert out.status == "kept"
    assert out.sample.reasoning == "The user wants the weather, so call get_weather."
    assert ("cot_generation", "pass", "teacher") in [(r.stage, r.verdict, r.by) for r in out.trail]


def test_teacher_without_reasoning_drops(weather_tool):
    s = sample(weather_tool, "weather in Linz", "[get_weather(city='Linz')]", reasoning=None)
    out = refine(s, ScriptedJudge({("teacher", "weather in Linz"): "[get_weather(city='Linz')]"}))
    assert out.status == "dropped" and out.reason.startswith("cot_generation")


def test_no_verdict_is_retried_then_dropped(weather_tool):
    s = sample(weather_tool, "weather in Riga", "[get_weather(city='Riga')]")
    judge = ScriptedJudge({("query_tools", "weather in Riga"): "hmm, hard to say"})
    out = refine(s, judge, judge_retries=2)
    assert out.status == "dropped"
    assert judge.calls.count(("query_tools", "weather in Riga")) == 3


def test_judge_only_mode_asks_every_stage(weather_tool):
    s = sample(weather_tool, "weather in Kiel", "[get_weather(city='Kiel')]")
    judge = ScriptedJudge()
    out = refine(s, judge, deterministic=False)
    assert out.status == "kept"
    assert [c[0] for c in judge.calls] == [
        "classify",
        "query_tools",
        "cot",
        "function_params",
        "format",
    ]


def test_counts(weather_tool):
    judge = ScriptedJudge({("query_tools", "b"): "<judge>False</judge>"})
    outs = [refine(sample(weather_tool, q, "[get_weather(city='X')]"), judge) for q in "abc"]
    counts = count_outcomes(outs)
    assert counts["status"] == {"kept": 2, "dropped": 1}
    assert counts["stages"]["query_tools/fail/judge"] == 1
    assert counts["stages"]["format/pass/judge"] == 2


def test_unknown_stage_rejected():
    with pytest.raises(ValueError, match="unknown FCDR stages"):
        FcdrSettings(stages=("classify", "vibes"))


def test_without_a_judge_only_rules_decide(weather_tool):
    good = refine(sample(weather_tool, "a", "[ get_weather(city='A')]"), None)
    assert good.status == "kept" and good.sample.answer == "[get_weather(city='A')]"
    assert [(r.stage, r.verdict) for r in good.trail] == [
        ("classify", "pass"),
        ("query_tools", "skipped"),
        ("cot", "skipped"),
        ("function_params", "pass"),
        ("format", "regenerated"),
    ]
    bad = refine(sample(weather_tool, "b", "[get_weather(town='B')]"), None)
    assert bad.status == "hard" and "unknown parameter 'town'" in bad.reason
    text = refine(sample(weather_tool, "c", "I need the city name."), None)
    assert text.status == "statement"
    broken = refine(sample(weather_tool, "d", "[get_weather(city='D'"), None)
    assert broken.status == "hard"
    no_cot = refine(sample(weather_tool, "e", "[get_weather(city='E')]", None), None)
    assert no_cot.status == "dropped" and "no teacher" in no_cot.trail[-1].reason


def test_fcdr_runs_on_core_pipeline_with_yields_per_stage(weather_tool, tmp_path):
    """A judge that first gives no verdict on query_tools: asked again (a pipeline
    regeneration), the sample passes at attempt 2; the yields count it and every call."""
    from aworld_rl_funreason.fcdr import FcdrItem, fcdr_pipeline, outcome_of

    class FirstNoVerdict(ScriptedJudge):
        def reply_for(self, messages):
            text = super().reply_for(messages)
            first = self.calls.count(self.calls[-1]) == 1
            return "hmm" if first and self.calls[-1][0] == "query_tools" else text

    judge = FirstNoVerdict({("query_tools", "b"): "<judge>False</judge>"})
    samples = [sample(weather_tool, q, "[get_weather(city='X')]") for q in "ab"]
    pipe = fcdr_pipeline(FcdrSettings(), judge)
    report = asyncio.run(pipe.run([FcdrItem(s) for s in samples], tmp_path / "r.jsonl"))
    stats = report.stats.to_dict()
    assert stats["statuses"] == {"dropped": 1, "kept": 1}
    assert stats["stages"]["query_tools"]["passed_at"] == {"2": 1}
    assert stats["stages"]["query_tools"]["regenerated"] == 2
    assert stats["stages"]["query_tools"]["failed"] == {"dropped: query_tools: judged False": 1}
    assert stats["stages"]["query_tools"]["calls"] == 4 and stats["stages"]["cot"]["calls"] == 1
    assert stats["calls_per_kept"] == 6.0  # classify, query_tools twice, cot, fn/params, format
    kept = next(r for r in report.records if r["status"] == "kept")
    assert [t["stage"] for t in kept["item"]["trail"]] == list(STAGES)
    direct = refine(samples[0], FirstNoVerdict())
    assert [(r.stage, r.verdict) for r in direct.trail][1] == ("query_tools", "pass")
    assert outcome_of("kept", FcdrItem(samples[0])).status == "kept"
