"""Answer scoring: SQuAD-normalised exact match and token F1 on the model's last ``<answer>``.

The public functions take one prediction and its gold answers. The reward functions at the
bottom have TRL's shape (``fn(completions, **columns) -> list[float]``); a completion is the
episode's messages after the prompt (or a plain string). Answers are read from the model's own
text only: ``<information>`` blocks (retrieved passages) are removed first, and the prompt's
example answer is never part of a completion.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

Normalizer = Literal["squad", "eval"]

_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_INFORMATION = re.compile(r"<information>.*?</information>", re.DOTALL)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation)
# RAG-R1's evaluation scripts replace these (and ``_``) with spaces instead of deleting them
_EVAL_PUNCT = _PUNCT | {"‘", "’", "´", "`"}


def normalize_answer(text: str, style: Normalizer = "squad") -> str:
    """Lowercase, drop punctuation and the articles a/an/the, collapse white space.

    ``style="squad"`` deletes punctuation (the training reward); ``style="eval"`` replaces it,
    and ``_``, with a space (RAG-R1's evaluation scripts), so ``"well-known"`` gives
    ``"wellknown"`` and ``"well known"`` respectively.
    """
    text = text.lower()
    if style == "squad":
        text = "".join(ch for ch in text if ch not in _PUNCT)
    elif style == "eval":
        text = "".join(" " if ch in _EVAL_PUNCT or ch == "_" else ch for ch in text)
    else:
        raise ValueError(f"unknown normalizer {style!r}: use 'squad' or 'eval'")
    return " ".join(_ARTICLES.sub(" ", text).split())


def _golds(golds: str | Iterable[str]) -> list[str]:
    if isinstance(golds, str):
        return [golds]
    return [str(g) for g in golds]


def exact_match(
    prediction: str | None, golds: str | Iterable[str], *, normalizer: Normalizer = "squad"
) -> float:
    """1.0 when the normalised prediction equals any normalised gold answer (0.0 for None)."""
    if prediction is None:
        return 0.0
    pred = normalize_answer(prediction, normalizer)
    return float(any(pred == normalize_answer(g, normalizer) for g in _golds(golds)))


def f1(
    prediction: str | None, golds: str | Iterable[str], *, normalizer: Normalizer = "squad"
) -> float:
    """Best token F1 over the gold answers (HotpotQA's rule: yes/no/noanswer must match)."""
    if prediction is None:
        return 0.0
    pred = normalize_answer(prediction, normalizer)
    best = 0.0
    for gold in _golds(golds):
        ref = normalize_answer(gold, normalizer)
        if pred in ("yes", "no", "noanswer") or ref in ("yes", "no", "noanswer"):
            best = max(best, float(pred == ref))
            continue
        pred_tokens, ref_tokens = pred.split(), ref.split()
        common = sum((Counter(pred_tokens) & Counter(ref_tokens)).values())
        if common == 0:
            continue
        precision, recall = common / len(pred_tokens), common / len(ref_tokens)
        best = max(best, 2 * precision * recall / (precision + recall))
    return best


def strip_information(text: str) -> str:
    """The text without its ``<information>...</information>`` blocks (retrieved passages)."""
    return _INFORMATION.sub("", text)


def extract_answer(text: str) -> str | None:
    """The content of the last ``<answer>...</answer>`` the model wrote, or None."""
    found = _ANSWER.findall(strip_information(text))
    return found[-1].strip() if found else None


def completion_text(completion: Any) -> str:
    """The model's text of one episode: assistant contents joined (a string passes through)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Mapping):
        return str(completion.get("content") or "")
    if isinstance(completion, Sequence):
        return "".join(
            str(m.get("content") or "")
            for m in completion
            if isinstance(m, Mapping) and m.get("role") == "assistant"
        )
    return ""


# ------------------------------------------------------------------------- format reward

_TAG = re.compile(r"</?(think|search|information|answer)>")


_NEXT = {
    "start": {"think"},
    "think": {"search", "answer"},
    "search": {"information"},
    "information": {"think"},
    "answer": set(),
}


def valid_sequence(text: str) -> bool:
    """Search-R1's tag grammar (v0.3): ``<think>`` then (``<search>`` ``<information>``
    ``<think>``)* then ``<answer>``, only white space between tags, every tag closed once."""
    last, inside, position = "start", None, 0
    for match in _TAG.finditer(text):
        tag, closing = match.group(1), match.group(0).startswith("</")
        between, position = text[position : match.start()], match.end()
        if closing:
            if inside != tag:
                return False
            last, inside = tag, None
        elif inside is not None or between.strip() or tag not in _NEXT[last]:
            return False
        else:
            inside = tag
    return last == "answer" and inside is None and not text[position:].strip()


def retrieval_correct(text: str, golds: str | Iterable[str]) -> bool:
    """Some gold answer occurs (normalised) inside an ``<information>`` block."""
    blocks = [normalize_answer(b) for b in _INFORMATION.findall(text)]
    return any(normalize_answer(g) in b for g in _golds(golds) for b in blocks if g.strip())


def format_score(
    text: str,
    golds: str | Iterable[str],
    *,
    structure: float = 0.2,
    final_format: float = 0.1,
    retrieval: float = 0.0,
) -> float:
    """Search-R1 v0.3's EM-with-format score (``lambda_f``, ``lambda_ff``, ``lambda_r``)."""
    valid = valid_sequence(text)
    bonus = retrieval if retrieval and retrieval_correct(text, golds) else 0.0
    answer = extract_answer(text)
    if answer is None:
        return structure + bonus if valid else 0.0
    if exact_match(answer, golds):
        return 1.0 if valid else 1.0 - structure
    return structure + bonus if valid else final_format


# ------------------------------------------------------------------ TRL-shaped rewards


def _scores(completions: Sequence[Any], golden_answers: Sequence[Any], score) -> list[float]:
    if len(completions) != len(golden_answers):
        raise ValueError(
            f"got {len(completions)} completions for {len(golden_answers)} golden_answers"
        )
    return [
        float(score(completion_text(c), g))
        for c, g in zip(completions, golden_answers, strict=True)
    ]


def em_reward(completions: Sequence[Any], golden_answers: Sequence[Any], **_: Any) -> list[float]:
    """RAG-R1's reward: 1.0 when the last ``<answer>`` exactly matches a gold answer, else 0."""
    return _scores(completions, golden_answers, lambda t, g: exact_match(extract_answer(t), g))


def f1_reward(completions: Sequence[Any], golden_answers: Sequence[Any], **_: Any) -> list[float]:
    """Token F1 of the last ``<answer>`` against the gold answers."""
    return _scores(completions, golden_answers, lambda t, g: f1(extract_answer(t), g))


def em_format_reward(
    completions: Sequence[Any], golden_answers: Sequence[Any], **_: Any
) -> list[float]:
    """Search-R1 v0.3's EM with a format score (0.2 / 0.1 for valid / invalid tag sequences)."""
    return _scores(completions, golden_answers, format_score)
