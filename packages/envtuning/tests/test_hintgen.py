"""The semi-automatic hint workflow with scripted generator and judge (test doubles)."""

import json

import pytest

from aworld_rl_envtuning.hintgen import (
    FailureGroup,
    approved,
    error_pattern,
    group_failures,
    make_hint,
    parse_json_object,
)

ERROR = '{"error": "cd: \'docs/x\': No such file or directory"}'


def test_error_pattern_generalises_values():
    import re

    pattern = error_pattern(ERROR)
    assert re.search(pattern, '{"error": "cd: \'other/y\': No such file or directory"}')
    assert not re.search(pattern, '{"error": "cd: \'x\': File exists"}')
    assert re.fullmatch(error_pattern("Invalid speed 120"), "Invalid speed 7")
    bare = error_pattern("cd: a/b: Unsupported path.")
    assert re.fullmatch(bare, "cd: x/y/z: Unsupported path.")
    assert not re.fullmatch(bare, "mv: x/y: Unsupported path.")


def test_group_failures_counts_and_ranks():
    failures = [
        {"class": "GorillaFileSystem", "method": "cd", "error": ERROR.replace("docs", d)}
        for d in ("a", "b", "c")
    ] + [{"class": "TravelAPI", "method": "get_flight_cost", "error": "Error: No route"}]
    groups = group_failures(failures, min_count=2)
    assert [(g.method, g.count) for g in groups] == [("cd", 3)]
    assert len(group_failures(failures, min_count=1)) == 2


def test_parse_json_object_finds_fenced_and_nested():
    assert parse_json_object('noise ```json\n{"a": {"b": "}"}}\n``` tail') == {"a": {"b": "}"}}
    assert parse_json_object("no json") is None
    assert parse_json_object('{broken} {"ok": 1}') == {"ok": 1}


GOOD_VERDICT = {
    "reasoning": "fine",
    "solution_leakage": False,
    "exploration_constraint": False,
    "actionability": True,
    "hint_quality": "good",
    "overall_approved": True,
    "suggestions": "",
}


def test_constitution():
    assert approved(GOOD_VERDICT)
    for key, bad in [
        ("solution_leakage", True),
        ("exploration_constraint", True),
        ("actionability", False),
        ("hint_quality", "poor"),
        ("overall_approved", False),
    ]:
        assert not approved({**GOOD_VERDICT, key: bad})


def _proposal(text):
    return json.dumps(
        {
            "reasoning": "r",
            "need_augmentation": True,
            "error_category": "state_prerequisite",
            "augmentation_type": "suggest_prerequisite",
            "augmented_feedback": text,
        }
    )


@pytest.fixture
def group():
    g = FailureGroup("GorillaFileSystem", "cd", error_pattern(ERROR), count=3)
    g.examples = [{"question": "go to docs", "arguments": {"folder": "docs/x"}, "error": ERROR}]
    return g


def test_rejected_then_approved_hint_uses_judge_feedback(group):
    proposals = iter(
        [
            _proposal("Never use cd; only ls works here."),
            _proposal("cd takes one folder name at a time; list folders with ls()."),
        ]
    )
    verdicts = iter(
        [
            {
                **GOOD_VERDICT,
                "exploration_constraint": True,
                "overall_approved": False,
                "suggestions": "do not forbid cd",
            },
            GOOD_VERDICT,
        ]
    )
    seen = []

    def generator(messages):
        seen.append(messages[-1]["content"])
        return next(proposals)

    outcome = make_hint(
        group, generator, lambda m: json.dumps(next(verdicts)), ["cd(folder='docs')"], hint_id="h1"
    )
    assert [a.approved for a in outcome.attempts] == [False, True]
    assert "do not forbid cd" in seen[1]
    assert outcome.hint.hint.startswith("cd takes one folder name")
    assert outcome.hint.applies("GorillaFileSystem", "cd", ERROR.replace("docs/x", "a/b"))


def test_gives_up_after_max_attempts(group):
    outcome = make_hint(
        group, lambda m: "not json", lambda m: "{}", [], hint_id="h", max_attempts=3
    )
    assert len(outcome.attempts) == 3 and outcome.hint is None


def test_generator_may_decline(group):
    decline = json.dumps({"reasoning": "clear already", "need_augmentation": False})
    outcome = make_hint(group, lambda m: decline, lambda m: "{}", [], hint_id="h")
    assert outcome.hint is None and len(outcome.attempts) == 1


def test_a_hint_that_gives_the_call_away_is_rejected_whatever_the_judge_says(group):
    """A scripted judge that approves everything, and a leaking first candidate."""
    proposals = iter(
        [
            _proposal("Use cd with folder docs, then cd into xy."),  # the GT calls' values
            _proposal("cd takes one folder name at a time; list folders with ls()."),
        ]
    )
    seen, judged = [], []

    def generator(messages):
        seen.append(messages[-1]["content"])
        return next(proposals)

    def judge(messages):
        judged.append(messages[-1]["content"])
        return json.dumps(GOOD_VERDICT)

    truth = ["cd(folder='docs')", "cd(folder='xy')"]
    outcome = make_hint(group, generator, judge, truth, hint_id="h1")
    first, second = outcome.attempts
    assert not first.approved and first.verdict["solution_leakage"] is True
    assert second.approved and outcome.hint.hint.startswith("cd takes one folder")
    assert len(judged) == 1 and "cd takes one folder" in judged[0]  # the leak never reached it
    assert "gives away cd(folder='docs'), cd(folder='xy')" in seen[1]


def test_revealed_calls_needs_the_function_and_one_of_its_values():
    from aworld_rl_envtuning.augmentation import revealed_calls

    truth = ["pressBrakePedal(pedalPosition=1.0)", "list_all_airports()", "sort('report.pdf')"]
    assert revealed_calls("pressBrakePedal with pedalPosition 1.0", truth) == [truth[0]]
    assert revealed_calls("press the brake (pressBrakePedal) fully", truth) == []
    assert revealed_calls("set it to 1.0 with the brake function", truth) == []
    assert revealed_calls("pressBrakePedal to 1.05", truth) == []  # another number
    assert revealed_calls("call list_all_airports() first", truth) == []  # a direction
    assert revealed_calls("SORT the file REPORT.PDF", truth) == [truth[2]]  # positional, any case


def test_generator_prompt_carries_the_domains_hand_written_examples(group):
    import inspect

    from aworld_rl_core.tooluse.bfcl.apis import OFFLINE_CLASSES, api_class
    from aworld_rl_envtuning.hintgen import examples_for, generator_messages, hint_examples

    examples = hint_examples()
    assert sorted(examples) == sorted(OFFLINE_CLASSES)  # every multi-turn domain
    for name, items in examples.items():
        assert 3 <= len(items) <= 5, name
        methods = dict(inspect.getmembers(api_class(name), inspect.isfunction))
        for item in items:
            assert item["function"] in methods, (name, item["function"])
            assert item["hint"] and item["error"]
    prompt = generator_messages(group)[-1]["content"]
    for item in examples["GorillaFileSystem"]:
        assert item["hint"] in prompt
    assert examples["TravelAPI"][0]["hint"] not in prompt
    assert len(examples_for("SomethingElse")) == len(examples)  # one per domain
