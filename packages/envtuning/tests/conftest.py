import json

import pytest

pytest.importorskip("bfcl_eval")


def call(name, **arguments):
    """One EnvTuning tool-call response."""
    payload = json.dumps([{"name": name, "arguments": arguments}])
    return f"<think>act</think><tool_call>{payload}</tool_call>"


def calls(*pairs):
    payload = json.dumps([{"name": n, "arguments": a} for n, a in pairs])
    return f"<think>act</think><tool_call>{payload}</tool_call>"


ANSWER = "<think>done</think><answer>Done.</answer>"


@pytest.fixture
def helpers():
    return type(
        "H", (), {"call": staticmethod(call), "calls": staticmethod(calls), "ANSWER": ANSWER}
    )
