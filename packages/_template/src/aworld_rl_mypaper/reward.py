"""The package's own contribution lives in small pure modules like this one."""

from collections.abc import Mapping, Sequence


def exact_match(
    completions: Sequence[Sequence[Mapping[str, object]]], answer: list[str], **_: object
) -> list[float]:
    """1.0 where the last assistant message equals the reference answer (whitespace stripped).

    A completion is the episode's messages after the prompt (the one reward signature).
    """
    scores = []
    for messages, reference in zip(completions, answer, strict=True):
        said = [str(m.get("content") or "") for m in messages if m.get("role") == "assistant"]
        scores.append(float(bool(said) and said[-1].strip() == reference.strip()))
    return scores
