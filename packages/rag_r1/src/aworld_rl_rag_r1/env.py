"""``SearchEnv``: RAG-R1's deep-search episode, stepped in batches.

A model turn stops after ``</search>`` or ``</answer>``. An answer ends the episode with the EM
reward; a search splices ``<information>...</information>`` inline into the same assistant turn
(the engine masks it out of the loss) and the model continues; anything else gets the invalid-
action message inline. ``max_search_turns`` turns may search; one more turn follows for the
answer (a search there ends the episode unanswered). ``SearchEnv.step_many`` answers every
searching episode of a turn with one batched, deduplicated, cached retrieval.

Registered as ``rag_r1.search``: ``make_env(row, **options)`` with the row's ``question``,
``golden_answers`` (and ``gold_docs`` for the oracle) and ``SearchEnvConfig`` fields as options.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from aworld_rl_core.config import from_dict, option, to_dict
from aworld_rl_core.environment import Message, Step
from aworld_rl_core.resources import shared
from aworld_rl_rag_r1 import observations
from aworld_rl_rag_r1.actions import (
    STOP,
    OverLimit,
    QueryFormat,
    cut_turn,
    parse_action,
    parse_queries,
)
from aworld_rl_rag_r1.metrics import answer_in, gold_share
from aworld_rl_rag_r1.prompts import Mode, load_template, render
from aworld_rl_rag_r1.retrieval import RetrieverConfig
from aworld_rl_rag_r1.reward import Normalizer, exact_match, f1, format_score
from aworld_rl_rag_r1.search import BatchedSearch, QueryCache

EpisodeReward = Literal["em", "em_format", "f1"]


@dataclass(frozen=True, kw_only=True)
class SearchEnvConfig:
    """The search environment (``env.options`` of the training and evaluation recipes)."""

    mode: Mode = option("mq", help="mq: several queries per search, JSON observation; sq: one")
    query_format: QueryFormat = option(
        "comma", help="how a search block lists queries: comma (the paper), json, auto"
    )
    keep_quoted: bool = option(
        True, help="a comma inside double quotes does not split (false: the paper's split)"
    )
    max_queries: int = option(
        3, help="queries per search (the paper's prompt says 3; 0 = no limit, the paper's code)"
    )
    max_query_chars: int = option(
        512,
        help="each query cut to this many characters before it is searched and echoed in the "
        "observation (bounds what model text can make the environment do; 0: no cut)",
    )
    query_cap: int = option(
        16,
        help="queries one search may retrieve and echo in all, applied after max_queries even "
        "when that is 0 (the excess counts as dropped; 0: no cap, the paper's code)",
    )
    over_limit: OverLimit = option(
        "truncate", help="more queries than the limit: keep the first ones, or invalid action"
    )
    max_search_turns: int = option(5, help="turns that may search; one answer turn follows")
    max_obs_tokens: int = option(
        1000, help="token budget per query's passages (mq) or per observation (sq)"
    )
    max_passage_tokens: int = option(
        0, help="each retrieved passage cut to this many tokens (0: whole, the paper)"
    )
    obs_budget_tokens: int = option(
        0,
        help="observation tokens one episode may receive in all; each search gets its fair "
        "share of what is left (left / searches left), so every allowed search fits (0: no "
        "budget, the paper's code; rag_r1.train's default -1 derives it from the trainer's "
        "response budget)",
    )
    obs_tokenizer: str | None = option(
        None, help="tokenizer counting the budget (the policy's); unset: white-space words"
    )
    normalizer: Normalizer = option("squad", help="answer normalisation of the reward")
    reward: EpisodeReward = option(
        "em",
        help="the episode's reward: em (the paper: 1.0 for a correct answer, else 0), "
        "em_format (Search-R1 v0.3's EM with format score, in place of EM) or f1",
    )
    reward_weight: float = option(1.0, help="the episode reward is multiplied by this")
    prompt_file: str | None = option(
        None, help="a template file with {question} (and optionally {search}); unset: ours"
    )
    retriever: RetrieverConfig = option(factory=RetrieverConfig, help="the retriever")


def searcher(cfg: RetrieverConfig) -> BatchedSearch:
    """One batched searcher (retriever + cache) per process and retriever spec."""

    def build() -> BatchedSearch:
        from aworld_rl_rag_r1.retrieval import make_retriever

        cache = QueryCache(cfg.cache_size) if cfg.cache else None
        return BatchedSearch(make_retriever(cfg), topk=cfg.topk, cache=cache)

    return shared("rag_r1.search", to_dict(cfg), build)


def _truncator(name: str | None) -> observations.Truncator:
    if not name:
        return observations.WordTruncator()

    def build() -> observations.Truncator:
        # where core loads tokenizers today (contract section 6 moves it to aworld_rl_core.models)
        from aworld_rl_core.models import load_tokenizer
        from aworld_rl_core.models.config import ModelConfig

        return observations.TokenTruncator(load_tokenizer(ModelConfig(name_or_path=name)))

    return shared("rag_r1.tokenizer", name, build)


@dataclass
class Counters:
    """An episode's running totals (reported in every step's ``info``)."""

    turns: int = 0
    searches: int = 0
    queries: int = 0
    dropped_queries: int = 0
    invalid: int = 0
    retrieval_s: float = 0.0
    step_s: float = 0.0
    load_s: float = 0.0
    obs_tokens: int = 0
    retrieved_docs: set[str] = field(default_factory=set)
    answer_retrieved: bool = False
    queries_per_search: list[int] = field(default_factory=list)


class SearchEnv:
    """One deep-search episode (see the module docstring)."""

    stop = STOP

    def __init__(self, row: Mapping[str, Any], cfg: SearchEnvConfig) -> None:
        question = row.get("question")
        if not isinstance(question, str) or not question.strip():
            raise ValueError(f"a search row needs a 'question' string; got keys {sorted(row)}")
        golds = row.get("golden_answers", row.get("answers", []))
        self.golds = [golds] if isinstance(golds, str) else [str(g) for g in golds]
        self.gold_docs = [str(d) for d in row.get("gold_docs", []) or []]
        self.question, self.cfg = question, cfg
        self.counters = Counters()
        self.transcript = ""  # the model's turns with the observations spliced in
        self._prompt = render(
            question,
            cfg.mode,
            max_queries=cfg.max_queries,
            template=load_template(cfg.prompt_file),
        )

    def reset(self) -> list[Message]:
        return [{"role": "user", "content": self._prompt}]

    def step(self, model_text: str) -> Step:
        return type(self).step_many([self], [model_text])[0]

    def close(self) -> None:
        pass

    # ------------------------------------------------------------------------ batching

    @classmethod
    def step_many(cls, envs: Sequence[SearchEnv], texts: Sequence[str]) -> list[Step]:
        """Step every episode; all searches of the turn go out as one retrieval per retriever.

        The retriever and the tokenizer are loaded (once per process) before the clock starts:
        ``step_s`` is the per-turn cost, ``load_s`` the one-time load this episode waited for.
        """
        loading = time.perf_counter()
        for env in envs:
            searcher(env.cfg.retriever)
            _truncator(env.cfg.obs_tokenizer)
        began = time.perf_counter()
        load = (began - loading) / max(1, len(envs))
        steps: list[Step | None] = [None] * len(envs)
        searching: dict[int, list[tuple[int, list[str]]]] = {}
        searchers: dict[int, BatchedSearch] = {}
        for i, (env, text) in enumerate(zip(envs, texts, strict=True)):
            try:
                outcome = env._decide(text)
            except Exception as exc:  # model text must never end the batch's turn
                outcome = env._invalid(f"the turn could not be read: {type(exc).__name__}")
            if isinstance(outcome, Step):
                steps[i] = env._finish(outcome)
                continue
            search = searcher(env.cfg.retriever)
            searchers[id(search)] = search
            searching.setdefault(id(search), []).append((i, outcome))
        for key, items in searching.items():
            gold = None
            if envs[items[0][0]].cfg.retriever.backend == "oracle":
                gold = [envs[i].gold_docs for i, _ in items]
            for (i, queries), hits, seconds in cls._retrieve(searchers[key], items, gold):
                envs[i].counters.retrieval_s += seconds
                if isinstance(hits, BaseException):
                    reason = f"the search failed: {type(hits).__name__}: {str(hits)[:200]}"
                    steps[i] = envs[i]._finish(envs[i]._invalid(reason))
                else:
                    steps[i] = envs[i]._finish(envs[i]._observe(queries, hits))
        elapsed = (time.perf_counter() - began) / max(1, len(envs))
        for env, step in zip(envs, steps, strict=True):
            env.counters.step_s += elapsed
            env.counters.load_s += load
            assert step is not None
            step.info.update(env.info())
        return steps  # type: ignore[return-value]

    @staticmethod
    def _retrieve(
        search: BatchedSearch,
        items: list[tuple[int, list[str]]],
        gold: list[list[str]] | None,
    ) -> list[tuple[tuple[int, list[str]], Any, float]]:
        """One batched retrieval; when it fails, each episode's queries alone, so one episode's
        failing query turns only that episode's step into an error observation."""
        try:
            results, stats = search.run([queries for _, queries in items], gold=gold)
        except Exception:
            if len(items) == 1:
                raise
        else:
            share = stats.seconds / len(items)
            return [(item, hits, share) for item, hits in zip(items, results, strict=True)]
        out: list[tuple[tuple[int, list[str]], Any, float]] = []
        for n, item in enumerate(items):
            try:
                (hits,), stats = search.run([item[1]], gold=None if gold is None else [gold[n]])
                out.append((item, hits, stats.seconds))
            except Exception as exc:
                out.append((item, exc, 0.0))
        return out

    # -------------------------------------------------------------------------- one turn

    def _finish(self, step: Step) -> Step:
        """Record the step's observation in the transcript; score a finished episode."""
        self.transcript += step.inline or ""
        if step.done:
            return replace(step, reward=self.cfg.reward_weight * self.episode_reward(step.info))
        return step

    def episode_reward(self, info: Mapping[str, Any]) -> float:
        """The finished episode's reward as ``cfg.reward`` names it (before the weight)."""
        if self.cfg.reward == "em_format":
            return format_score(self.transcript, self.golds)
        return float(info.get("f1" if self.cfg.reward == "f1" else "em", 0.0))

    def _decide(self, text: str) -> Step | list[str]:
        """An answer / invalid / final-turn Step, or the queries to retrieve for."""
        c, cfg = self.counters, self.cfg
        c.turns += 1
        turn = cut_turn(text)
        self.transcript += turn
        action = parse_action(turn)
        if action.kind == "answer":
            em = exact_match(action.content, self.golds, normalizer=cfg.normalizer)
            info = {"answer": action.content, "em": em, "f1": f1(action.content, self.golds)}
            return Step(done=True, info=info)
        if c.turns > cfg.max_search_turns:  # the answer turn: no more searching
            c.invalid += action.kind != "search"  # a search here is a valid action, too late
            return Step(
                done=True, info={"answer": None, "em": 0.0, "f1": 0.0, "ended": "no answer"}
            )
        if action.kind == "search" and not _is_unicode(action.content):
            reason = "the search block is not valid Unicode text (it holds a lone surrogate)"
        elif action.kind == "search":
            if cfg.mode == "sq":  # single-query mode: the whole block is one query
                if action.content:
                    return self._bounded([action.content])
                reason = "the search block holds no query"
            else:
                parsed = parse_queries(
                    action.content,
                    fmt=cfg.query_format,
                    keep_quoted=cfg.keep_quoted,
                    max_queries=cfg.max_queries,
                    over_limit=cfg.over_limit,
                )
                if parsed.queries:
                    c.dropped_queries += parsed.dropped
                    return self._bounded(parsed.queries)
                reason = parsed.error or "the search block holds no query"
        else:
            reason = "no <search> or <answer> block"
        return self._invalid(reason)

    def _invalid(self, reason: str) -> Step:
        """The invalid-action observation; ``reason`` goes to the step's info."""
        self.counters.invalid += 1
        return Step(inline=observations.INVALID_ACTION, info={"invalid": reason})

    def _bounded(self, queries: list[str]) -> list[str]:
        """At most ``query_cap`` queries (the rest counted as dropped), each cut to
        ``max_query_chars`` characters: what is searched and echoed stays bounded."""
        cfg = self.cfg
        if cfg.query_cap and len(queries) > cfg.query_cap:
            self.counters.dropped_queries += len(queries) - cfg.query_cap
            queries = queries[: cfg.query_cap]
        if cfg.max_query_chars:
            queries = [q[: cfg.max_query_chars] for q in queries]
        return queries

    def _observe(self, queries: list[str], hits: list[list[Any]]) -> Step:
        c, cfg = self.counters, self.cfg
        c.searches += 1
        c.queries += len(queries)
        c.queries_per_search.append(len(queries))
        truncator = _truncator(cfg.obs_tokenizer)
        contents = [[h.contents for h in row] for row in hits]
        c.retrieved_docs.update(h.doc_id for row in hits for h in row if h.doc_id)
        if not c.answer_retrieved:
            c.answer_retrieved = answer_in([t for row in contents for t in row], self.golds)
        block = self._render(queries, contents, truncator, self._share())
        c.obs_tokens += truncator.count(block)
        return Step(inline=block, info={"queries": list(queries)})

    def _share(self) -> int | None:
        """Tokens this search's observation may take under ``obs_budget_tokens`` (None: no
        budget): what is left over the searches left, this one included."""
        cfg, c = self.cfg, self.counters
        if cfg.obs_budget_tokens <= 0:
            return None
        searches_left = max(1, cfg.max_search_turns - c.searches + 1)  # c.searches counts this
        return max(0, cfg.obs_budget_tokens - c.obs_tokens) // searches_left

    def _render(
        self,
        queries: list[str],
        contents: list[list[str]],
        truncator: observations.Truncator,
        share: int | None,
    ) -> str:
        """The observation, its per-query (mq) or whole (sq) cut lowered until it fits
        ``share`` tokens."""
        cfg = self.cfg
        per = cfg.max_obs_tokens
        if share is not None:
            per = min(per, share if cfg.mode == "sq" else share // max(1, len(queries)))

        def build(limit: int) -> str:
            if cfg.mode == "sq":
                return observations.single_query(
                    contents[0], truncator, limit, cfg.max_passage_tokens
                )
            return observations.multi_query(
                queries, contents, truncator, limit, cfg.max_passage_tokens
            )

        block = build(per)
        while share is not None and per > 0 and (size := truncator.count(block)) > share:
            excess = size - share
            step = excess if cfg.mode == "sq" else -(-excess // max(1, len(queries)))
            per = max(0, per - step)
            block = build(per)
        return block

    def info(self) -> dict[str, Any]:
        c = self.counters
        return {
            "turns": c.turns,
            "searches": c.searches,
            "queries": c.queries,
            "dropped_queries": c.dropped_queries,
            "invalid_actions": c.invalid,
            "retrieval_s": c.retrieval_s,
            "step_s": c.step_s,
            "load_s": c.load_s,
            "obs_tokens": c.obs_tokens,
            "answer_in_retrieved": float(c.answer_retrieved),
            "gold_docs_retrieved": gold_share(sorted(c.retrieved_docs), self.gold_docs),
        }


def _is_unicode(text: str) -> bool:
    """False for text no tokenizer can encode (a lone surrogate such as ``"a\\ud800b"``)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def make_env(row: Mapping[str, Any], **options: Any) -> SearchEnv:
    """The registered factory: ``options`` are ``SearchEnvConfig`` fields (JSON)."""
    return SearchEnv(row, from_dict(SearchEnvConfig, options))
