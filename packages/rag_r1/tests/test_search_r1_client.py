"""Search-R1's own client code path against our server (a live uvicorn server, over HTTP).

``SearchR1Client`` replays the request/response handling of Search-R1's rollout manager
(``search_r1/llm_agent/generation.py`` at PeterGriffinJin/Search-R1 a14dc3a:
``postprocess_predictions``, ``execute_predictions``, ``batch_search``, ``_batch_search``,
``_passages2string``) and RAG-R1's multi-query ``batch_search`` (one POST per trajectory with
its comma-split queries): ``requests.post(url, json={"queries", "topk", "return_scores":
True}).json()['result']``, no status check, as those clients do. Before the fix the server
answered 422 to an empty query list, an empty query string and ``topk: 0``, and the client died
on ``KeyError: 'result'``.
"""

import re

import pytest

from aworld_rl_rag_r1.retrievers import load_retriever
from aworld_rl_rag_r1.server import ServerConfig, serve

requests = pytest.importorskip("requests")

ACTION = re.compile(r"<(search|answer)>(.*?)</\1>", re.DOTALL)


class SearchR1Client:
    """Search-R1's retrieval handling, line for line in behaviour (written from its code)."""

    def __init__(self, url, topk=3):
        self.url, self.topk = url, topk

    def postprocess_predictions(self, predictions):
        actions, contents = [], []
        for prediction in predictions:
            match = ACTION.search(prediction)
            if match:
                actions.append(match.group(1))
                contents.append(match.group(2).strip())
            else:
                actions.append(None)
                contents.append("")
        return actions, contents

    def _batch_search(self, queries):
        payload = {"queries": queries, "topk": self.topk, "return_scores": True}
        return requests.post(self.url, json=payload, timeout=60).json()

    def batch_search(self, queries):
        results = self._batch_search(queries)["result"]
        return [self._passages2string(result) for result in results]

    @staticmethod
    def _passages2string(retrieval_result):
        reference = ""
        for idx, item in enumerate(retrieval_result):
            content = item["document"]["contents"]
            title = content.split("\n")[0]
            text = "\n".join(content.split("\n")[1:])
            reference += f"Doc {idx + 1}(Title: {title}) {text}\n"
        return reference

    def execute_predictions(self, predictions):
        actions, contents = self.postprocess_predictions(predictions)
        queries = [c for a, c in zip(actions, contents, strict=True) if a == "search"]
        results = self.batch_search(queries)
        assert len(results) == sum(a == "search" for a in actions)
        observations = []
        for action in actions:
            if action == "search":
                observations.append(f"\n\n<information>{results.pop(0).strip()}</information>\n\n")
            else:
                observations.append("")
        return observations

    def batch_search_mq(self, blocks):
        """RAG-R1's multi-query client: one POST per trajectory, its block split on commas."""
        out = []
        for block in blocks:
            queries = [q.strip() for q in block.split(",") if q.strip()]
            payload = {"queries": queries, "topk": self.topk, "return_scores": True}
            out.append(requests.post(self.url, json=payload, timeout=60).json()["result"])
        return out


@pytest.fixture(scope="module")
def live(hash_index):
    retriever = load_retriever(hash_index)
    server = serve(retriever, ServerConfig(port=0))
    try:
        yield retriever, f"http://127.0.0.1:{server.bound_port}/retrieve"
    finally:
        server.should_exit = True
        server.thread.join(10)


def test_a_turn_with_real_searches(live):
    retriever, url = live
    client = SearchR1Client(url)
    turn = [
        "<think>find it</think><search> a painter </search>",
        "<answer> Paris </answer>",
        "no action at all",
        "<search>Works</search>",
    ]
    obs = client.execute_predictions(turn)
    assert obs[1] == obs[2] == ""
    for text, query in ((obs[0], "a painter"), (obs[3], "Works")):
        hits = retriever.search([query], 3)[0]
        assert text.startswith("\n\n<information>Doc 1(Title: ")
        assert all(h.contents in text for h in hits)  # our passages have no newline: title = all
        assert text.count("Doc ") == 3


def test_a_turn_where_nobody_searched(live):
    _, url = live
    client = SearchR1Client(url)
    assert client.execute_predictions(["<answer>x</answer>", "rambling"]) == ["", ""]


def test_an_empty_search_block(live):
    _, url = live
    client = SearchR1Client(url)
    obs = client.execute_predictions(["<search> </search>", "<search>Works</search>"])
    assert obs[0] == "\n\n<information></information>\n\n"
    assert obs[1].count("Doc ") == 3


def test_topk_zero_and_the_multi_query_client(live):
    retriever, url = live
    assert SearchR1Client(url, topk=0).batch_search(["Works", "a painter"]) == ["", ""]
    rows = SearchR1Client(url).batch_search_mq(["a painter, Works", " , ", ""])
    assert [len(r) for r in rows] == [2, 0, 0]
    expected = retriever.search(["a painter", "Works"], 3)
    assert [[d["document"]["contents"] for d in row] for row in rows[0]] == [
        [h.contents for h in hits] for hits in expected
    ]
