"""The reasoning agent's round environment and the call-set / state match."""

import json

import pytest

from aworld_rl_core.testing.contracts import EnvironmentProtocolContract
from aworld_rl_funreason_mt.matching import call_set_match, match_round, possible_answers
from aworld_rl_funreason_mt.round_env import REVIEW_MARK, RoundEnv, round_prompt, system_prompt
from aworld_rl_funreason_mt.space import Session


def make_env(space, **options):
    docs = space.docs_of(["MessageAPI"])
    session = Session(["MessageAPI"], space.initial_config(["MessageAPI"], {}))
    return RoundEnv(
        session,
        system=system_prompt(docs),
        history=[],
        user="Add Ines and tell her the release is ready",
        function_docs=docs,
        **options,
    )


class TestRoundEnvContract(EnvironmentProtocolContract):
    @pytest.fixture(autouse=True)
    def _space(self, space):
        self.space = space

    def make_env(self):
        return make_env(self.space)


def test_calls_run_and_answer_ends(space):
    env = make_env(space)
    opening = env.reset()
    assert [m["role"] for m in opening] == ["system", "user"]
    assert "add_contact" in opening[0]["content"] and "<tool_call>" in opening[0]["content"]
    step = env.step(
        "<think>add</think><tool_call>[add_contact(user_name='Ines'), list_users()]</tool_call>"
    )
    assert not step.done and step.observation[0]["role"] == "tool"
    results = json.loads(step.observation[0]["content"])
    assert list(results[0]) == ["add_contact(user_name='Ines')"]
    assert json.loads(results[0]["add_contact(user_name='Ines')"])["user_id"] == "USR005"
    done = env.step("<think>ok</think><answer>Added Ines.</answer>")
    assert (
        done.done
        and env.answered
        and done.info["calls"] == ["add_contact(user_name='Ines')", "list_users()"]
    )


def test_format_errors_and_the_step_cap(space):
    env = make_env(space, max_steps_per_turn=2)
    env.reset()
    bad = env.step("just text")
    assert not bad.done and bad.reward < 0 and "format" in bad.observation[0]["content"]
    last = env.step("<think>x</think><tool_call>[list_users()]</tool_call>")
    assert last.done and last.info["truncated"] and env.format_errors == 1


def test_injected_error_waits_for_a_call_that_leaves_the_state_and_is_executed(space):
    env = make_env(space, inject_error_at=0)
    env.reset()
    # add_contact changes the state: a constructed error would not replay, so none is given
    first = env.step("<think>a</think><tool_call>[add_contact(user_name='Ines')]</tool_call>")
    assert "USR005" in first.observation[0]["content"] and not env.injected
    # list_users leaves it as it was: it gets the error, and it ran (the recorded execution)
    step = env.step("<think>b</think><tool_call>[list_users()]</tool_call>")
    assert "Error during execution" in step.observation[0]["content"]
    assert [item.call.name for item in env.session.history] == ["add_contact", "list_users"]
    env.step("<think>retry</think><tool_call>[list_users()]</tool_call>")
    assert env.injected and [c.ok for c in env.calls] == [True, False, True]
    assert env.calls[1].kind == "transient"


def test_auth_error_names_the_login_and_needs_an_earlier_one(space):
    docs = space.docs_of(["MessageAPI"])
    session = Session(["MessageAPI"], space.initial_config(["MessageAPI"], {}))
    env = RoundEnv(
        session,
        system=system_prompt(docs),
        history=[],
        user="q",
        function_docs=docs,
        inject_error_at=0,
        error_kind="auth",
        login_tools={"view_messages_sent": "message_login"},
    )
    env.reset()
    # no login yet: nothing to remedy with, so no auth error
    env.step("<think>a</think><tool_call>[view_messages_sent()]</tool_call>")
    assert not env.injected
    login = "message_login(user_id='USR001')"
    env.step(f"<think>b</think><tool_call>[{login}]</tool_call>")
    step = env.step("<think>c</think><tool_call>[view_messages_sent()]</tool_call>")
    text = step.observation[0]["content"]
    assert "not authenticated" in text and "message_login" in text and env.injected
    assert env.calls[-1].kind == "auth"
    with pytest.raises(ValueError, match="error_kind"):
        RoundEnv(session, system="", history=[], user="", function_docs=docs, error_kind="x")


def test_round_prompt_carries_the_advanced_tool_and_every_hint():
    from aworld_rl_funreason_mt.tooling import AdvancedTool

    tool = AdvancedTool("greet_contact", "Adds a contact and greets them.", {"type": "object"})
    text = round_prompt("Greet Ines", tool, ["log in first", "use her new id"])
    assert text.startswith(
        "Greet Ines\n\nHint: this request amounts to one composite tool, greet_contact"
    )
    assert text.count(REVIEW_MARK) == 2 and text.endswith("use her new id")
    assert round_prompt("Greet Ines") == "Greet Ines"


@pytest.fixture
def docs(space):
    return space.docs_of(["MessageAPI", "MathAPI"])


def test_call_set_is_order_free_and_uses_bfcl_string_rules(docs):
    truth = ["add_contact(user_name='Ines')", "add(a=2.0, b=3.0)"]
    assert call_set_match(["add(b=3.0, a=2)", "add_contact(user_name='ines')"], truth, docs).ok
    extra = call_set_match([*truth, "list_users()"], truth, docs)
    assert not extra.ok and extra.extra == ("list_users()",) and "3 calls ran" in extra.reason
    wrong = call_set_match(["add_contact(user_name='Bob')", "add(a=2.0, b=3.0)"], truth, docs)
    assert not wrong.ok and wrong.missing == ("add_contact(user_name='Ines')",)


def test_possible_answers_allow_omitting_optional_parameters(space):
    docs = {d["name"]: d for d in space.docs_of(["MathAPI"])}
    from aworld_rl_core.tooluse import parse_python_calls

    answers = possible_answers(parse_python_calls("[round_number(number=2.5)]"), docs)
    assert answers == [{"round_number": {"number": [2.5], "decimal_places": ["", 0]}}]


def test_state_rule_compares_states_and_results(space):
    docs = space.docs_of(["MessageAPI"])
    config = space.initial_config(["MessageAPI"], {})
    with Session(["MessageAPI"], config) as trace, Session(["MessageAPI"], config) as agent:
        from aworld_rl_core.tooluse import Call

        expected = trace.run(Call("add_contact", {"user_name": "Ines"})).text
        kwargs = dict(made=[], expected=["add_contact(user_name='Ines')"], function_docs=docs)
        verdict = match_round(
            "state", agent=agent, trace_session=trace, expected_results=[expected], **kwargs
        )
        assert not verdict.ok and "state of MessageAPI differs" in verdict.reason
        got = agent.run(Call("add_contact", {"user_name": "Ines"})).text
        ok = match_round(
            "state",
            agent=agent,
            trace_session=trace,
            expected_results=[expected],
            agent_results=[got],
            **kwargs,
        )
        assert ok.ok
        with pytest.raises(ValueError, match="match rule"):
            match_round("fuzzy", **kwargs)


def test_call_set_match_takes_dict_arguments(space):
    """BFCL's possible answers hold a dict's values as lists (a dict argument crashed the match)."""
    docs = space.docs_of(["TicketAPI"])
    truth = ["edit_ticket(ticket_id=1, updates={'priority': 3, 'status': 'Closed'})"]
    assert call_set_match(truth, truth, docs).ok
    other = call_set_match(
        ["edit_ticket(ticket_id=1, updates={'priority': 4, 'status': 'Closed'})"], truth, docs
    )
    assert not other.ok and "edit_ticket" in other.reason


def test_not_found_error_names_the_lookup_that_gave_the_id(space):
    docs = space.docs_of(["VehicleControlAPI"])
    cls = "VehicleControlAPI"
    session = Session([cls], space.initial_config([cls], {}))
    env = RoundEnv(
        session,
        system=system_prompt(docs),
        history=[],
        user="q",
        function_docs=docs,
        inject_error_at=0,
        error_kind="not_found",
        producers={"estimate_distance": {"cityA": ("get_zipcode_based_on_city",)}},
    )
    env.reset()
    lookup = "get_zipcode_based_on_city(city='Rivermist')"
    env.step(f"<think>a</think><tool_call>[{lookup}]</tool_call>")
    assert not env.injected  # the lookup takes no earlier output
    zipcode = json.loads(env.calls[0].result)["zipcode"]
    distance = f"estimate_distance(cityA='{zipcode}', cityB='94016')"
    step = env.step(f"<think>b</think><tool_call>[{distance}]</tool_call>")
    text = step.observation[0]["content"]
    assert "not found" in text and "get_zipcode_based_on_city" in text, text
    assert env.calls[-1].kind == "not_found"
    env.step(f"<think>c</think><tool_call>[{lookup}, {distance}]</tool_call>")
    assert [c.remedy for c in env.calls] == [False, False, True, False]
    assert [c.ok for c in env.calls] == [True, False, True, True]
