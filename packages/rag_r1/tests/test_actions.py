import pytest

from aworld_rl_rag_r1.actions import Action, cut_turn, parse_action, parse_queries, split_commas


def test_cut_after_first_search_else_first_answer():
    assert cut_turn("<search>a</search> <answer>b</answer>") == "<search>a</search>"
    assert (
        cut_turn("x<answer>b</answer><search>a</search>") == "x<answer>b</answer><search>a</search>"
    )
    assert cut_turn("<answer>b</answer> more") == "<answer>b</answer>"
    assert cut_turn("no tags") == "no tags"


def test_first_action_wins():
    assert parse_action("<think>t</think><search> q1 </search>").kind == "search"
    assert parse_action("<answer> Paris </answer><search>q</search>").content == "Paris"
    assert parse_action("<search>unclosed").kind == "invalid"
    assert parse_action("<search>a</answer>").kind == "invalid"


@pytest.mark.parametrize(
    ("body", "quoted", "naive"),
    [
        ("a, b ,c", ["a", "b", "c"], ["a", "b", "c"]),
        ('"Paris, Texas" population, mayor', ['"Paris, Texas" population', "mayor"], None),
        ('"Paris, Texas", Dallas', ["Paris, Texas", "Dallas"], ['"Paris', 'Texas"', "Dallas"]),
        ("“Paris, Texas”, Dallas", ["Paris, Texas", "Dallas"], None),
        ('unbalanced "quote, here', ['unbalanced "quote', "here"], None),
        (" , ,", [], []),
    ],
)
def test_comma_split(body, quoted, naive):
    assert split_commas(body) == quoted
    if naive is not None:
        assert split_commas(body, keep_quoted=False) == naive


def test_parse_queries_formats_and_limit():
    assert parse_queries('["a, b", "c"]', fmt="json").queries == ["a, b", "c"]
    assert parse_queries('["a, b", "c"]', fmt="auto").queries == ["a, b", "c"]
    assert parse_queries("a, b", fmt="auto").queries == ["a", "b"]
    assert "JSON list" in parse_queries("[1, 2]", fmt="json").error
    assert "JSON list" in parse_queries("a, b", fmt="json").error
    four = parse_queries("a, b, c, d")
    assert four.queries == ["a", "b", "c"] and four.dropped == 1
    rejected = parse_queries("a, b, c, d", over_limit="invalid")
    assert rejected.queries == [] and "limit is 3" in rejected.error
    assert parse_queries("a, b, c, d", max_queries=0).queries == ["a", "b", "c", "d"]
    assert parse_queries("   ").error == "the search block holds no query"


def test_parse_action_matches_the_regex_and_is_linear():
    import re

    regex = re.compile(r"<(search|answer)>(.*?)</\1>", re.DOTALL)
    cases = [
        "<search>a</search>",
        "<search><answer>x</answer>",
        "<answer>y<search>a</search></answer>",
        "<search>a<search>b</search>",
        "x</search><search>",
        "<search></search>",
        "<answer> z </answer><search>q</search>",
        "<search>open <answer>shut</answer> <search>late</search>",
        "nothing here",
    ]
    for text in cases:
        m = regex.search(text)
        want = Action("invalid") if m is None else Action(m.group(1), m.group(2).strip())
        assert parse_action(text) == want, text
    # 50,000 unclosed tags: the old regex scan was quadratic (~90 s); this is one pass
    assert parse_action("<search>" * 50_000 + "<answer>ok</answer>") == Action("answer", "ok")
