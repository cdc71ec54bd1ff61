"""EnvTuning on core's micro-world: the split source, entries through EnvTuning's environment,
the ground truth scoring 1, and the held-out table at every point."""

import json

from aworld_rl_core.tooluse import microworld as mw
from aworld_rl_envtuning.data import CATEGORIES, SplitConfig, bfcl_split, easy_subset, records_for
from aworld_rl_envtuning.env import EnvTuningEnv, get_entry
from aworld_rl_envtuning.recipes.heldout import heldout_ids, table


def test_microworld_split_is_cores_split_by_template_and_never_leaks():
    split = bfcl_split(SplitConfig(source="microworld", seed=0))
    parts = {p: set(split.of(p)) for p in ("train", "validation", "held_out")}
    assert [len(parts[p]) for p in ("train", "validation", "held_out")] == [184, 80, 175]
    assert not (parts["train"] & parts["validation"] or parts["train"] & parts["held_out"])
    assert not parts["validation"] & parts["held_out"]
    core = mw.split(0)
    assert split.of("held_out", ["multi_turn_base"]) == core["held_out"]["multi_turn_base"]
    assert split.of("train", ["multi_turn_long_context"]) == []
    # no held-out or validation template is trained on
    trained = {mw.micro_entry(i).template for i in parts["train"]}
    assert not trained & set(mw.TEMPLATE_ROLES)
    # the held-out points mix held-out templates and held-out slot combinations
    ids = heldout_ids(split, 30)
    assert len(ids) == 60 and set(ids) <= parts["held_out"]
    templates = {mw.micro_entry(i).template for i in ids}
    assert templates & set(mw.TEMPLATE_ROLES) and templates - set(mw.TEMPLATE_ROLES)
    assert set(CATEGORIES) >= {get_entry(i).category for i in ids}


def test_ground_truth_scores_one_in_envtuning_env_and_stage1_data_is_easy():
    from aworld_rl_envtuning.recipes.warm_start import trajectories

    split = bfcl_split(SplitConfig(source="microworld"))
    ids = split.of("train")[:12]
    rows = trajectories(ids, tool_docs="compact")  # raises unless every entry scores 1
    assert len(rows) == 12 and rows[0]["messages"][0]["role"] == "system"
    easy = easy_subset(split.of("train", ["multi_turn_base"]), 5)
    assert all(sum(len(t) for t in get_entry(i).ground_truth) == 1 for i in easy)
    record = records_for(ids[:1], "train", tool_docs="compact")[0]
    assert record.metadata["involved_classes"] == [
        "core.micro.home",
        "core.micro.bank",
        "core.micro.files",
    ]


def test_a_wrong_call_scores_zero_progress_and_a_right_one_one():
    entry = get_entry("micro_set_temp_0")
    call = entry.ground_truth[0][0]
    env = EnvTuningEnv(entry, reward=None, tool_docs="compact")
    env.reset()
    room = call.split("'")[1]
    arguments = json.dumps({"room": room, "degrees": 11})
    wrong = f'<think>t</think><tool_call>[{{"name": "set_thermostat", "arguments": {arguments}}}]'
    wrong += "</tool_call>"
    env.step(wrong)
    step = env.step("<think>t</think><answer>done</answer>")
    assert step.done and env.progress == 0.0
    env = EnvTuningEnv(entry, tool_docs="compact")
    env.reset()
    degrees = int(call.split("degrees=")[1].rstrip(")"))
    right = wrong.replace('"degrees": 11', f'"degrees": {degrees}')
    env.step(right)
    step = env.step("<think>t</think><answer>done</answer>")
    assert step.done and env.progress == 1.0


def test_heldout_table_lists_every_point():
    results = {
        "random": {"accuracy": 0.0, "progress": 0.0, "tool_calls": 0.0},
        "warm_start": {"accuracy": 0.25, "progress": 0.375, "tool_calls": 1.5},
        "stage1": {"accuracy": 0.5, "progress": 0.625, "tool_calls": 1.25},
    }
    text = table(results, 4)
    assert "| | random | warm_start | stage1 |" in text
    assert "| accuracy (%) | 0.0 | 25.0 | 50.0 |" in text
    assert "| mean progress (%) | 0.0 | 37.5 | 62.5 |" in text


def test_call_per_step_shows_the_read_before_the_dependent_call():
    from aworld_rl_envtuning.recipes.warm_start import trajectories
    from aworld_rl_envtuning.replay import ground_truth_responses

    entry = get_entry("micro_move_all_3")
    assert entry.ground_truth == [
        [
            "get_balance(account='checking')",
            "transfer(source='checking', target='travel', amount=10)",
        ]
    ]
    (together,) = ground_truth_responses(entry)
    (apart,) = ground_truth_responses(entry, call_per_step=True)
    assert len(together) == 2 and len(apart) == 3
    assert apart[0].endswith(
        '[{"name": "get_balance", "arguments": {"account": "checking"}}]</tool_call>'
    )
    messages = trajectories([entry.id], call_per_step=True, tool_docs="compact")[0]["messages"]
    roles = [m["role"] for m in messages]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user", "assistant"]
    assert '\\"balance\\": 10' in messages[3]["content"]  # the balance is shown ...
    assert '"amount": 10' in messages[4]["content"]  # ... before the transfer that copies it
