"""The scripted server itself (a test double): routes, logging, faults from a reply function."""

from __future__ import annotations

import httpx
import pytest

from aworld_rl_core.llm.scripted_server import Fault, ScriptedLLMServer

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi there"}]}


def test_routes_and_log():
    with ScriptedLLMServer(model="judge-7b") as server, httpx.Client() as http:
        models = http.get(f"{server.base_url}/models").json()
        assert models["data"] == [{"id": "judge-7b", "object": "model"}]
        assert http.post(f"{server.url}/v1/nowhere", json=CHAT).status_code == 404
        assert http.post(f"{server.base_url}/chat/completions", content=b"{").status_code == 400
        streamed = http.post(f"{server.base_url}/chat/completions", json={**CHAT, "stream": True})
        assert streamed.json()["error"]["message"] == "streaming is not scripted"
        body = http.post(f"{server.base_url}/chat/completions", json=CHAT).json()
        assert body["choices"][0] == {
            "index": 0,
            "message": {"role": "assistant", "content": "echo: hi there"},
            "finish_reason": "stop",
        }
        assert [r.method for r in server.requests] == ["GET", "POST", "POST", "POST", "POST"]
        assert server.chat_bodies[-1] == CHAT
        assert server.in_flight == 0 and server.max_in_flight == 1


def test_reply_function_can_return_faults_and_full_bodies():
    full = {"id": "x", "object": "chat.completion", "choices": [{"index": 0, "message": {}}]}

    def reply(body):
        text = body["messages"][-1]["content"]
        return {"429": Fault.rate_limit(retry_after=3), "raw": full}.get(text, text)

    with ScriptedLLMServer(reply) as server, httpx.Client() as http:
        url = f"{server.base_url}/chat/completions"

        def ask(text):
            return http.post(url, json={"messages": [{"role": "user", "content": text}]})

        limited = ask("429")
        assert limited.status_code == 429 and limited.headers["retry-after"] == "3"
        assert ask("raw").json() == full
        assert ask("plain").json()["choices"][0]["message"]["content"] == "plain"


def test_injected_drop_and_garbage():
    with ScriptedLLMServer() as server, httpx.Client() as http:
        url = f"{server.base_url}/chat/completions"
        server.inject(Fault.drop(), Fault.garbage(b"oops"))
        with pytest.raises(httpx.RemoteProtocolError):
            http.post(url, json=CHAT)
        garbage = http.post(url, json=CHAT)
        assert (garbage.status_code, garbage.content) == (200, b"oops")
        answer = http.post(url, json=CHAT).json()["choices"][0]["message"]
        assert answer["content"] == "echo: hi there"
