import json

import pytest

from aworld_rl_rag_r1.qa import QAFormatError, load_fanoutqa, load_qa
from aworld_rl_rag_r1.synthetic import SyntheticConfig, generate, write


def _write(path, rows, jsonl=True):
    text = "\n".join(json.dumps(r) for r in rows) if jsonl else json.dumps(rows)
    path.write_text(text, encoding="utf-8")
    return path


def test_each_format(tmp_path):
    flash = _write(
        tmp_path / "nq.jsonl", [{"id": "1", "question": "q?", "golden_answers": ["a", "b"]}]
    )
    nq = _write(tmp_path / "nqo.jsonl", [{"question": "q2", "answer": ["x"]}])
    hotpot = _write(tmp_path / "h.json", [{"_id": "h1", "question": "hq", "answer": "yes"}], False)
    musique = _write(
        tmp_path / "m.jsonl",
        [
            {
                "id": "m1",
                "question": "mq",
                "answer": "A",
                "answer_aliases": ["A2"],
                "answerable": True,
            }
        ],
    )
    rag = _write(tmp_path / "r.json", [{"question": "rq", "golden_answers": "G"}], False)
    bamboo = tmp_path / "Bamboogle.csv"
    bamboo.write_text('Question,Answer\n"Who, exactly?",Someone\n', encoding="utf-8")
    got = {p.name: load_qa(p) for p in (flash, nq, hotpot, musique, rag, bamboo)}
    assert (
        got["nq.jsonl"][0].golden_answers == ["a", "b"] and got["nq.jsonl"][0].source == "flashrag"
    )
    assert got["nqo.jsonl"][0].source == "nq"
    assert got["h.json"][0].id == "h1" and got["h.json"][0].golden_answers == ["yes"]
    assert got["m.jsonl"][0].golden_answers == ["A", "A2"]
    assert got["r.json"][0].golden_answers == ["G"]
    assert got["Bamboogle.csv"][0].question == "Who, exactly?"
    assert load_qa(hotpot, "2wiki")[0].source == "2wiki"


def test_bad_files_name_the_problem(tmp_path):
    with pytest.raises(QAFormatError, match="does not exist"):
        load_qa(tmp_path / "none.json")
    odd = _write(tmp_path / "odd.jsonl", [{"q": 1}])
    with pytest.raises(QAFormatError, match="cannot tell the format"):
        load_qa(odd)
    with pytest.raises(QAFormatError, match="no 'question' key"):
        load_qa(odd, "flashrag")
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"question": "a"}\n{oops\n', encoding="utf-8")
    with pytest.raises(QAFormatError, match="broken.jsonl:2"):
        load_qa(broken)


def test_fanoutqa_real_questions():
    scalar = load_fanoutqa()
    assert len(scalar) == 24  # of 310 dev questions: 13 str, 10 int, 1 bool answers
    spain = next(q for q in scalar if q.question.startswith("What is the smallest country"))
    assert spain.golden_answers == ["Spain"] and len(spain.decomposition) >= 2
    assert len(load_fanoutqa(all_answers=True)) == 310


def test_synthetic_world_needs_two_pages(tmp_path):
    docs, questions = generate(SyntheticConfig(questions=20))
    assert generate(SyntheticConfig(questions=20)) == (docs, questions)  # deterministic
    pages = {d["id"]: d for d in docs}
    for q in questions:
        assert len(q["gold_docs"]) == 2
        texts = " ".join(pages[d]["text"] for d in q["gold_docs"])
        assert q["golden_answers"][0] in texts
        assert q["golden_answers"][0] not in q["question"] or q["type"] == "comparison"
    bridge = next(q for q in questions if q["question"].startswith("In which country"))
    person, _city = (pages[d] for d in bridge["gold_docs"])
    assert bridge["golden_answers"][0] not in person["text"]  # the first page alone is not enough
    _corpus, qa = write(SyntheticConfig(questions=8), tmp_path)
    assert [i.source for i in load_qa(qa)] == ["synthetic"] * 8
    assert load_qa(qa)[0].gold_docs


def test_synthetic_distinct_pairs_never_ask_a_pair_twice():
    """40 people give at most 780 unordered pairs: in 800 questions "X or Y" and "Y or X"
    both occur unless distinct_pairs asks each pair once (the tiny-cpu train world)."""

    def pairs(cfg):
        _docs, questions = generate(cfg)
        return [frozenset(q["gold_docs"]) for q in questions if q["type"] == "comparison"]

    both_orders = pairs(SyntheticConfig(questions=800))
    assert len(set(both_orders)) < len(both_orders)
    once = pairs(SyntheticConfig(questions=800, distinct_pairs=True))
    assert len(once) == len(set(once)) == 800 - 90  # 40 + 40 + 10 bridge questions
