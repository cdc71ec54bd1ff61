"""rag_r1.eval and rag_r1.sft-data (agent=llm) against a scripted OpenAI-compatible server (a
test double for vLLM: it honours ``stop`` the way vLLM does) and the real in-process retriever."""

import json

import pytest

from aworld_rl_core.config import load_config
from aworld_rl_core.llm.scripted_server import ScriptedLLMServer
from aworld_rl_core.registry import get_recipe
from aworld_rl_core.runs import execute
from aworld_rl_rag_r1.qa import load_qa
from aworld_rl_rag_r1.recipes.common import WorldConfig, synthetic_world
from aworld_rl_rag_r1.synthetic import SyntheticConfig

WORLD = ["world.encoder.name_or_path=hash", "world.synthetic.questions=8", "agent=llm"]


def vllm_reply(body, text):
    stops = [s for s in body.get("stop") or [] if s in text]
    reason = min(stops, key=text.find) if stops else None
    if reason:
        text = text[: text.find(reason)]
    choice = {
        "index": 0,
        "message": {"role": "assistant", "content": text},
        "finish_reason": "stop",
        "stop_reason": reason,
    }
    return {
        "id": "x",
        "object": "chat.completion",
        "model": body.get("model"),
        "choices": [choice],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def agent(plan, wrong=()):
    """Searches the question's two sub-questions, then answers (wrongly for ``wrong`` ids)."""

    def reply(body):
        question = next(q for q in plan if q in body["messages"][0]["content"])
        qid, sub, gold = plan[question]
        last = body["messages"][-1]
        if last["role"] == "assistant" and "\n</information>\n" in last["content"]:
            answer = "nobody" if qid in wrong else gold
            return vllm_reply(body, f"<think>found</think><answer> {answer} </answer> trailing")
        return vllm_reply(body, f"<think>hops</think><search> {sub[0]}, {sub[1]} </search> junk")

    return reply


@pytest.fixture
def plan(aworld_home):
    world = WorldConfig(
        synthetic=SyntheticConfig(questions=8),
        encoder=WorldConfig().encoder.__class__(name_or_path="hash"),
    )
    items = load_qa(synthetic_world(world, log=lambda _: None).questions)
    return {q.question: (q.id, q.decomposition, q.golden_answers[0]) for q in items}


def _run(recipe, tmp_path, overrides):
    entry = get_recipe(recipe)
    cfg = load_config(
        entry.config_cls(), preset="tiny-cpu", presets=entry.presets, overrides=overrides
    )
    return execute(recipe, entry.run_fn(), cfg, output_dir=tmp_path / "run", quiet=True)


def test_eval_scores_a_scripted_agent(tmp_path, plan):
    with ScriptedLLMServer(agent(plan)) as server:
        result, run = _run(
            "rag_r1.eval",
            tmp_path,
            [
                *WORLD,
                "llm.provider=openai",
                f"llm.base_url={server.base_url}",
                f"llm.model={server.model}",
                "data.limit=8",
                "seeds=[0]",
                "concurrency=4",
                "plots=true",
            ],
        )
        bodies = server.chat_bodies
    m = result.metrics
    assert m["synthetic/em"] == 1.0 and m["synthetic/f1"] == 1.0 and m["synthetic/answered"] == 1.0
    assert m["synthetic/searches_per_question"] == 1.0 and m["synthetic/queries_per_search"] == 2.0
    assert m["synthetic/valid_action_rate"] == 1.0 and m["synthetic/errors"] == 0.0
    assert len(bodies) == 16 and all(b["stop"] == ["</search>", "</answer>"] for b in bodies)
    assert sum(bool(b.get("continue_final_message")) for b in bodies) == 8
    rows = [json.loads(line) for line in (run.dir / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 8 and all(r["em"] == 1.0 and r["searches"] == 1 for r in rows)
    text = rows[0]["completion"][0]["content"]
    assert text.count("<information>") == 1 and text.endswith("</answer>")
    assert "| synthetic | 8 | 1.000 | 1.000 | 1.00 | 2.00 |" in (run.dir / "report.md").read_text()
    assert (run.dir / "em_f1.png").stat().st_size > 1000


def test_sft_data_splits_correct_trajectories_and_pools_the_rest(tmp_path, plan):
    wrong = {qid for qid, _, _ in list(plan.values())[::2]}
    with ScriptedLLMServer(agent(plan, wrong)) as server:
        result, run = _run(
            "rag_r1.sft-data",
            tmp_path,
            [
                *WORLD,
                "llm.provider=openai",
                f"llm.base_url={server.base_url}",
                f"llm.model={server.model}",
                "data.limit=8",
            ],
        )
    m = result.metrics
    assert m["solved"] == 8 - len(wrong) and m["rl_pool"] == len(wrong)
    assert m["sft_samples"] == 2 * m["solved"]
    assert m["kind/search"] == m["kind/history+answer"] == m["solved"]
    records = [json.loads(line) for line in (run.dir / "sft.jsonl").read_text().splitlines()]
    first, second = records[0]["messages"], records[1]["messages"]
    assert first[1]["content"].startswith("<think>hops</think><search>")
    assert "<information>" in second[0]["content"] and second[1]["content"].startswith(
        "<think>found"
    )
    info = json.loads((run.dir / "sharegpt" / "dataset_info.json").read_text())
    assert info["rag_r1_sft"]["formatting"] == "sharegpt"
    pool = [json.loads(line) for line in (run.dir / "rl_pool.jsonl").read_text().splitlines()]
    assert {r["id"] for r in pool} == wrong and all(r["golden_answers"] for r in pool)
