"""One classifier of tool results (core's): every shape BFCL's APIs report an error in."""

from __future__ import annotations

import pytest

from aworld_rl_core.tooluse import Call, Dispatcher, ResultError, result_error, text_error


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"error": "Invalid access token"}, ResultError("error", "Invalid access token")),
        (
            ["Error: User not authenticated. Please log in to view the watchlist."],
            ResultError(
                "error", "Error: User not authenticated. Please log in to view the watchlist."
            ),
        ),
        ([{"error": "User not authenticated."}], ResultError("error", "User not authenticated.")),
        (
            {"status": "No user is currently logged in"},
            ResultError("error", "No user is currently logged in"),
        ),
        ("Error during execution: boom", ResultError("error", "Error during execution: boom")),
        ({"success": False}, ResultError("failure", "success is false")),
        (
            {"login_status": False, "message": "User ID 'USR9' not found."},
            ResultError("failure", "User ID 'USR9' not found."),
        ),
        ({"symbol": "Stock not found"}, ResultError("failure", "Stock not found")),
        ({"verification_failure": "Invalid date"}, ResultError("failure", "Invalid date")),
        ({"status": "Logged out successfully"}, None),
        ({"history": [1, 2]}, None),
        (["AAPL", "NVDA"], None),
        ([], None),
        ("Error-free text", None),
        (None, None),
        (3.5, None),
    ],
)
def test_result_error_shapes(value, expected):
    assert result_error(value) == expected


def test_text_error_reads_bfcl_renderings_without_evaluating():
    # BFCL renders lists with str() (Python repr) and dicts with json.dumps
    assert text_error("['Error: User not authenticated.']").kind == "error"
    assert text_error('[{"error": "x"}]').message == "x"
    assert text_error('{"status": "No user is currently logged in."}').kind == "error"
    assert text_error("['AAPL']") is None
    assert text_error("__import__('os').system('echo pwned')") is None
    assert text_error("[" * 5000) is None


def test_dispatcher_and_episode_see_wrapped_errors_and_statuses():
    pytest.importorskip("bfcl_eval")
    from aworld_rl_core.tooluse.bfcl.apis import build_instances

    instances = build_instances(
        ["TradingBot", "TicketAPI"], {"TradingBot": "{}", "TicketAPI": "{}"}, long_context=False
    )
    dispatcher = Dispatcher(instances)
    watch, orders, logout, tickets, symbol = dispatcher.execute(
        [
            Call("get_watchlist", {}),
            Call("get_order_history", {}),
            Call("trading_logout", {}),
            Call("get_user_tickets", {}),
            Call("get_symbol_by_name", {"name": "Nothing Inc"}),
        ]
    )
    for result in (watch, orders, logout, tickets):
        assert result.kind == "returned_error" and result.is_error and result.failed, result.text
    assert symbol.kind == "ok" and symbol.failed and symbol.error.kind == "failure"


def test_judge_reports_ground_truth_errors():
    pytest.importorskip("bfcl_eval")
    from aworld_rl_core.tooluse.bfcl import entry_from_raw, function_docs, judge_multi_turn

    raw = {
        "id": "multi_turn_base_gt_error",
        "question": [[{"role": "user", "content": "show my watchlist"}]],
        "initial_config": {"TradingBot": {}},
        "involved_classes": ["TradingBot"],
        "function": function_docs(["TradingBot"])["TradingBot"],
    }
    entry = entry_from_raw(raw, ground_truth=[["get_watchlist()"]])
    verdict = judge_multi_turn(entry, [["get_watchlist()"]])
    assert verdict.valid  # BFCL judges an error result like any other
    assert verdict.details["ground_truth_errors"] == {
        0: ("['Error: User not authenticated. Please log in to view the watchlist.']",)
    }
