"""The environment-API graph: hand-checked edges on BFCL's classes, legality, distances, files."""

import json

import pytest

from aworld_rl_funreason_mt.discovery import error_edges, name_type_edges, parse_llm_edges
from aworld_rl_funreason_mt.graph import Edge, ToolGraph
from aworld_rl_funreason_mt.replies import ReplyError


def edges_between(graph, source, target):
    return {
        (e.method, e.group, e.hard) for e in graph.edges if (e.source, e.target) == (source, target)
    }


def test_toy_legality_groups_versus_all():
    # c needs (a or b) for its input x, and s for its state; d needs c
    graph = ToolGraph(
        {"a": "K", "b": "K", "s": "K", "c": "K", "d": "K", "e": "K"},
        [
            Edge("a", "c", "name_type", "param:x"),
            Edge("b", "c", "name_type", "param:x"),
            Edge("s", "c", "probe", "state"),
            Edge("c", "d", "probe", "state"),
            Edge("e", "d", "name_type", "param:y", hard=False),
        ],
    )
    assert graph.legal([]) == ["a", "b", "e", "s"]
    assert not graph.is_legal("c", ["a"]) and graph.is_legal("c", ["a", "s"])
    assert not graph.is_legal("c", ["a", "s"], "all") and graph.is_legal(
        "c", ["a", "b", "s"], "all"
    )
    assert graph.distances_to("d") == {"d": 0, "c": 1, "e": 1, "a": 2, "b": 2, "s": 2}
    assert graph.reachable() == {"a", "b", "c", "d", "e", "s"}
    assert graph.prerequisites("c") == {"param:x": frozenset({"a", "b"}), "state": frozenset({"s"})}
    with pytest.raises(ValueError, match="not in the graph"):
        ToolGraph({"a": "K"}, [Edge("a", "zz", "probe", "state")])


def test_bfcl_graph_has_the_prerequisites_a_reader_expects(graph):
    # an internal input (a token, an id) filled only by another tool's output: a hard edge
    assert ("name_type", "param:access_token", True) in edges_between(
        graph, "authenticate_travel", "book_flight"
    )
    assert ("name_type", "param:card_id", True) in edges_between(
        graph, "register_credit_card", "book_flight"
    )
    assert ("name_type", "param:ticket_id", True) in edges_between(
        graph, "create_ticket", "close_ticket"
    )
    # the zipcode the description of estimate_distance asks for: found in the docs and by probing
    methods = {
        m for m, _, _ in edges_between(graph, "get_zipcode_based_on_city", "estimate_distance")
    }
    assert methods == {"name_type", "probe"}
    # a user-facing input (a ticker a user can say) gives a soft edge only
    assert edges_between(graph, "get_symbol_by_name", "get_stock_info") == {
        ("name_type", "param:symbol", False)
    }
    # execution probing: logins, and the error message that names its fix
    assert ("probe", "state:ticket_login", True) in edges_between(
        graph, "ticket_login", "create_ticket"
    )
    assert ("probe", "state:lockDoors", True) in edges_between(graph, "lockDoors", "startEngine")
    assert ("probe", "state:message_login", True) in edges_between(
        graph, "message_login", "send_message"
    )
    assert ("probe", "state", True) in edges_between(graph, "cd", "cat")
    # the list-wrapped authentication errors (core's classifier sees them as errors)
    for tool in ("get_watchlist", "get_order_history", "get_transaction_history"):
        assert graph.prerequisites(tool) == {"state:trading_login": {"trading_login"}}, tool
    assert graph.prerequisites("get_user_tickets") == {"state:ticket_login": {"ticket_login"}}


def test_bfcl_graph_constraints_are_refined_by_execution(graph):
    cityA = graph.constraints["estimate_distance"]["cityA"]
    assert cityA.internal and "type" in cityA.failed_sources and cityA.sources == ("output",)
    # an existing card's number comes back from get_all_credit_cards, but registering it fails
    assert "output" in graph.constraints["register_credit_card"]["card_number"].failed_sources
    assert graph.constraints["get_flight_cost"]["travel_class"].enum == (
        "economy",
        "business",
        "first",
    )
    assert not graph.constraints["get_stock_info"]["symbol"].internal


def test_bfcl_graph_coverage_figures(graph):
    figures = graph.coverage()
    assert figures["tools"] == 128 and figures["classes"] == 8
    assert figures["reachable_groups"] == 128
    # the paper's literal rule on every edge: the cancel_order <-> get_order_details cycle is stuck
    all_rule = graph.reachable("all")
    assert {"cancel_order", "get_order_details"} & all_rule == set()
    assert figures["reachable_all"] == len(all_rule) == 126
    pairs = {(e.source, e.target) for e in graph.edges}
    assert figures["edges"] == len(pairs)
    assert figures["edges_name_type"] == len(
        {(e.source, e.target) for e in graph.edges if e.method == "name_type"}
    )
    assert figures["edges_llm"] == 0 and figures["edges_confirmed"] >= 1
    assert "get_outside_temperature_from_weather_com" in graph.meta["unreached"]  # always 404


def test_graph_file_round_trip(graph, tmp_path):
    path = graph.save(tmp_path / "graph.json")
    again = ToolGraph.load(path)
    assert again.to_dict() == graph.to_dict()
    assert json.loads(path.read_text())["coverage"] == graph.coverage()
    (tmp_path / "bad.json").write_text(json.dumps({"format": "other"}))
    with pytest.raises(ValueError, match="funreason_mt.graph"):
        ToolGraph.load(tmp_path / "bad.json")
    with pytest.raises(FileNotFoundError, match="aworld-run funreason_mt.graph"):
        ToolGraph.load(tmp_path / "missing.json")


def test_name_type_edges_cross_classes_only_for_values_a_user_passes_on(space):
    edges = name_type_edges(space)
    cross = [e for e in edges if space.owner(e.source) != space.owner(e.target)]
    assert cross and all(e.detail.endswith("(flow)") and not e.hard for e in cross)
    pairs = {(e.source, e.target, e.group) for e in cross}
    # a file's content into a tweet; a stock price into a calculator; a ticket into a message
    assert ("cat", "post_tweet", "param:content") in pairs
    assert ("get_stock_info", "add", "param:a") in pairs
    assert ("get_ticket", "send_message", "param:message") in pairs
    # names alone never cross classes (a username is not passed from one service to another)
    assert not any(e.source == "get_tweet" and e.target == "trading_login" for e in cross)


def test_error_text_names_the_prerequisite(space):
    found = error_edges(
        space,
        "startEngine",
        ['{"error": "Brake pedal needs to be pressed when starting the engine."}'],
    )
    assert [(e.source, e.group) for e in found] == [("pressBrakePedal", "state:pressBrakePedal")]


def test_llm_edges_are_parsed_and_filtered(space):
    reply = (
        "<think>login first</think>```json\n"
        '{"edges": [{"before": "ticket_login", "after": "create_ticket", "reason": "auth"},'
        ' {"before": "no_such_tool", "after": "create_ticket"},'
        ' {"before": "cd", "after": "create_ticket"}, "junk"]}\n```'
    )
    edges = parse_llm_edges(reply, space, "TicketAPI")
    assert [(e.source, e.target, e.method, e.detail) for e in edges] == [
        ("ticket_login", "create_ticket", "llm", "auth")
    ]
    with pytest.raises(ReplyError, match="no JSON object"):
        parse_llm_edges("I think login comes first.", space, "TicketAPI")
    with pytest.raises(ReplyError, match="'edges' list"):
        parse_llm_edges('{"pairs": []}', space, "TicketAPI")


def test_llm_edges_through_an_openai_compatible_server(space):
    """The graph's LLM judgment over HTTP (core's scripted server as the endpoint)."""
    from aworld_rl_core.llm.config import LLMConfig
    from aworld_rl_core.llm.scripted_server import ScriptedLLMServer
    from aworld_rl_funreason_mt.recipes.common import GraphConfig
    from aworld_rl_funreason_mt.space import ToolSpace

    def reply(body):
        user = body["messages"][-1]["content"]
        if user.startswith("Tools of TicketAPI"):
            return json.dumps({"edges": [{"before": "ticket_login", "after": "close_ticket"}]})
        return "I am not sure."

    small = ToolSpace(["TicketAPI", "MathAPI"])
    with ScriptedLLMServer(reply) as server:
        llm = LLMConfig(base_url=server.base_url, model=server.model, max_retries=0)
        graph, errors = GraphConfig(llm_edges=True, llm=llm, sampling_seeds=1).build(small)
    assert ("llm", "state", True) in edges_between(graph, "ticket_login", "close_ticket")
    assert graph.coverage()["edges_llm"] == 1
    assert list(errors) == ["MathAPI"] and "no JSON object" in errors["MathAPI"]
    assert len(server.chat_bodies) == 2
