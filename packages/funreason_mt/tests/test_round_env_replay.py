"""FunReason-MT's round environment as a configuration of core's ``tooluse.bfcl.turns``: the same
scripted rounds (calls, answers, broken formats, the reply cap, each kind of injected error) give
the same openings, observations, rewards, ``done`` flags and infos as the step loop it replaced,
recorded from that loop (``data/round_env_replay.json``; re-record only on a deliberate change of
behaviour: ``python packages/funreason_mt/tests/test_round_env_replay.py``)."""

from __future__ import annotations

from pathlib import Path

from aworld_rl_core.testing.episode_replay import mismatches, record

RECORDED = Path(__file__).parent / "data" / "round_env_replay.json"


def _calls(*strings):
    return f"<think>act</think><tool_call>[{', '.join(strings)}]</tool_call>"


ANSWER = "<think>ok</think><answer>Done.</answer>"
MESSAGES = {
    "answer": [_calls("add_contact(user_name='Ines')", "list_users()"), ANSWER],
    "erring": [
        "just text",
        "<think>x</think>",
        _calls("no_such_tool(x=1)"),
        _calls("send_message(receiver_id='USR005')"),
        "<think>a</think><tool_call>[list_users()]</tool_call><answer>both</answer>",
        "<think>b</think><answer>x</answer><answer>y</answer>",
        ANSWER,
    ],
    "inject": [
        _calls("add_contact(user_name='Ines')"),
        _calls("list_users()"),
        _calls("list_users()"),
        ANSWER,
    ],
    "auth": [
        _calls("view_messages_sent()"),
        _calls("message_login(user_id='USR001')"),
        _calls("view_messages_sent()"),
        _calls("message_login(user_id='USR001')", "view_messages_sent()"),
        ANSWER,
    ],
    "missing": [_calls("add_contact(user_name='Ines')"), _calls("list_users()"), ANSWER],
}
VEHICLE = [
    _calls("get_zipcode_based_on_city(city='Rivermist')"),
    _calls("estimate_distance(cityA='83214', cityB='94016')"),
    _calls("get_zipcode_based_on_city(city='Rivermist')"),
    _calls("estimate_distance(cityA='83214', cityB='94016')"),
    ANSWER,
]
OPTIONS = {
    "plain": {},
    "cap2": {"max_steps_per_turn": 2},
    "transient": {"inject_error_at": 0},
    "auth": {
        "inject_error_at": 0,
        "error_kind": "auth",
        "login_tools": {"view_messages_sent": "message_login"},
    },
    "missing": {"inject_error_at": 1, "error_kind": "missing_argument"},
}


def _round(space, classes, options):
    from aworld_rl_funreason_mt.round_env import RoundEnv, system_prompt
    from aworld_rl_funreason_mt.space import Session

    def make():
        docs = space.docs_of(classes)
        session = Session(classes, space.initial_config(classes, {}))
        history = [{"role": "user", "content": "Earlier."}, {"role": "assistant", "content": "Ok."}]
        return RoundEnv(
            session,
            system=system_prompt(docs),
            history=history,
            user="Add Ines and tell her the release is ready",
            function_docs=docs,
            **options,
        )

    return make


def cases(space):
    out = {}
    for label, options in OPTIONS.items():
        for name, replies in MESSAGES.items():
            out[f"{label}/{name}"] = (_round(space, ["MessageAPI"], options), replies)
    not_found = {
        "inject_error_at": 0,
        "error_kind": "not_found",
        "producers": {"estimate_distance": {"cityA": ("get_zipcode_based_on_city",)}},
    }
    for label, options in {"plain": {}, "not_found": not_found}.items():
        out[f"{label}/vehicle"] = (_round(space, ["VehicleControlAPI"], options), VEHICLE)
    return out


def test_same_rounds_as_recorded(space):
    """If this fails: the round environment changed behaviour (the message names the case, step
    and field); if that is deliberate, re-record (module docstring) and say why."""
    problems = mismatches(cases(space), RECORDED)
    assert not problems, "\n".join(problems[:20])


if __name__ == "__main__":
    from aworld_rl_funreason_mt.space import ToolSpace

    RECORDED.parent.mkdir(exist_ok=True)
    record(cases(ToolSpace()), RECORDED)
    print(f"recorded {len(cases(ToolSpace()))} cases in {RECORDED}")
