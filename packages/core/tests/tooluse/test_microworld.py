"""The micro-world: registered API classes with real state, entries from templates judged by
BFCL's multi-turn judge, a leak-free split by template, and its in-process tokenizer."""

import json
from collections import Counter

import pytest

from aworld_rl_core import registry
from aworld_rl_core.tooluse import microworld as mw
from aworld_rl_core.tooluse.bfcl.environment import env_from_row
from aworld_rl_core.tooluse.bfcl.episode import MultiTurnEpisode
from aworld_rl_core.tooluse.bfcl.judges import judge_multi_turn
from aworld_rl_core.tooluse.microworld.apis import BankLedger, FileStore, HomeController


def test_api_classes_register_through_the_plugin_hook():
    assert registry.get_tool_api("core.micro.home").load() is HomeController
    assert registry.get_tool_api("core.micro.bank").load() is BankLedger
    assert registry.get_tool_api("core.micro.files").load() is FileStore
    assert "core.microworld" in registry.names("datasets")


def test_unknown_class_names_both_registries():
    from aworld_rl_core.tooluse.bfcl.apis import build_instances

    with pytest.raises(ValueError, match="core.micro.nope.*register_tool_apis"):
        build_instances(["core.micro.nope"], {}, long_context=False)


def test_api_state_and_errors():
    bank = BankLedger()
    bank._load_scenario({"balances": {"checking": 30, "savings": 5, "travel": 0}})
    assert bank.transfer(source="checking", target="savings", amount=20) == {
        "source": 10,
        "target": 25,
    }
    assert bank.transfer(source="checking", target="savings", amount=20) == {
        "error": "checking holds only 10"
    }
    assert bank.transfer(source="checking", target="savings", amount="5") == {
        "error": "amount must be a positive whole number"
    }
    assert bank.balances == {"checking": 10, "savings": 25, "travel": 0}
    home = HomeController()
    assert home.set_thermostat(room="garden", degrees=20) == {
        "error": "no thermostat in room 'garden'"
    }
    assert home.set_thermostat(room="hall", degrees=31)["error"].startswith("degrees must be")
    assert home.lock_door(door="back") == {"door": "back", "status": "locked"}
    files = FileStore()
    files._load_scenario({"files": {"a.txt": "x"}})
    assert files.delete_file(name="a.txt") == {"deleted": "a.txt"}
    assert files.files == {}
    with pytest.raises(ValueError, match="no fields \\['nope'\\]"):
        files._load_scenario({"nope": 1})


def test_every_ground_truth_passes_bfcl_judge_and_an_empty_reply_fails_calling_turns():
    all_entries = mw.entries()
    assert len(all_entries) == 439  # 26 templates, at most 24 slot combinations each
    for entry in all_entries:
        bfcl = mw.bfcl_entry(entry.id)
        assert judge_multi_turn(bfcl, bfcl.ground_truth).valid, entry.id
        silent = [[] for _ in bfcl.ground_truth]
        expected = all(not turn for turn in bfcl.ground_truth)
        assert judge_multi_turn(bfcl, silent).valid is expected, entry.id


def test_a_value_from_an_earlier_result_is_needed():
    entry = mw.bfcl_entry("micro_read_then_set_0")
    assert entry.turns == [
        [
            {
                "role": "user",
                "content": "Set the kitchen thermostat to the number written in notes.txt.",
            }
        ]
    ]
    assert entry.ground_truth == [
        ["read_file(name='notes.txt')", "set_thermostat(room='kitchen', degrees=24)"]
    ]
    with MultiTurnEpisode(entry) as episode:
        assert episode.execute(["read_file(name='notes.txt')"]) == [
            '{"name": "notes.txt", "text": "24"}'
        ]
        episode.execute(["set_thermostat(room='kitchen', degrees=23)"])
        result = episode.end_turn()
    assert not result.passed and result.state_match is False
    # the right degrees but without the read: state matches, the read's result is missing
    verdict = judge_multi_turn(entry, [["set_thermostat(room='kitchen', degrees=24)"]])
    assert not verdict.valid
    assert verdict.error_type == "multi_turn:execution_response_mismatch"


def test_abstain_turns_pass_only_without_a_call():
    entry = mw.bfcl_entry(mw.split()["train"][mw.ABSTAIN][0])
    assert entry.category == mw.ABSTAIN
    assert judge_multi_turn(entry, [[] for _ in entry.ground_truth]).valid is (
        all(not t for t in entry.ground_truth)
    )
    bad = [t or ["lock_door(door='front')"] for t in entry.ground_truth]
    assert not judge_multi_turn(entry, bad).valid


def test_split_by_template_has_no_leak():
    parts = mw.split(seed=0)
    ids = {p: [i for c in parts[p].values() for i in c] for p in mw.SPLITS}
    assert [len(ids[p]) for p in mw.SPLITS] == [184, 80, 175]
    assert sum(len(v) for v in ids.values()) == len(mw.entries())
    seen: dict[tuple, str] = {}
    for part, members in ids.items():
        for entry_id in members:
            entry = mw.micro_entry(entry_id)
            key = (entry.template, entry.slots)
            assert seen.setdefault(key, part) == part, key  # no (template, slots) in two parts
            role = mw.TEMPLATE_ROLES.get(entry.template)
            assert role in (None, part), entry_id  # held-out templates stay whole
    train_templates = {mw.micro_entry(i).template for i in ids["train"]}
    held_templates = {mw.micro_entry(i).template for i in ids["held_out"]}
    assert not train_templates & {t for t, r in mw.TEMPLATE_ROLES.items()}
    assert {"pay", "lock_and_temp", "temp_then_read", "ask_then_send"} <= held_templates
    assert held_templates - train_templates == {
        "pay",
        "lock_and_temp",
        "temp_then_read",
        "ask_then_send",
    }
    # every skill a held-out template needs is taught by a training template: get_thermostat,
    # two calls in one turn, declining a turn that lacks a value and acting on a later one
    train_calls = {
        c.split("(")[0] for i in ids["train"] for t in mw.bfcl_entry(i).ground_truth for c in t
    }
    assert train_calls == {f["name"] for d in mw.apis.DOCS.values() for f in d}
    assert {"read_temp", "lock_and_delete", "give", "ask_then_set"} <= train_templates
    shapes = {tuple(len(t) for t in mw.micro_entry(i).raw["ground_truth"]) for i in ids["train"]}
    assert (0, 1) in shapes and (2,) in shapes
    assert sum(i in parts["train"][mw.ABSTAIN] for i in ids["train"]) == 34
    # the first ids of a part spread over its templates (the held-out points)
    first = parts["held_out"][mw.ABSTAIN][:15]
    counts = Counter(mw.micro_entry(i).template for i in first)
    # no_degrees and no_amount hold one held-out combination each; the other three deal 13
    assert sorted(counts.values()) == [1, 1, 4, 4, 5]
    # more slot combinations per template than the registered entries: still split whole
    wide = mw.split(seed=0, per_template=30)
    assert sum(len(v) for p in mw.SPLITS for v in wide[p].values()) == len(mw.entries(30)) == 535
    # another seed reshuffles the slot combinations but never the template roles
    other = mw.split(seed=1)
    assert other["train"] != parts["train"]
    assert {mw.micro_entry(i).template for c in other["validation"].values() for i in c} >= {
        "lock_please",
        "no_source",
    }


def test_core_bfcl_environment_plays_micro_rows():
    row = next(r for r in mw.world.rows("held_out") if r["entry_id"].startswith("micro_pay_"))
    env = env_from_row(json.loads(json.dumps(row)), reward="progress")
    env.reset()
    call = row["bfcl_entry"]["ground_truth"][0][0]
    step = env.step(f"<think>pay</think><tool_call>[{call}]</tool_call>")
    assert not step.done and "source" in step.observation[0]["content"]
    step = env.step("<think>done</think><answer>Done.</answer>")
    assert step.done and step.reward == 1.0
    env.close()


def test_world_tokenizer_is_small_and_reloads_identically(tmp_path):
    from transformers import AutoTokenizer

    from aworld_rl_core.models import tiny_tokenizer
    from aworld_rl_core.tooluse.microworld.tokenizer import corpus

    assert len(tiny_tokenizer(512)) == 512
    tok = tiny_tokenizer(1024)
    assert len(tok) == 979  # the corpus runs out of merges before 1024
    text = "Set the kitchen thermostat to 21 degrees."
    assert tok.convert_ids_to_tokens(tok(text)["input_ids"]) == [
        "Set",
        "Ġthe",
        "Ġkitchen",
        "Ġthermostat",
        "Ġto",
        "Ġ",
        "2",
        "1",
        "Ġdegrees",
        ".",
    ]
    for tag in ("<tool_call>", "</tool_call>", "<think>", "</think>", "<answer>", "<|im_end|>"):
        assert len(tok(tag)["input_ids"]) == 1
    chat = tok.apply_chat_template([{"role": "user", "content": text}], tokenize=False)
    assert chat == f"<|im_start|>user\n{text}<|im_end|>\n"
    tok.save_pretrained(tmp_path)
    again = AutoTokenizer.from_pretrained(tmp_path)
    assert all(again(t)["input_ids"] == tok(t)["input_ids"] for t in corpus()[:300])
    with pytest.raises(ValueError, match="vocab_size=100"):
        mw.tokenizer.world_tokenizer(100)
