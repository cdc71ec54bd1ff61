import pytest

from aworld_rl_rag_r1.reward import (
    em_format_reward,
    em_reward,
    exact_match,
    extract_answer,
    f1,
    f1_reward,
    format_score,
    normalize_answer,
    valid_sequence,
)


@pytest.mark.parametrize(
    ("text", "squad", "eval_style"),
    [
        ("The Eiffel Tower!", "eiffel tower", "eiffel tower"),
        ("  an   Apple a day ", "apple day", "apple day"),
        ("well-known", "wellknown", "well known"),
        ("snake_case", "snakecase", "snake case"),
        ("‘Quoted’ `x´", "‘quoted’ x´", "quoted x"),
        ("Theatre", "theatre", "theatre"),  # 'the' only as a word
    ],
)
def test_normalisers(text, squad, eval_style):
    assert normalize_answer(text) == squad
    assert normalize_answer(text, "eval") == eval_style


def test_exact_match_and_f1_by_hand():
    assert exact_match("the Beijing.", ["beijing"]) == 1.0
    assert exact_match("Beijing city", "Beijing") == 0.0
    assert exact_match(None, ["x"]) == 0.0
    # pred "new york city" vs gold "new york": P=2/3, R=1 -> F1 = 0.8
    assert f1("New York City", ["New York"]) == pytest.approx(0.8)
    assert f1("New York City", ["Boston", "york"]) == pytest.approx(0.5)
    assert f1("yes", ["no"]) == 0.0 and f1("Yes.", ["yes"]) == 1.0
    assert f1("", ["a thing"]) == 0.0


def test_last_answer_of_the_model_not_of_the_information():
    text = (
        "<think>t</think><search>q</search>\n<information>\nDoc 1: <answer>Wrong</answer>"
        "\n</information>\n<think>x</think><answer> first </answer><answer>Paris</answer>"
    )
    assert extract_answer(text) == "Paris"
    assert extract_answer("<information><answer>x</answer></information>") is None
    assert extract_answer("no answer here") is None


def test_trl_shaped_rewards_read_episode_messages():
    episode = [
        {"role": "assistant", "content": "<think>a</think><answer>The Paris</answer>"},
    ]
    golds = [["paris"], ["paris"], ["rome"]]
    completions = [episode, "<answer>Paris, France</answer>", episode]
    assert em_reward(completions, golds) == [1.0, 0.0, 0.0]
    assert f1_reward(completions, golds) == pytest.approx([1.0, 2 / 3, 0.0])
    with pytest.raises(ValueError, match="completions"):
        em_reward(completions, golds[:2])


@pytest.mark.parametrize(
    ("text", "valid"),
    [
        ("<think>a</think><answer>b</answer>", True),
        (
            "<think>a</think> <search>q</search>\n<information>d</information>"
            "<think>b</think><answer>c</answer>",
            True,
        ),
        ("<think>a</think>junk<answer>b</answer>", False),
        ("<answer>b</answer>", False),
        ("<think>a</think><search>q</search><think>b</think><answer>c</answer>", False),
        ("<think>a<think>b</think></think><answer>c</answer>", False),
        ("<think>a</think><answer>b</answer> trailing", False),
    ],
)
def test_search_r1_tag_grammar(text, valid):
    assert valid_sequence(text) is valid


def test_format_score_table():
    good = "<think>a</think><answer>Paris</answer>"
    assert format_score(good, ["paris"]) == 1.0
    assert format_score("x <answer>Paris</answer>", ["paris"]) == pytest.approx(0.8)
    assert format_score("<think>a</think><answer>Rome</answer>", ["paris"]) == 0.2
    assert format_score("x <answer>Rome</answer>", ["paris"]) == 0.1
    assert format_score("nothing", ["paris"]) == 0.0
    assert em_format_reward([good], [["paris"]]) == [1.0]
