"""The ``copy`` call constraint: argument values only from the user turns and tool results."""

from __future__ import annotations

import pytest

from aworld_rl_core.tooluse.constrain import (
    CopyConstraint,
    allowed_next,
    call_state,
    candidates,
    check_constraint,
    choices,
    message_sources,
    schemas,
    value_prefix,
)

CALL = '<think>\n</think>\n<tool_call>[{"name": "set_thermostat", "arguments": {"room":'
TEXTS = ['"', "kitchen", '"},', '"}}]', "2", "1", "}}]", " ", ' "', "hall", "</tool_call>", "x"]


def test_candidates_are_the_words_and_numbers_as_json():
    assert candidates(["Set the kitchen to 21.", '{"name": "plan.txt"}']) == (
        '"21"',
        '"Set"',
        '"kitchen"',
        '"name"',
        '"plan.txt"',
        '"the"',
        '"to"',
        "21",
        "false",
        "null",
        "true",
    )


def test_value_prefix_is_what_is_written_of_an_argument_value():
    assert value_prefix(CALL) == ""
    assert value_prefix(CALL + ' "kit') == ' "kit'
    assert value_prefix(CALL + ' "kitchen", "degrees": 2') == " 2"
    # not in a value: the function name, the arguments object, a key, a finished call
    assert value_prefix('<tool_call>[{"name": "set_') is None
    assert value_prefix('<tool_call>[{"name": "set_thermostat", "arguments": {') is None
    assert value_prefix(CALL + ' "kitchen", "deg') is None
    assert value_prefix(CALL + ' "kitchen"}}]</tool_call>') is None
    assert value_prefix('no call here "room": "kit') is None


def test_allowed_next_spells_a_candidate_then_closes_it():
    values = candidates(["Set the kitchen thermostat to 21 degrees."])
    allowed = {TEXTS[i] for i in allowed_next(" ", values, TEXTS)}
    assert allowed == {'"', "2", " ", ' "'}
    allowed = {TEXTS[i] for i in allowed_next(' "', values, TEXTS)}
    assert allowed == {"kitchen", "2"}  # "hall" and "x" are in no request; "21" quoted too
    allowed = {TEXTS[i] for i in allowed_next(' "kitchen', values, TEXTS)}
    assert allowed == {'"', '"},', '"}}]'}
    allowed = {TEXTS[i] for i in allowed_next(" 2", values, TEXTS)}
    assert allowed == {"1"}  # 2 alone is not in the request
    allowed = {TEXTS[i] for i in allowed_next(" 21", values, TEXTS)}
    assert allowed == {"}}]", " "}


def test_the_processor_masks_only_inside_values(world_tokenizer_1024):
    import torch

    tok = world_tokenizer_1024
    sources = [["Lock the front door."], ["Lock the back door."]]
    prompt = tok.encode("<|im_start|>assistant\n")
    texts = [CALL.replace("set_thermostat", "lock_door").replace("room", "door") + ' "', "<think>"]
    rows = [prompt + tok.encode(t) for t in texts]
    width = len(prompt)
    length = max(len(r) for r in rows)
    ids = torch.tensor([r + [tok.pad_token_id] * (length - len(r)) for r in rows])
    processor = CopyConstraint(tok, sources, width)
    scores = processor(ids[:1], torch.zeros(1, len(tok)))
    open_ = {tok.decode([i]) for i in torch.nonzero(scores[0] == 0).flatten().tolist()}
    assert "front" in open_ and "back" not in open_ and "door" in open_
    assert all(
        t
        and (
            "front".startswith(t)
            or "door".startswith(t)
            or "Lock".startswith(t)
            or "the".startswith(t)
        )
        for t in open_
    )
    free = CopyConstraint(tok, sources[1:], width)(
        ids[1:, : len(rows[1])], torch.zeros(1, len(tok))
    )
    assert torch.all(free == 0)  # outside a call: nothing masked


def test_message_sources_are_user_and_tool_turns():
    chat = [
        {"role": "system", "content": "rooms: kitchen"},
        {"role": "user", "content": "Lock the front door."},
        {"role": "assistant", "content": "hall"},
        {"role": "tool", "content": '{"text": "23"}'},
    ]
    assert message_sources(chat) == ["Lock the front door.", '{"text": "23"}']


def test_an_unknown_constraint_is_an_error_naming_the_choices():
    with pytest.raises(ValueError, match="none, copy"):
        check_constraint("grammar")


def test_generate_turns_hands_a_constrained_generator_its_sources():
    from aworld_rl_core.engine.episode import Turn
    from aworld_rl_core.models.generate import generate_turns

    seen = {}

    class Generator:
        needs_sources = True

        def __call__(self, prompts, cap, *, stop_strings=(), sources=None, functions=None):
            seen["sources"] = sources
            return [([1], None) for _ in prompts]

    chat = [{"role": "system", "content": "s"}, {"role": "user", "content": "Delete memo.txt."}]
    turn = Turn(0, chat, None, [5, 6], 8, (), False)
    generate_turns(Generator(), [turn])
    assert seen["sources"] == [["Delete memo.txt."]]


@pytest.fixture(scope="module")
def world_tokenizer_1024():
    from aworld_rl_core.tooluse.microworld.tokenizer import world_tokenizer

    return world_tokenizer(1024)


SYSTEM = {
    "role": "system",
    "content": "Here is a list of functions you can invoke:\n"
    "set_thermostat(room: string, degrees: integer) - Set a room's thermostat\n"
    'lock_door(door: string, note?: string) - Lock a door\n{"name": "get_balance", '
    '"parameters": {"type": "dict", "properties": {"account": {"type": "string"}}}}\n\nReply',
}
USER = {"role": "user", "content": "Set the kitchen thermostat to 21 degrees."}


def test_schemas_come_from_the_tools_or_the_system_turns_lines():
    assert schemas([SYSTEM, USER]) == {
        "set_thermostat": {"room": "string", "degrees": "integer"},
        "lock_door": {"door": "string", "note?": "string"},
        "get_balance": {"account": "string"},
    }
    tools = [
        {
            "type": "function",
            "function": {
                "name": "f",
                "parameters": {
                    "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
                    "required": ["a"],
                },
            },
        }
    ]
    assert schemas([SYSTEM], tools) == {"f": {"a": "integer", "b?": "string"}}


def test_names_keys_and_typed_values_are_constrained():
    functions = schemas([SYSTEM, USER])
    values = candidates(message_sources([SYSTEM, USER]))
    head = '<tool_call>[{"name": "set_thermostat", "arguments": {'

    def of(text):
        return choices(call_state(text), values, functions)[0]

    assert of('<tool_call>[{"name": ') == ('"set_thermostat"', '"lock_door"', '"get_balance"')
    assert of(head + '"') == ('"room"', '"degrees"')  # "}" only once both are written
    assert of(head + '"room": "kitchen", ') == ('"degrees"',)
    assert of(head + '"room": "kitchen", "degrees": 21, ') == ("}",)
    assert of(head + '"degrees": ') == ("21",)  # an integer: the request's numbers, bare
    assert "21" not in of(head + '"room": ') and '"kitchen"' in of(head + '"room": ')
    # an optional parameter need not be written
    lock = '<tool_call>[{"name": "lock_door", "arguments": {"door": "kitchen", '
    assert of(lock) == ('"note"', "}")
    # a function the list does not hold: its keys are free, its values still copied
    other = '<tool_call>[{"name": "nope", "arguments": {'
    assert choices(call_state(other), values, functions) is None
    assert of(other + '"x": ') == values


def test_a_parameter_with_no_value_of_its_type_may_take_any_copyable_value():
    chat = [SYSTEM, {"role": "user", "content": "Change the kitchen thermostat."}]
    values = candidates(message_sources(chat))
    state = call_state('<tool_call>[{"name": "set_thermostat", "arguments": {"degrees": ')
    assert choices(state, values, schemas(chat))[0] == values  # no number to copy


def test_verl_refuses_the_constraint_it_cannot_apply():
    from aworld_rl_core.backends.config import ModelConfig, RLConfig, TrainerConfig
    from aworld_rl_core.backends.verl.launcher import LaunchPaths, build_overrides
    from aworld_rl_core.errors import ConfigError

    cfg = TrainerConfig(
        backend="verl", batch_size=8, max_steps=2, rl=RLConfig(call_constraint="copy")
    )
    paths = LaunchPaths(
        train_file="/t.parquet",
        val_file="/v.parquet",
        checkpoint_dir="/c",
        metrics_file="/m.jsonl",
        experiment_name="e",
    )
    with pytest.raises(ConfigError, match="call_constraint='copy' is a decoding aid"):
        build_overrides(ModelConfig(name_or_path="/m"), cfg, paths, n_rows=8, uses_env=True)


def test_supports_replay_the_constraint_on_each_model_turn(world_tokenizer_1024):
    """The support GRPO trains on is the one each turn was sampled under: inside a value, the
    copyable words' tokens (the request's for turn 1, the tool result's too for turn 2);
    outside a call, free (-1)."""
    pytest.importorskip("trl")
    from aworld_rl_core.backends.trl_trainer import supports
    from aworld_rl_core.engine.episode import Episode

    tok = world_tokenizer_1024
    first = CALL + ' "kitchen", "degrees": 21}}]</tool_call>'
    second = CALL + ' "hall", "degrees": 23}}]</tool_call>'
    observation = {"role": "tool", "content": "hall has 23"}
    one, env, two = tok.encode(first), tok.encode(" 23 hall"), tok.encode(second)
    episode = Episode(
        messages=[
            SYSTEM,
            USER,
            {"role": "assistant", "content": first},
            observation,
            {"role": "assistant", "content": second},
        ],
        prompt_messages=[SYSTEM, USER],
        completion_ids=[*one, *env, *two],
        loss_mask=[1] * len(one) + [0] * len(env) + [1] * len(two),
    )
    index, table = supports([episode], tok, len(tok))
    assert index.shape == (1, len(one) + len(env) + len(two))

    def support_at(turn_start, ids, text_before):
        at = turn_start + len(tok.encode(text_before))
        assert tok.decode(ids[: at - turn_start]) == text_before  # a token boundary
        row = int(index[0, at])
        return row, {tok.decode([i]) for i in table[row].nonzero().flatten().tolist()}

    assert int(index[0, 0]) == -1  # <think>: free
    assert all(int(i) == -1 for i in index[0, len(one) : len(one) + len(env)])  # not the model's
    _, words = support_at(0, one, CALL + ' "')
    assert any("kitchen".startswith(w) for w in words) and not any(
        w and "hall".startswith(w) and not "kitchen".startswith(w) for w in words
    )
    _, later = support_at(len(one) + len(env), two, CALL + ' "')
    assert any(w and "hall".startswith(w) for w in later)  # the tool result is a source now
    _, number = support_at(0, one, CALL + ' "kitchen", "degrees": ')
    assert any(w.strip() and "21".startswith(w.strip()) for w in number)
    assert not any(w.strip() and "kitchen".startswith(w.strip()) for w in number)  # an integer


def test_constrained_logps_renormalise_over_the_support():
    """Hand-computed: uniform logits over 4 tokens; where the support is {1, 2}, the sampled
    token's log-probability is log 1/2 and the entropy log 2, elsewhere log 1/4 and log 4."""
    import math

    torch = pytest.importorskip("torch")
    pytest.importorskip("trl")
    from aworld_rl_core.backends.trl_trainer import constrained_logps

    class Uniform(torch.nn.Module):
        def forward(self, input_ids, attention_mask):
            return type("Out", (), {"logits": torch.zeros(*input_ids.shape, 4)})()

    input_ids = torch.tensor([[3, 0, 1, 2], [3, 1, 0, 2]])  # prompt token 3, completion of 3
    index = torch.tensor([[-1, 0, -1], [0, -1, 0]])
    table = torch.tensor([[False, True, True, False]])
    logps, entropy, _ = constrained_logps(
        Uniform(),
        input_ids,
        torch.ones_like(input_ids),
        3,
        index,
        table,
        batch_size=1,
        compute_entropy=True,
    )
    half, quarter = math.log(0.5), math.log(0.25)
    assert torch.allclose(logps, torch.tensor([[quarter, half, quarter], [half, quarter, half]]))
    assert torch.allclose(
        entropy, torch.tensor([[-quarter, -half, -quarter], [-half, -quarter, -half]])
    )
