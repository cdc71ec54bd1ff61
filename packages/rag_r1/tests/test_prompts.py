import pytest

from aworld_rl_rag_r1.prompts import load_template, question_text, render


def test_mq_and_sq_instructions():
    mq = render("Who founded X", "mq")
    assert mq.endswith("Question: Who founded X?\n")
    assert "<search> query_1,query_2 </search>" in mq and "up to 3 queries each time" in mq
    assert "<answer> Beijing </answer>" in mq and "<think>" in mq
    sq = render("Who founded X?", "sq")
    assert "query_1" not in sq and "<search> query </search>" in sq
    assert "several queries each time" in render("q", "mq", max_queries=0)
    assert question_text("  a  ") == "a?"


def test_a_released_template_from_a_file(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("Q: {question}\n", encoding="utf-8")
    assert render("x", template=load_template(str(path))) == "Q: x?\n"
    path.write_text("no field", encoding="utf-8")
    with pytest.raises(ValueError, match="no {question} field"):
        load_template(str(path))
    with pytest.raises(FileNotFoundError):
        load_template(str(tmp_path / "missing.txt"))
    with pytest.raises(ValueError, match="unknown prompt mode"):
        render("x", "xx")
