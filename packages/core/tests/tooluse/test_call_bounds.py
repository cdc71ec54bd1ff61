"""Tool calls are bounded: costly arguments are refused before the call, a timer is the
backstop, and global state a tool changes is restored. Names dispatch only as written."""

from __future__ import annotations

import decimal
import os
import subprocess
import sys
import textwrap
from decimal import Decimal

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
from bfcl_helpers import entries

from aworld_rl_core.tooluse import Call, ToolCallParseError, parse_json_calls, parse_python_calls
from aworld_rl_core.tooluse.bfcl import MultiTurnEpisode
from aworld_rl_core.tooluse.dispatch import CallLimits, Dispatcher
from aworld_rl_core.tooluse.parsers import ParseLimits, parse_hermes


def math_entry():
    for category in ("multi_turn_base", "multi_turn_miss_param"):
        for entry in entries(category):
            if (
                "MathAPI" in entry.involved_classes
                and "GorillaFileSystem" in entry.involved_classes
            ):
                return entry
    pytest.fail("no BFCL multi-turn entry with MathAPI and GorillaFileSystem")


COSTLY = [
    ("power(base=10, exponent=10000000)", "power(exponent=10000000) is out of the allowed range"),
    ("power(base=10, exponent=30000000)", "power(exponent=30000000) is out of the allowed range"),
    ("power(10, 30000000)", "power(exponent=30000000) is out of the allowed range"),
    ("square_root(number=2, precision=10000000)", "square_root(precision=10000000) is out"),
    ("logarithm(value=10, base=2, precision=1000000)", "logarithm(precision=1000000) is out"),
    ("power(base=10**200, exponent=2)", "argument values must be literals"),  # never run
    (f"power(base={10**150}, exponent=2)", "an integer argument of power has more than 100"),
]


@pytest.mark.parametrize(("call", "error"), COSTLY)
def test_costly_calls_are_refused_before_they_run_and_the_episode_goes_on(call, error):
    with MultiTurnEpisode(math_entry(), judge=False) as episode:
        (result,) = episode.dispatch([call])
        assert error in result.text and result.text.startswith("Error during execution: ")
        assert result.is_error and not result.executed
        assert result.kind in ("over_limit", "parse_error")
        (after,) = episode.dispatch(["add(a=1, b=2)"])  # the episode goes on
        assert (after.kind, after.text) == ("ok", '{"result": 3}')
        assert episode.execute(["power(base=2, exponent=10)"]) == ['{"result": 1024}']


class Spinner:
    def spin(self, rounds: int) -> dict:
        """Python code that runs for long and swallows ordinary exceptions."""
        done = 0
        while done < rounds:
            try:
                done += 1
            except Exception:
                return {"error": "caught"}
        return {"done": done}


def test_the_time_bound_stops_a_call_that_runs_too_long():
    dispatcher = Dispatcher([Spinner()], call_limits=CallLimits(time_s=0.2))
    (result,) = dispatcher.execute(["spin(rounds=1000000000000)"])
    assert result.kind == "over_limit" and result.is_error
    assert result.text == "Error during execution: spin did not finish within 0.2 s and was stopped"
    assert dispatcher.execute_texts(["spin(rounds=3)"]) == ['{"done": 3}']


def test_global_precision_is_restored_after_each_call():
    pytest.importorskip("mpmath")
    import mpmath

    before_sqrt, before_prec, before_dps = (
        Decimal(2).sqrt(),
        decimal.getcontext().prec,
        mpmath.mp.dps,
    )
    with MultiTurnEpisode(math_entry(), judge=False) as episode:
        texts = episode.execute(
            ["square_root(number=2, precision=2)", "logarithm(value=10, base=2, precision=50)"]
        )
    assert texts[0] == "{'result': Decimal('1.4')}"  # the tool saw its precision
    assert texts[1].startswith("{'result': mpf('3.32192809488736234787031942948939017586483139")
    assert Decimal(2).sqrt() == before_sqrt and decimal.getcontext().prec == before_prec
    assert mpmath.mp.dps == before_dps


@pytest.mark.parametrize(
    "text",
    ["[𝐜𝐝(folder='x')]", "[ｃｄ(folder='x')]", "cd(ｆｏｌｄｅｒ='x')", "[𝐜𝐝(folder='x'), ls()]"],
)
def test_look_alike_names_do_not_dispatch(text):
    with pytest.raises(ToolCallParseError, match="not ASCII as written"):
        parse_python_calls(text)
    with MultiTurnEpisode(math_entry(), judge=False) as episode:
        fs = episode.instances["GorillaFileSystem"]
        cwd = fs._current_dir
        (result,) = episode.dispatch([text.strip("[]").split("), ")[0] + ")"])
        assert result.kind == "parse_error" and fs._current_dir is cwd


def test_non_ascii_inside_strings_is_still_fine():
    assert parse_python_calls("[cd(folder='café')]") == [Call("cd", {"folder": "café"})]


@pytest.mark.parametrize("number", ["1e999", "-1e999", "1E400"])
def test_infinite_numbers_are_refused(number):
    with pytest.raises(ToolCallParseError, match="not finite"):
        parse_python_calls(f"[f(a={number})]")
    with pytest.raises(ToolCallParseError, match="not finite"):
        parse_json_calls(f'[{{"name": "f", "arguments": {{"a": {number}}}}}]')
    with pytest.raises(ToolCallParseError, match="not finite"):
        parse_json_calls([{"name": "f", "arguments": {"a": float(number)}}])
    with pytest.raises(ToolCallParseError, match="constant NaN"):
        parse_json_calls('[{"name": "f", "arguments": {"a": NaN}}]')


def test_hermes_enforces_parse_limits():
    block = '<tool_call>{"name": "ls", "arguments": {}}</tool_call>'
    many = block * 200_000  # 10.8 MB, 200,000 calls
    parsed = parse_hermes(many)
    assert parsed.calls == [] and not parsed.ok
    assert parsed.errors == ["200000 <tool_call> blocks, over the limit of 256"]
    big = (
        '<tool_call>{"name": "echo", "arguments": {"content": "' + "x" * 60_000 + '"}}</tool_call>'
    )
    parsed = parse_hermes(big * 2, limits=ParseLimits(max_calls=8))
    assert parsed.calls == []
    assert parsed.errors[0].endswith("over the limit of 100000")
    assert parse_hermes(block * 3).calls == [Call("ls", {})] * 3


def test_the_timer_leaves_other_alarms_and_threads_alone():
    code = textwrap.dedent(
        """
        import signal, threading, time
        from aworld_rl_core.tooluse.timer import CallTimeout, within

        got = []
        signal.signal(signal.SIGALRM, lambda *_: got.append("theirs"))
        assert within(5.0, lambda: 7) == 7  # starts the watchdog, installs its handler
        signal.setitimer(signal.ITIMER_REAL, 0.05)  # someone else's alarm
        time.sleep(0.5)
        assert got == ["theirs"], got
        try:
            within(0.1, lambda: time.sleep(5))
            raise AssertionError("not stopped")
        except CallTimeout:
            pass
        out = []
        count = lambda: sum(range(10**6))
        worker = threading.Thread(target=lambda: out.append(within(0.01, count)))
        worker.start(); worker.join()
        assert out == [sum(range(10**6))]  # unbounded off the main thread, no error
        print("ok")
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "ok", done.stderr


def test_mutable_defaults_do_not_leak_between_episodes():
    twitter = next(
        e
        for e in entries("multi_turn_base")
        if "TwitterAPI" in e.involved_classes and "authenticate_twitter" in str(e.ground_truth)
    )
    results = []
    for _ in range(2):
        with MultiTurnEpisode(twitter, judge=False) as episode:
            api = episode.instances["TwitterAPI"]
            api.authenticated = True
            posted = episode.dispatch(["post_tweet(content='hello')"])[0].value
            episode.execute([f"mention(tweet_id={posted['id']}, mentioned_usernames=['@a'])"])
            results.append(api.tweets[posted["id"]]["mentions"])
    assert results == [["@a"], ["@a"]]  # not ['@a', '@a'] in the second episode
    post_tweet = type(api).post_tweet
    assert post_tweet.__defaults__ == ([], [])  # the class's own defaults are untouched
