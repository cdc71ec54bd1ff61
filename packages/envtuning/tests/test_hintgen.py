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
            _proposal("Call cd(folder='docs') then cd(folder='x')."),
            _proposal("cd takes one folder name at a time; list folders with ls()."),
        ]
    )
    verdicts = iter(
        [
            {
                **GOOD_VERDICT,
                "solution_leakage": True,
                "overall_approved": False,
                "suggestions": "do not reveal the calls",
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
    assert "do not reveal the calls" in seen[1]
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
