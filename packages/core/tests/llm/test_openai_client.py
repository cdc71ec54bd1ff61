"""OpenAIClient against the scripted endpoint (in process; on a socket where the network itself
matters): requests, replies, every fault, limits."""

from __future__ import annotations

import asyncio
import socket

import pytest

from aworld_rl_core.llm import (
    Completion,
    LLMConnectionError,
    LLMHTTPError,
    LLMResponseError,
    LLMTimeoutError,
    OpenAIClient,
    RetryPolicy,
    SyncClient,
)
from aworld_rl_core.llm.scripted_server import Fault, ScriptedLLMServer, ScriptedTransport

USER = [{"role": "user", "content": "What is 6 x 7?"}]


def run(coro):
    return asyncio.run(coro)


def test_reply_and_request_body(llm_server, make_openai, monkeypatch):
    monkeypatch.setenv("TEST_LLM_KEY", "sk-test")
    client = make_openai(
        llm_server,
        api_key_env="TEST_LLM_KEY",
        defaults={"temperature": 0.7, "max_tokens": 64},
        extra_body={"chat_template_kwargs": {"enable_thinking": False}},
    )
    tools = [{"type": "function", "function": {"name": "calc", "parameters": {"type": "object"}}}]
    out = run(client.chat(USER, tools=tools, temperature=0.0))
    assert out == Completion(
        text="echo: What is 6 x 7?",
        model="scripted-model",
        finish_reason="stop",
        usage={"prompt_tokens": 5, "completion_tokens": 6, "total_tokens": 11},
    )
    [request] = llm_server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["Authorization"] == "Bearer sk-test"
    assert request.body == {
        "model": "scripted-model",
        "messages": USER,
        "tools": tools,
        "temperature": 0.0,  # the call's override beats the default 0.7
        "max_tokens": 64,
        "chat_template_kwargs": {"enable_thinking": False},
    }


def test_tool_calls_and_reasoning_are_parsed(make_openai):
    call = {"id": "c1", "type": "function", "function": {"name": "calc", "arguments": '{"a": 6}'}}
    reply = {"tool_calls": [call], "reasoning_content": "multiply"}
    server = ScriptedTransport(lambda body: reply)
    out = run(make_openai(server).chat(USER))
    assert out.text == ""
    assert out.tool_calls == [call]
    assert out.reasoning == "multiply"
    assert out.finish_reason == "tool_calls"
    assert out.message() == {"role": "assistant", "content": "", "tool_calls": [call]}


def test_no_authorization_header_without_key(llm_server, make_openai, monkeypatch):
    monkeypatch.delenv("UNSET_KEY_VAR", raising=False)
    run(make_openai(llm_server, api_key_env="UNSET_KEY_VAR").chat(USER))
    assert "Authorization" not in llm_server.requests[0].headers


@pytest.mark.parametrize(
    "fault",
    [Fault.error(500), Fault.error(503), Fault.error(502), Fault.drop(), Fault.error(408)],
    ids=["500", "503", "502", "drop", "408"],
)
def test_transient_faults_are_retried(llm_server, make_openai, fault):
    client = make_openai(llm_server)
    llm_server.inject(fault, fault)
    out = run(client.chat(USER))
    assert out.text == "echo: What is 6 x 7?"
    assert len(llm_server.chat_bodies) == 3
    assert len(client.sleep.calls) == 2
    # full jitter: the n-th wait lies in [0, base * 2**n]
    assert 0 <= client.sleep.calls[0] <= 0.5
    assert 0 <= client.sleep.calls[1] <= 1.0


def test_rate_limit_honours_retry_after(llm_server, make_openai):
    client = make_openai(llm_server)
    llm_server.inject(Fault.rate_limit(retry_after=7), Fault.error(503, retry_after=2.5))
    assert run(client.chat(USER)).text.startswith("echo:")
    assert client.sleep.calls == [7.0, 2.5]


def test_retries_exhausted_raise_the_last_error(llm_server, make_openai):
    client = make_openai(llm_server, retry=RetryPolicy(max_retries=2, base_delay_s=0.1))
    llm_server.inject(*[Fault.error(500, "engine dead")] * 3)
    with pytest.raises(LLMHTTPError) as info:
        run(client.chat(USER))
    assert info.value.status == 500
    assert info.value.endpoint == f"{llm_server.base_url}/chat/completions"
    assert f"HTTP 500 from {llm_server.base_url}/chat/completions" in str(info.value)
    assert "engine dead" in str(info.value)
    assert "gave up after 3 attempts" in str(info.value)
    assert len(llm_server.chat_bodies) == 3


@pytest.mark.parametrize(
    ("status", "hint"),
    [(400, ""), (401, "$MY_KEY"), (404, "base_url"), (422, "")],
)
def test_client_errors_fail_at_once(llm_server, make_openai, status, hint):
    client = make_openai(llm_server, api_key_env="MY_KEY")
    llm_server.inject(Fault.error(status, "maximum context length is 32768 tokens"))
    with pytest.raises(LLMHTTPError) as info:
        run(client.chat(USER))
    message = str(info.value)
    assert message.startswith(f"HTTP {status} from {llm_server.base_url}/chat/completions: ")
    assert "maximum context length is 32768 tokens" in message
    assert hint in message
    assert len(llm_server.chat_bodies) == 1
    assert client.sleep.calls == []


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"<html>502 bad gateway</html>", "not JSON"),
        (b'{"object": "chat.completion", "choices": []}', "no choices"),
        (b"[1, 2]", "not a JSON object"),
        (b'{"error": {"message": "upstream overloaded"}}', "error: upstream overloaded"),
    ],
)
def test_garbage_body_names_the_endpoint(llm_server, make_openai, body, reason):
    llm_server.inject(Fault.garbage(body))
    with pytest.raises(LLMResponseError) as info:
        run(make_openai(llm_server).chat(USER))
    message = str(info.value)
    assert f"{llm_server.base_url}/chat/completions answered 200" in message
    assert f"({reason})" in message
    assert len(llm_server.chat_bodies) == 1


def test_hang_times_out_then_retries(llm_server, make_openai):
    client = make_openai(llm_server, timeout_s=0.3)
    llm_server.inject(Fault.hang(30))
    assert run(client.chat(USER)).text.startswith("echo:")
    assert len(llm_server.chat_bodies) == 2


def test_hang_on_every_attempt_raises_timeout(llm_server, make_openai):
    client = make_openai(llm_server, timeout_s=0.2, retry=RetryPolicy(max_retries=1))
    llm_server.inject(Fault.hang(30), Fault.hang(30))
    with pytest.raises(LLMTimeoutError, match=r"did not answer within 0.2 s .*timeout_s"):
        run(client.chat(USER))


def test_slow_answer_within_timeout_succeeds(llm_server, make_openai):
    client = make_openai(llm_server, timeout_s=5.0)
    llm_server.inject(Fault.delay(0.3))
    assert run(client.chat(USER)).text.startswith("echo:")
    assert len(llm_server.chat_bodies) == 1
    assert client.sleep.calls == []


def test_dead_endpoint_says_so(make_openai):
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = OpenAIClient(
        base_url=f"http://127.0.0.1:{port}/v1", model="m", retry=RetryPolicy(max_retries=1)
    )
    client.sleep = lambda s: asyncio.sleep(0)
    with pytest.raises(LLMConnectionError) as info:
        run(client.chat(USER))
    assert str(info.value).startswith(
        f"cannot reach http://127.0.0.1:{port}/v1/chat/completions: is the server running?"
    )


def test_bad_base_url_is_rejected():
    with pytest.raises(ValueError, match="must start with http:// or https://"):
        OpenAIClient(base_url="127.0.0.1:8000/v1", model="m")


def test_high_concurrency_over_small_pools_keeps_every_request_in_flight(make_openai):
    # httpcore's per-request cost grows with its pool: 20 in flight use three pools of <= 8
    with ScriptedLLMServer("ok", latency_s=0.2) as server:
        client = make_openai(server, concurrency=20)
        outs = run(client.chat_many([USER] * 40))
        assert [o.text for o in outs] == ["ok"] * 40
        assert server.max_in_flight == 20


def test_concurrency_limit_is_respected(make_openai):
    with ScriptedLLMServer(latency_s=0.05) as server:  # on a socket: real connections
        client = make_openai(server, concurrency=4)
        requests = [[{"role": "user", "content": f"q{i}"}] for i in range(24)]
        outs = run(client.chat_many(requests, concurrency=16))  # the client's limit wins
        assert server.max_in_flight == 4
        server.reset_stats()
        run(client.chat_many(requests[:6], concurrency=2))
        assert server.max_in_flight == 2
    assert [o.text for o in outs] == [f"echo: q{i}" for i in range(24)]


def test_chat_many_return_exceptions_keeps_order(make_openai):
    def reply(body):
        text = body["messages"][-1]["content"]
        return Fault.error(400, "bad prompt") if text == "q1" else text.upper()

    server = ScriptedTransport(reply)
    outs = run(
        make_openai(server).chat_many(
            [[{"role": "user", "content": f"q{i}"}] for i in range(3)],
            return_exceptions=True,
        )
    )
    assert outs[0].text == "Q0" and outs[2].text == "Q2"
    assert isinstance(outs[1], LLMHTTPError) and outs[1].status == 400


def test_scripted_reply_queue_and_dict_requests(make_openai):
    server = ScriptedTransport(["first", {"content": "second"}])
    client = make_openai(server)
    outs = run(client.chat_many([USER, {"messages": USER, "temperature": 0.1}], concurrency=1))
    assert [o.text for o in outs] == ["first", "second"]
    assert server.chat_bodies[1]["temperature"] == 0.1
    with pytest.raises(LLMHTTPError, match="scripted replies exhausted"):
        run(make_openai(server, retry=RetryPolicy(max_retries=0)).chat(USER))


def test_client_survives_successive_event_loops(llm_server, make_openai):
    client = make_openai(llm_server)
    assert run(client.chat(USER)).text == run(client.chat(USER)).text


def test_sync_client(llm_server, make_openai):
    with SyncClient(make_openai(llm_server)) as llm:
        assert llm.chat(USER).text == "echo: What is 6 x 7?"
        outs = llm.chat_many([[{"role": "user", "content": str(i)}] for i in range(5)])
    assert [o.text for o in outs] == [f"echo: {i}" for i in range(5)]


def test_unsupported_request_shapes_are_refused(llm_server, make_openai):
    client = make_openai(llm_server)
    with pytest.raises(ValueError, match="one completion per call"):
        run(client.chat(USER, n=4))
    with pytest.raises(ValueError, match="streaming is not supported"):
        run(client.chat(USER, stream=True))
    with pytest.raises(TypeError, match="messages must be a list"):
        run(client.chat("hello"))
    assert llm_server.requests == []


@pytest.mark.parametrize("after", ["nan", "-5", "86400", "inf"])
def test_unusable_retry_after_falls_back_to_backoff(llm_server, make_openai, after):
    client = make_openai(llm_server)
    llm_server.inject(Fault("error", status=503, body=b"{}", retry_after=after))
    assert run(client.chat(USER)).text.startswith("echo:")
    assert len(client.sleep.calls) == 1 and 0.0 <= client.sleep.calls[0] <= 0.5  # the backoff


def test_a_dripping_reply_ends_at_the_deadline(llm_server, make_openai):
    client = make_openai(llm_server, timeout_s=1.0, retry=RetryPolicy(max_retries=1))
    llm_server.inject(Fault.drip(0.4), Fault.drip(0.4))
    with pytest.raises(LLMTimeoutError, match=r"did not answer within 1 s \(the whole reply"):
        run(client.chat(USER))
    assert len(llm_server.chat_bodies) == 2


def test_a_dripping_socket_ends_at_the_deadline(make_openai):
    with ScriptedLLMServer() as server:  # the network's own per-read timeout never fires here
        client = make_openai(server, timeout_s=1.0, retry=RetryPolicy(max_retries=0))
        server.inject(Fault.drip(0.4))
        with pytest.raises(LLMTimeoutError, match="did not answer within 1 s"):
            run(client.chat(USER))
        server.inject(Fault.drip(0.001))
        assert run(make_openai(server, timeout_s=30.0).chat(USER)).text == "echo: What is 6 x 7?"


def test_a_deeply_nested_reply_is_a_response_error(llm_server, make_openai):
    llm_server.inject(Fault.garbage(b"[" * 100_000 + b"]" * 100_000))
    with pytest.raises(LLMResponseError, match="JSON nested too deeply"):
        run(make_openai(llm_server).chat(USER))
