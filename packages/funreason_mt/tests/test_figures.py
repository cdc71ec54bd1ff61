"""Chain figures of kept rounds, hand-computed."""

from types import SimpleNamespace

from aworld_rl_funreason_mt.figures import chain_depth, chain_figures, chain_table
from aworld_rl_funreason_mt.sampler import Trace, TraceCall


def call(tool, **sources):
    return TraceCall(f"{tool}()", tool, "{}", dict(sources))


def test_chain_depth_and_figures():
    # login -> get_user_id -(user_id)-> send_message -(message)-> post_tweet: depth 3
    chained = Trace(
        "send_message",
        (
            call("message_login", user_id="state"),
            call("get_user_id", user="state"),
            call("send_message", receiver_id="output:get_user_id", message="type"),
            call("post_tweet", content="output:send_message"),
        ),
        True,
    )
    flat = Trace("ls", (call("ls"), call("pwd")), True)
    assert chain_depth(chained) == 3 and chain_depth(flat) == 1
    owners = {
        "message_login": "MessageAPI",
        "get_user_id": "MessageAPI",
        "send_message": "MessageAPI",
        "post_tweet": "TwitterAPI",
        "ls": "GorillaFileSystem",
        "pwd": "GorillaFileSystem",
    }
    a = SimpleNamespace(rounds=[SimpleNamespace(trace=chained)], initial_config={"MessageAPI": {}})
    b = SimpleNamespace(rounds=[SimpleNamespace(trace=flat)], initial_config={"MessageAPI": {}})
    figures = chain_figures([a, b], owners)
    assert figures["rounds"] == 2 and figures["calls"] == 6
    assert figures["chain_depth_mean"] == 2.0 and figures["chain_depth_max"] == 3
    assert figures["chain_share"] == 0.5
    assert figures["calls_consuming_output"] == 2 / 6
    assert figures["target_first_share"] == 0.5  # ls is the first call of its round
    assert figures["rounds_mixing_classes"] == 1 and figures["rounds_with_cross_class_flow"] == 1
    assert figures["distinct_class_states"] == 1 and figures["distinct_initial_configs"] == 1
    table = chain_table(figures)
    assert "| rounds that are chains (depth >= 2) | 50% |" in table


def test_generated_states_load_and_differ():
    from aworld_rl_funreason_mt.space import Session, ToolSpace
    from aworld_rl_funreason_mt.states import GENERATORS, generate_states

    states = generate_states(list(GENERATORS), 4, seed=1)
    assert generate_states(list(GENERATORS), 4, seed=1) == states  # seeded
    space = ToolSpace(generated_states=4, seed=1)
    for cls, drawn in states.items():
        assert len({str(s) for s in drawn}) == 4, cls
        assert space.scenarios[cls][-4:] == drawn
        for k in range(len(space.scenarios[cls])):
            with Session([cls], space.initial_config([cls], {cls: k})):
                pass  # BFCL's _load_scenario accepts it
    assert "MathAPI" not in states and len(space.scenarios["MathAPI"]) == 1
