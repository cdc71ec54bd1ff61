"""The directed sampler on the real BFCL graph: legal calls, the nearest rule, determinism."""

import random

import pytest

from aworld_rl_core.tooluse import parse_python_calls, text_error
from aworld_rl_funreason_mt.sampler import (
    DirectedSampler,
    SamplerConfig,
    Walk,
    choose_classes,
    choose_target,
)
from aworld_rl_funreason_mt.space import Session


def run(sampler, space, target, seed, scenario=0, walk=None):
    cls = space.owner(target)
    with Session([cls], space.initial_config([cls], {cls: scenario})) as session:
        trace = sampler.sample(
            session, target, random.Random(seed), allowed=space.tools_of([cls]), walk=walk
        )
        return trace, list(session.history)


def test_every_call_is_legal_executed_and_replays(graph, space):
    sampler = DirectedSampler(graph, space)
    reached = 0
    for target in sorted(space.tools):
        for seed in (0, 1):
            trace, history = run(sampler, space, target, seed, scenario=seed)
            called = set()
            for call in trace.calls:
                assert graph.is_legal(call.tool, called), (target, call.tool, sorted(called))
                assert not call.result.startswith("Error") and '"error"' not in call.result
                assert text_error(call.result) is None, (target, call.call, call.result)
                called.add(call.tool)
            # the session kept exactly the trace's calls; a fresh replay gives the same results
            assert [h.text for h in history] == [c.result for c in trace.calls]
            cls = space.owner(target)
            with Session([cls], space.initial_config([cls], {cls: seed})) as fresh:
                for call in trace.calls:
                    (parsed,) = parse_python_calls(call.call)
                    assert fresh.run(parsed).text == call.result
            if trace.reached:
                reached += 1
                first = trace.tools.index(target)
                # after the target, legal tools until M calls (fewer when none can run)
                assert (
                    first + 1 <= len(trace.calls) <= max(sampler.config.calls_per_round, first + 1)
                )
            else:
                assert len(trace.calls) <= sampler.config.max_calls
    assert reached >= 0.9 * 2 * len(space.tools)


def test_same_seed_same_trace_and_seeds_differ(graph, space):
    sampler = DirectedSampler(graph, space)
    targets = ["book_flight", "send_message", "estimate_distance", "cat", "close_ticket", "mean"]
    first = [run(sampler, space, t, 7)[0].to_dict() for t in targets]
    again = [run(DirectedSampler(graph, space), space, t, 7)[0].to_dict() for t in targets]
    assert first == again
    other = [run(sampler, space, t, 8)[0].to_dict() for t in targets]
    assert first != other


def test_nearest_rule_holds_at_every_step_before_the_target(graph, space):
    """Before the target, a tool nearer to it than the one called was legal only if the
    sampler tried it and had to skip it (it failed, had no value for an input, or repeated)."""
    sampler = DirectedSampler(graph, space)
    penalty = sampler.config.repeat_penalty
    for target in ["book_flight", "send_message", "close_ticket", "estimate_distance", "comment"]:
        for seed in range(3):
            trace, _ = run(sampler, space, target, seed)
            dist = graph.distances_to(target)
            skipped = {name for name, _ in trace.skipped}
            called, counts = set(), {}
            for call in trace.calls:
                if call.tool == target:
                    break
                legal = graph.legal(called, among=space.tools_of([space.owner(target)]))
                if target in legal:
                    assert target in skipped
                score = {t: dist.get(t, 999) + penalty * counts.get(t, 0) for t in legal}
                nearer = {t for t in legal if score[t] < score[call.tool]}
                assert nearer <= skipped, (target, seed, call.tool, nearer - skipped)
                called.add(call.tool)
                counts[call.tool] = counts.get(call.tool, 0) + 1


def test_book_flight_chain_feeds_outputs_into_inputs(graph, space):
    trace, _ = run(DirectedSampler(graph, space), space, "book_flight", 0)
    assert trace.reached
    booking = trace.calls[trace.tools.index("book_flight")]
    assert booking.sources["access_token"] == "output:authenticate_travel"
    assert booking.sources["card_id"] == "output:register_credit_card"
    assert trace.tools.index("authenticate_travel") < trace.tools.index("register_credit_card")


def test_after_the_target_legal_tools_at_random_and_strict_mode(graph, space):
    config = SamplerConfig(calls_per_round=5, after_target="random")
    loose, _ = run(DirectedSampler(graph, space, config), space, "pwd", 3)
    assert loose.tools[0] == "pwd" and len(loose.calls) == 5 and loose.reached
    strict = SamplerConfig(calls_per_round=5, continue_after_target=False)
    alone, _ = run(DirectedSampler(graph, space, strict), space, "pwd", 3)
    assert alone.tools == ["pwd"]


def test_walk_carries_prerequisites_into_the_next_round(graph, space):
    sampler = DirectedSampler(graph, space, SamplerConfig(calls_per_round=1))
    walk = Walk()
    with Session(["TravelAPI"], space.initial_config(["TravelAPI"], {})) as session:
        rng = random.Random(0)
        first = sampler.sample(
            session, "register_credit_card", rng, allowed=space.tools_of(["TravelAPI"]), walk=walk
        )
        second = sampler.sample(
            session, "book_flight", rng, allowed=space.tools_of(["TravelAPI"]), walk=walk
        )
    assert first.tools[-1] == "register_credit_card" and "authenticate_travel" in first.tools
    assert "authenticate_travel" not in second.tools[: second.tools.index("book_flight")]
    assert {"authenticate_travel", "register_credit_card", "book_flight"} <= walk.called


def test_targets_and_classes_are_seeded(graph, space):
    targets = [choose_target(graph, space.tools, random.Random(s)) for s in range(20)]
    assert targets == [choose_target(graph, space.tools, random.Random(s)) for s in range(20)]
    assert not set(targets) & set(graph.meta["unreached"])
    assert choose_target(graph, space.tools, random.Random(0), pool=["cd"]) == "cd"
    assert choose_target(graph, space.tools, random.Random(0), pool=["no_such"]) is None
    picked = choose_classes(space.classes, (1, 2), random.Random(4))
    assert 1 <= len(picked) <= 2 and picked == [c for c in space.classes if c in picked]


def test_bad_config_and_target_are_named(graph, space):
    with pytest.raises(ValueError, match="calls_per_round"):
        SamplerConfig(calls_per_round=9, max_calls=8)
    with (
        Session(["MathAPI"], {"MathAPI": {}}) as session,
        pytest.raises(ValueError, match="not among"),
    ):
        DirectedSampler(graph, space).sample(session, "cd", random.Random(0), allowed=["add"])


@pytest.mark.parametrize(
    ("target", "login"),
    [
        ("get_watchlist", "trading_login"),
        ("get_order_history", "trading_login"),
        ("get_transaction_history", "trading_login"),
        ("get_user_tickets", "ticket_login"),
    ],
)
def test_wrapped_auth_errors_are_errors_so_the_login_comes_first(graph, space, target, login):
    sampler = DirectedSampler(graph, space)
    for seed in range(3):
        trace, _ = run(sampler, space, target, seed)
        assert trace.reached
        assert login in trace.tools[: trace.tools.index(target)], trace.call_strings


def test_after_the_target_only_calls_fed_by_the_round(graph, space):
    """The default: every call after the target takes an input from an output of the round."""
    sampler = DirectedSampler(graph, space, SamplerConfig(calls_per_round=4))
    after = fed = 0
    for target in ("get_user_id", "ls", "get_stock_info", "get_ticket", "get_symbol_by_name"):
        for seed in range(3):
            trace, _ = run(sampler, space, target, seed)
            index = trace.tools.index(target)
            earlier = set(trace.tools[: index + 1])
            for call in trace.calls[index + 1 :]:
                after += 1
                sources = [s for s in call.sources.values() if s.startswith("output:")]
                assert sources, (target, call.call, call.sources)
                fed += all(s.split(":", 1)[1] in set(trace.tools) for s in sources)
                earlier.add(call.tool)
    assert after > 0 and fed == after


def test_targets_lean_toward_complex_tools(graph, space):
    from collections import Counter

    allowed = space.tools_of(["TravelAPI"])
    draws = {}
    for weighting in ("complexity", "uniform"):
        rng = random.Random(0)
        draws[weighting] = Counter(
            choose_target(graph, allowed, rng, weighting=weighting) for _ in range(2000)
        )
    # book_flight (behind authenticate_travel and register_credit_card, 5+ inputs) against
    # list_all_airports (no prerequisite, no input)
    assert graph.depth("book_flight") >= 1 and graph.depth("list_all_airports") == 0
    assert graph.complexity("book_flight") > 3 * graph.complexity("list_all_airports")
    ratio = {w: d["book_flight"] / max(d["list_all_airports"], 1) for w, d in draws.items()}
    assert ratio["complexity"] > 3 and 0.5 < ratio["uniform"] < 2
