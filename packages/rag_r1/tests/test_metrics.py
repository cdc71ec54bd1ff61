import pytest

from aworld_rl_rag_r1.metrics import rollout_metrics


def test_rollout_metrics_by_hand():
    infos = [
        {
            "turns": 3,
            "searches": 2,
            "queries": 5,
            "invalid_actions": 1,
            "em": 1.0,
            "f1": 1.0,
            "answer": "a",
            "retrieval_s": 0.2,
            "step_s": 0.5,
            "dropped_queries": 1,
        },
        {
            "turns": 2,
            "searches": 1,
            "queries": 1,
            "invalid_actions": 0,
            "em": 0.0,
            "f1": 0.5,
            "answer": None,
            "retrieval_s": 0.1,
            "step_s": 0.5,
        },
    ]
    m = rollout_metrics(infos)
    assert m["searches_per_question"] == 1.5 and m["queries_per_search"] == 2.0
    assert m["valid_action_rate"] == pytest.approx(1 - 1 / 5)
    assert m["em"] == 0.5 and m["f1"] == 0.75 and m["answered"] == 0.5
    assert m["retrieval_share"] == pytest.approx(0.3) and m["dropped_queries"] == 0.5
    assert rollout_metrics([]) == {}


def test_recall_and_answer_in_retrieved_by_hand():
    from aworld_rl_rag_r1.metrics import answer_in, gold_share, retrieval_recall
    from aworld_rl_rag_r1.retrievers import Hit

    def hit(doc, text):
        return Hit("0", text, 1.0, doc, "")

    hits = [
        [hit("a", "Paris is in France"), hit("b", "Lyon")],  # gold first
        [hit("x", "nothing"), hit("c", "The Beatles, a band")],  # gold second
        [hit("x", "nothing"), hit("y", "still nothing")],  # gold missed
    ]
    got = retrieval_recall(
        hits, [["a"], ["c"], ["z", "q"]], [["paris"], ["beatles"], ["zebra"]], (1, 2)
    )
    assert got == {
        "recall@1": 1 / 3,
        "answer_in_top1": 1 / 3,
        "recall@2": 2 / 3,
        "answer_in_top2": 2 / 3,
    }
    assert answer_in(["Mark Twain wrote"], ["mark twain"]) and not answer_in(["Twainx"], ["twain"])
    assert gold_share(["a", "b"], ["a", "c"]) == 0.5 and gold_share(["a"], []) is None
