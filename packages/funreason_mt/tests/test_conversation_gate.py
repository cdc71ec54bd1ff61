"""The gate on the kept conversation: what it keeps passes BFCL's checks and scores 1 in the RL
environment, with a reasoner that errs (reverse order) and with the demo oracle."""

import asyncio
import tempfile

import pytest
from mt_doubles import OracleClient, ReverseOracle, play_in_rl_env, run_steps

from aworld_rl_funreason_mt.sampler import SamplerConfig
from aworld_rl_funreason_mt.synthesis import Drop, SynthesisConfig, Synthesizer
from aworld_rl_funreason_mt.trajectory import check_conversation, conversation_session


def synthesize_many(space, graph, oracle_factory, n, **config):
    synth = Synthesizer(space, graph, SynthesisConfig(**config), seed=11)
    kept, drops = [], []
    for k in range(n):
        draft = synth.draft(f"g{k}")
        try:
            kept.append(asyncio.run(run_steps(synth, draft, OracleClient(oracle_factory())))[0])
        except Drop as exc:
            drops.append(exc)
        finally:
            draft.close()
    return kept, drops


def assert_right_by_construction(kept):
    from aworld_rl_core.tooluse.bfcl import entry_from_raw
    from aworld_rl_core.tooluse.bfcl.reference import BfclReference

    reference = BfclReference(tempfile.mkdtemp())
    for trajectory in kept:
        calls = trajectory.conversation_calls()
        assert check_conversation(trajectory), trajectory.id
        # bfcl-eval's own multi_turn_checker agrees on the conversation's calls
        assert reference.multi_turn_valid(entry_from_raw(trajectory.bfcl_entry()), calls)
        final = play_in_rl_env(trajectory)
        assert final.done and final.reward == 1.0, (trajectory.id, final.info)


# the earlier sampler (random calls after the target, targets drawn alike): reversing its rounds
# often passes the order-free call-set match, so the gate alone has to refuse what fails BFCL
LOOSE = SamplerConfig(after_target="random", target_choice="uniform")


def test_reverse_order_reasoner_keeps_nothing_that_fails_the_check(space, graph):
    kept, drops = synthesize_many(
        space, graph, ReverseOracle, 12, rounds=2, error_rate=0.0, sampler=LOOSE
    )
    reasons = [d.detail for d in drops if d.reason == "reasoning_failed"]
    # reversing a chain breaks BFCL's checks somewhere: those rounds are refused ...
    assert any("BFCL's check of the conversation" in r for r in reasons), [str(d) for d in drops]
    # ... and whatever is kept (reversal that changes nothing, one-call rounds) passes them
    assert kept
    assert_right_by_construction(kept)
    # with the default sampler (chains) too, with error rounds
    kept, _ = synthesize_many(space, graph, ReverseOracle, 10, rounds=2, error_rate=0.3)
    assert_right_by_construction(kept)


def test_without_the_gate_the_reverse_reasoner_gets_wrong_conversations_kept(space, graph):
    """The defect the gate fixes: the order-free call-set match keeps conversations that fail."""
    kept, _ = synthesize_many(
        space,
        graph,
        ReverseOracle,
        12,
        rounds=2,
        error_rate=0.0,
        conversation_gate=False,
        sampler=LOOSE,
    )
    assert any(not check_conversation(t) for t in kept)


def test_demo_oracle_conversations_pass_and_score_one(space, graph):
    kept, drops = synthesize_many(space, graph, lambda: None, 6, rounds=2, error_rate=0.3)
    assert len(kept) >= 3, [str(d) for d in drops]
    assert_right_by_construction(kept)


def test_next_round_starts_from_the_conversations_state(space, graph):
    kept, _ = synthesize_many(space, graph, lambda: None, 3, rounds=2, error_rate=0.0)
    trajectory = kept[0]
    with conversation_session(trajectory) as session:
        # the state is that of the conversation's calls: the same calls on a fresh session agree
        made = [c for turn in trajectory.conversation_calls() for c in turn]
        assert [item.call.to_python() for item in session.history] == made


@pytest.mark.parametrize("bad", ["<think>x</think>", "nonsense"])
def test_round_calls_skip_malformed_messages(space, bad):
    from aworld_rl_funreason_mt.trajectory import round_calls

    docs = space.docs_of(["MessageAPI"])
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": bad},
        {"role": "assistant", "content": "<think>a</think><tool_call>[list_users()]</tool_call>"},
        {"role": "tool", "content": "[]"},
    ]
    assert round_calls(messages, docs) == ["list_users()"]


def test_a_round_whose_ground_truth_holds_an_error_is_dropped(space, graph):
    import dataclasses

    from aworld_rl_funreason_mt.sampler import Trace, TraceCall
    from aworld_rl_funreason_mt.synthesis import ground_truth_errors

    wrapped = "['Error: User not authenticated. Please log in to view the watchlist.']"
    trace = Trace("get_watchlist", (TraceCall("get_watchlist()", "get_watchlist", wrapped),), True)
    assert ground_truth_errors(trace) == [wrapped]
    status = '{"status": "No user is currently logged in"}'
    assert ground_truth_errors(
        Trace("trading_logout", (TraceCall("trading_logout()", "trading_logout", status),), True)
    ) == [status]

    synth = Synthesizer(space, graph, SynthesisConfig(rounds=1, error_rate=0.0), seed=11)
    draft = synth.draft("gt-error")
    try:
        asyncio.run(run_steps(synth, draft, OracleClient()))
        first = draft.trajectory.rounds[0]
        calls = list(first.trace.calls)
        calls[-1] = dataclasses.replace(calls[-1], result=wrapped)
        first.trace = dataclasses.replace(first.trace, calls=tuple(calls))
        with pytest.raises(Drop, match="ground_truth_error"):
            synth.finish(draft)
        first.error_injected = True  # a flagged error round may hold one (then replay decides)
        with pytest.raises(Drop, match="replay_mismatch"):
            synth.finish(draft)
    finally:
        draft.close()


@pytest.mark.parametrize("kind", ["transient", "auth", "not_found", "missing_argument"])
def test_error_rounds_replay_and_score_one(space, graph, kind):
    kept, _ = synthesize_many(
        space, graph, lambda: None, 14, rounds=2, error_rate=1.0, error_kinds=(kind,)
    )
    flagged = [t for t in kept if t.error_tool_response]
    assert flagged, "no error round was kept"
    injected = [
        m["content"]
        for t in flagged
        for r in t.rounds
        if r.error_injected
        for m in r.messages
        if m["role"] == "tool"
    ]
    mark = {
        "transient": "Error during execution",
        "auth": "Please log in again with",
        "not_found": "Please look it up again with",
        "missing_argument": "missing 1 required argument",
    }[kind]
    assert any(mark in text for text in injected)
    assert_right_by_construction(flagged)


def test_a_left_out_shared_default_is_refused():
    """bfcl-eval's executor shares post_tweet's default lists between calls (and between the
    model's and the ground truth's instances), core copies them: only calls that give them are
    judged alike, so a conversation that leaves one out is not kept."""
    from aworld_rl_funreason_mt.trajectory import shared_defaults_left_out

    classes = ["TwitterAPI", "MathAPI"]
    assert (
        shared_defaults_left_out(["post_tweet(content='x')"], classes) == "post_tweet(content='x')"
    )
    given = "post_tweet(content='x', tags=[], mentions=[])"
    assert shared_defaults_left_out([given, "add(a=1, b=2)"], classes) == ""
