"""FunReason's SFT data on core's micro-world: ground truth with templated reasoning, played
through core's environment in FunReason's format, training templates only."""

from __future__ import annotations

import json

import pytest

from aworld_rl_core.tooluse.microworld import TEMPLATE_ROLES, bfcl_entry, micro_entry, split
from aworld_rl_funreason import world


def _think(*lines: str) -> str:
    return "<think>\n" + "\n".join(lines) + "\n</think>\n\n"


def test_sft_rows_hold_the_training_templates_only_and_pass_the_judge():
    rows = world.sft_rows()
    train = {i for ids in split(0)["train"].values() for i in ids}
    assert {r["id"] for r in rows} == train
    assert len(rows) == len(train)
    templates = {r["metadata"]["template"] for r in rows}
    assert not templates & set(TEMPLATE_ROLES)  # no validation or held-out template
    # the categories alternate, so a prefix holds both
    assert {r["metadata"]["category"] for r in world.sft_rows(limit=2)} == {
        "multi_turn_base",
        "multi_turn_miss_param",
    }


def test_a_row_reads_the_balance_before_moving_it():
    (row,) = [r for r in world.sft_rows() if r["id"] == "micro_move_all_21"]
    raw = micro_entry("micro_move_all_21").raw
    ((read, send),) = raw["ground_truth"]
    source = read.split("'")[1]
    target = send.split("target='")[1].split("'")[0]
    balance = raw["initial_config"]["core.micro.bank"]["balances"][source]
    request = raw["question"][0][0]["content"]
    assert request == f"Move everything in {source} to {target}."
    system, user, *rest = row["messages"]
    assert system["role"] == "system"
    assert (
        "\ntransfer(source: string, target: string, amount: integer) - Move whole dollars "
        "between accounts.\n" in system["content"]
    )
    assert user == {"role": "user", "content": request}
    assert [m["role"] for m in rest] == ["assistant", "tool", "assistant", "tool", "assistant"]
    assert (
        rest[0]["content"]
        == _think(
            f"The user asks: {request}",
            "get_balance: Read an account's balance.",
            f"account = {source}, the user gave it.",
        )
        + f"[get_balance(account='{source}')]"
    )
    # the environment's own result: the balance the transfer then copies
    assert json.loads(rest[1]["content"]) == [
        {f"get_balance(account='{source}')": json.dumps({"account": source, "balance": balance})}
    ]
    assert (
        rest[2]["content"]
        == _think(
            f"The user asks: {request}",
            "The results I need are shown above.",
            "transfer: Move whole dollars between accounts.",
            f"source = {source}, the user gave it.",
            f"target = {target}, the user gave it.",
            f"amount = {balance}, read from the result above.",
        )
        + f"[transfer(source='{source}', target='{target}', amount={balance})]"
    )
    assert (
        rest[4]["content"]
        == _think("Every call succeeded and the results answer the request, so it is done.")
        + "Done."
    )


def test_an_abstain_turn_is_declined_without_a_call():
    entry = bfcl_entry("micro_ask_then_send_0")
    first, second = world.replies(entry)
    request = entry.turns[0][0]["content"]
    assert first == [
        _think(
            f"The user asks: {request} No listed function can do this with the values the user "
            "gave: a value only the user knows is missing, so I call nothing and ask."
        )
        + world.DECLINE
    ]
    assert len(second) == 2 and second[0].endswith(f"[{entry.ground_truth[1][0]}]")


def test_held_out_rows_and_the_judge_on_a_wrong_reply():
    held = world.eval_rows()
    assert len(held) == 96
    assert {r["template"] for r in held} == {
        t for t, role in TEMPLATE_ROLES.items() if role == "held_out"
    }
    seen = world.eval_rows(templates="seen")
    assert seen and not {r["template"] for r in seen} & set(TEMPLATE_ROLES)
    train = {r["id"] for r in world.sft_rows()}
    assert not train & {r["id"] for r in held + seen}
    row = next(r for r in held if r["template"] == "pay")
    truth = world.replies(bfcl_entry(row["id"]))[0]
    _, step = world.play(row, truth)
    assert step.done and step.reward == 1.0 and step.info["valid"]
    wrong = truth[0].replace("amount=", "amount=1")  # 35 -> 135: a wrong value
    _, step = world.play(row, [wrong, truth[1]])
    assert step.done and step.reward == 0.0 and step.info["turn_scores"] == [0.0]


def test_srml_sees_the_reasoning_as_the_think_segment():
    pytest.importorskip("transformers")
    from aworld_rl_core.backends.sft_data import build_samples
    from aworld_rl_core.models import tiny_tokenizer

    tokenizer = tiny_tokenizer(1024)
    (row,) = [r for r in world.sft_rows() if r["id"] == "micro_move_all_21"]
    (sample,), _ = build_samples([row], tokenizer, max_length=4096, per_turn=False)
    bits = zip(sample.input_ids, sample.labels, sample.segments["think"], strict=True)
    think = [t for t, label, bit in bits if bit and label >= 0]  # the supervised reasoning
    replies = [m["content"] for m in row["messages"] if m["role"] == "assistant"]
    assert tokenizer.decode(think) == "".join(r.split("\n\n", 1)[0] for r in replies)
    labelled = [t for t in sample.labels if t >= 0]
    assert len(think) > 2 * (len(labelled) - len(think))  # reasoning outweighs the rest
