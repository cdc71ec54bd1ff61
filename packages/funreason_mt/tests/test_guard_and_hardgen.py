"""The contamination guard on BFCL's real test set, and HardGen's failure tools."""

import json

import pytest

from aworld_rl_funreason_mt.contamination import ContaminationIndex, canonical, ngrams
from aworld_rl_funreason_mt.hardgen import failed_tools, hard_tools, read_failed_ids, read_results


@pytest.fixture(scope="module")
def bfcl_base():
    from aworld_rl_core.tooluse.bfcl import load_category

    return load_category("multi_turn_base")


@pytest.fixture(scope="module")
def index():
    return ContaminationIndex.from_bfcl(["multi_turn_base"])


def test_ngrams_and_canonical_calls():
    assert ngrams("Move the file, now!", 2) == {("move", "the"), ("the", "file"), ("file", "now")}
    sig = {"sort": ["file_name"]}
    assert canonical(["sort('a.txt')"], sig) == canonical(["sort(file_name='a.txt')"], sig)


def test_a_copied_bfcl_question_is_flagged_and_a_new_one_is_not(index, bfcl_base):
    entry = bfcl_base[0]
    question = entry.turns[0][0]["content"]
    flags = index.check(question, ["pwd()"])
    assert [(f.kind, f.bfcl_id) for f in flags] == [
        ("query_overlap", f"{entry.id}/0"),
        ("question_in_query", f"{entry.id}/0"),
    ]
    assert flags[0].score == 1.0
    paraphrase = "Could you list what sits in my reports folder and count the lines of notes.txt?"
    assert (
        index.check(paraphrase, ["ls()"]) == []
        or index.check(paraphrase, ["ls()"])[0].kind != "query_overlap"
    )
    assert index.size[0] >= 200


def test_a_bfcl_ground_truth_sequence_is_flagged(index, bfcl_base):
    entry = bfcl_base[1]
    calls = entry.ground_truth[0]
    flags = index.check("A brand new request about something else entirely", calls)
    assert [f.kind for f in flags] == ["ground_truth_equal"]


def write_results(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(json.dumps(r) for r in rows))
    return path


def test_failed_tools_per_turn(tmp_path, bfcl_base):
    entries = {e.id: e for e in bfcl_base[:2]}
    first, second = bfcl_base[0], bfcl_base[1]
    perfect = [[list(turn)] for turn in second.ground_truth]
    wrong = [[list(turn)] for turn in first.ground_truth]
    wrong[0] = [[]]  # nothing in the first turn
    results = {first.id: wrong, second.id: perfect}
    failures = failed_tools(entries, results)
    expected = {
        __import__("aworld_rl_core.tooluse", fromlist=["x"]).parse_python_calls(c)[0].name
        for c in first.ground_truth[0]
    }
    assert set(failures) == expected


def test_hard_tools_both_models_fail(tmp_path, bfcl_base):
    first = bfcl_base[0]
    bad = [[[]] for _ in first.ground_truth]
    target = write_results(
        tmp_path / "target" / "BFCL_v4_multi_turn_base_result.json",
        [{"id": first.id, "result": bad}],
    )
    reference = write_results(tmp_path / "ref" / "x_result.json", [{"id": first.id, "result": bad}])
    assert read_results(target.parent) == {first.id: bad}
    tools = hard_tools(target.parent, reference, categories=["multi_turn_base"])
    gt_tools = {
        __import__("aworld_rl_core.tooluse", fromlist=["x"]).parse_python_calls(c)[0].name
        for t in first.ground_truth
        for c in t
    }
    assert set(tools) == gt_tools
    # a reference that solves the entry leaves nothing both fail on
    good = [[list(t)] for t in first.ground_truth]
    solved = write_results(tmp_path / "good" / "y_result.json", [{"id": first.id, "result": good}])
    assert hard_tools(target.parent, solved, categories=["multi_turn_base"]) == []


def test_score_files_and_missing_paths(tmp_path):
    score = tmp_path / "score" / "BFCL_v4_multi_turn_base_score.json"
    write_results(score, [{"accuracy": 0.5}, {"id": "multi_turn_base_0", "valid": False}])
    assert read_failed_ids(score.parent) == {"multi_turn_base_0"}
    with pytest.raises(FileNotFoundError, match="BFCL's result"):
        read_results(tmp_path / "nowhere")


@pytest.fixture(scope="module")
def full_index():
    return ContaminationIndex.from_bfcl()  # every BFCL multi-turn category


def test_the_guard_covers_every_multi_turn_category(full_index):
    from aworld_rl_core.tooluse.bfcl import MULTI_TURN_CATEGORIES, load_category

    questions = sum(
        1 for c in MULTI_TURN_CATEGORIES for e in load_category(c) for t in e.turns if t
    )
    assert full_index.size[0] == questions >= 3000
    for category in MULTI_TURN_CATEGORIES:
        entry = load_category(category)[3]
        text = next(t[0]["content"] for t in entry.turns if t)
        assert full_index.check(text, []), category


def test_a_padded_question_is_caught_in_the_reverse_direction(full_index, bfcl_base):
    entry = bfcl_base[107]  # the question a copying querying agent once got kept verbatim
    question = entry.turns[0][0]["content"]
    padded = (
        "Some context first: I manage a small portfolio for my family and we review it every "
        "Friday afternoon, so I keep notes of everything I ask. " + question + " Thanks a lot, "
        "this matters for the weekly review with my sister and her accountant."
    )
    (forward, _), (reverse, bfcl_id) = full_index.overlaps(padded)
    assert forward < 0.5  # the one-direction check missed it
    assert reverse == 1.0 and bfcl_id == f"{entry.id}/0"
    assert "question_in_query" in [f.kind for f in full_index.check(padded, [])]


def test_reordered_extended_and_shortened_ground_truth_are_caught(full_index, bfcl_base):
    entry = next(e for e in bfcl_base if len(e.ground_truth[0]) >= 3)
    calls = list(entry.ground_truth[0])
    sig = signatures(entry)
    canon = list(canonical(calls, sig))
    kinds = {
        "reordered": full_index.check("new", list(reversed(canon))),
        "extended": full_index.check("new", [*canon, "pwd()"]),
        "inserted": full_index.check("new", [canon[0], "pwd()", *canon[1:]]),
        "shortened": full_index.check("new", canon[:-1]),
    }
    expect = {
        "reordered": "ground_truth_set",
        "extended": "ground_truth_near",
        "inserted": "ground_truth_near",
        "shortened": "ground_truth_near",
    }
    for case, flags in kinds.items():
        assert [f.kind for f in flags] == [expect[case]], (case, flags)
    # a single call found in some BFCL turn is not flagged by the one-call rule
    assert full_index.check("new", ["pwd()"]) == []


def test_guard_thresholds_are_validated():
    with pytest.raises(ValueError, match="max_reverse_overlap"):
        ContaminationIndex([], [], max_reverse_overlap=0)
    with pytest.raises(ValueError, match="near_min_calls"):
        ContaminationIndex([], [], near_min_calls=0)


def signatures(entry):
    from aworld_rl_core.tooluse import signatures_from_tools

    return signatures_from_tools([dict(d) for d in entry.functions])


def test_test_informed_hardgen_targets_need_the_flag(tmp_path):
    from aworld_rl_funreason_mt.recipes.synthesize import HardGenConfig, hardgen_targets

    assert hardgen_targets(HardGenConfig()) is None
    given = HardGenConfig(target_results=str(tmp_path), reference_results=str(tmp_path))
    with pytest.raises(ValueError, match="hardgen.test_informed=true"):
        hardgen_targets(given)
