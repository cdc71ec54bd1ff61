"""Java and JavaScript single-turn categories: BFCL's decoders and type rules, verdicts identical
to bfcl-eval's own decoder + ast_checker on the ground truth and on corrupted answers."""

from __future__ import annotations

import re

import pytest
from bfcl_helpers import entries, reference

from aworld_rl_core.tooluse import ToolCallParseError
from aworld_rl_core.tooluse.bfcl import JAVA_JS_CATEGORIES, ground_truth_text, judge_single_turn
from aworld_rl_core.tooluse.bfcl.java_js import decode

# No answer satisfies these possible answers under BFCL's decoder and converters: a string
# array whose items hold ':' (BFCL keeps array items verbatim, and no bare Java expression
# reads "user:online:today"), and two `any` lists holding numbers or booleans (BFCL converts
# every item of an `any` list to a string).
UNSATISFIABLE = {"simple_java_35", "simple_java_36", "simple_java_65"}


def _all():
    return [e for c in JAVA_JS_CATEGORIES for e in entries(c)]


def test_ground_truth_passes_where_bfcl_eval_passes_it():
    ref = reference()
    failed = set()
    for entry in _all():
        text = ground_truth_text(entry)
        ours = judge_single_turn(entry, text)
        assert ours.valid == ref.single_turn_valid(entry, text), (entry.id, text, ours)
        if not ours.valid:
            failed.add(entry.id)
    assert len(_all()) == 150
    assert failed == UNSATISFIABLE


def test_known_answers_are_written_in_their_language():
    java = {e.id: e for e in entries("simple_java")}
    assert ground_truth_text(java["simple_java_22"]) == (
        "[PmsProductServiceImpl.updateNewStatus("
        "ids=new ArrayList<>(Arrays.asList(101L, 202L, 303L)), newStatus=2)]"
    )
    # array items are kept verbatim and compared after BFCL's normalisation: written bare
    assert "argv=new String[]{waittime, 2, iterations, 500}" in ground_truth_text(
        java["simple_java_83"]
    )
    js = {e.id: e for e in entries("simple_javascript")}
    assert ground_truth_text(js["simple_javascript_2"]) == (
        '[extractLastTransactionId(filepath="/var/log/db.log", status=["completed", "failed"], '
        'encoding="utf-8", processFunction="processFunction")]'
    )


def _corruptions(text: str) -> list[str]:
    """Wrong values, names, types and shapes of a ground-truth answer (one change each)."""
    out = [
        text.replace("(", "_x(", 1),  # wrong function name
        re.sub(r"\(\w+=", "(unexpected=", text, count=1),  # unknown parameter name
        re.sub(r"\w+=([^,)]+), ", "", text, count=1),  # a parameter dropped
        re.sub(r'="([^"]*)"', r'="\1_WRONG"', text, count=1),  # a string value changed
        re.sub(r"=(-?\d+)", r"=\g<1>7", text, count=1),  # a number changed
        text.replace("=true", "=false", 1),
        re.sub(r"=(\d+)L", r"=\1", text, count=1),  # a Java long without its suffix
        re.sub(r'="([^"]*)"', r"=\1", text, count=1),  # a string written bare
        re.sub(r"\((\w+)=", "(", text, count=1),  # the first argument unnamed
        text[:-2],  # cut short
        text.replace("[", "[[", 1),
        f"{text[:-1]}, {text[1:]}",  # the call twice
        "I cannot help with that.",
    ]
    return [t for t in out if t != text]


def test_corrupted_answers_get_bfcl_evals_verdicts():
    ref = reference()
    checked = rejected = 0
    for entry in _all():
        for text in _corruptions(ground_truth_text(entry)):
            ours = judge_single_turn(entry, text).valid
            assert ours == ref.single_turn_valid(entry, text), (entry.id, text)
            checked += 1
            rejected += not ours
    assert checked == 1514 and rejected / checked > 0.85


def test_java_types_convert_by_bfcl_rules():
    entry = next(e for e in entries("simple_java") if e.id == "simple_java_22")
    good = ground_truth_text(entry)
    assert judge_single_turn(entry, good).valid
    # a long needs its L; a bare 101 stays the string "101"
    bad = judge_single_turn(entry, good.replace("101L", "101"))
    assert not bad.valid and bad.error_type == "type_error:nested"
    # Java values arrive as text: a JSON-like list is not a Java collection
    as_list = judge_single_turn(entry, good.split("ids=")[0] + "ids=[101, 202, 303])]")
    assert not as_list.valid


def test_unnamed_arguments_fail_as_in_bfcl():
    entry = entries("simple_javascript")[0]
    text = '[validateUserInput(inputField="userInputField", isComplete=true, extra)]'
    verdict = judge_single_turn(entry, text)
    assert not verdict.valid and verdict.error_type == "simple_function_checker:unexpected_param"


@pytest.mark.parametrize("language", ["java", "javascript"])
def test_decoder_errors_are_clear_and_bounded(language):
    with pytest.raises(ToolCallParseError, match="characters"):
        decode("[f(a=" + "1" * 200_000 + ")]", language)
    with pytest.raises(ToolCallParseError, match="same name"):
        decode("[x.f(a=1, a=2)]", language)
    with pytest.raises(ToolCallParseError, match="no .* function call"):
        decode("x = 1;", language)
    assert decode("```\n[x.f(a=1, b=c)]\n```", language) == [{"x.f": {"a": "1", "b": "c"}}]


ODD_CALLS = [
    "x.f(a=1)",  # tree-sitter-java reads some one-argument calls, not others
    "Obj.f(a=1)",
    'Obj.f(a="s")',
    "x.f(a=1);",
    "f(a=b, c=d)",
    "Foo.f(x)",
    "x.f(a=new int[]{1, 2}, b='c')",
    "f(a=1), g(b=2)",
    "[f(a=1)] trailing text",
]


@pytest.mark.parametrize("language", ["java", "javascript"])
def test_decoder_agrees_with_bfcls_on_odd_calls(language):
    ref = reference()
    for text in ODD_CALLS:
        try:
            ours = decode(text, language)
        except ToolCallParseError:
            ours = None
        theirs = ref.decode(text, language)  # {} or None: decoded, but holds no call
        assert ours == (theirs if isinstance(theirs, list) else None), text


def test_deep_nesting_is_bounded():
    nested = "[x.f(a=" + "(" * 5000 + "1" + ")" * 5000 + ")]"
    with pytest.raises(ToolCallParseError, match="nested too deeply"):
        decode(nested, "java")
    # BFCL's JavaScript decoder keeps the argument's text as is (no recursion)
    assert decode(nested, "javascript")[0]["x.f"]["a"].startswith("((((")
