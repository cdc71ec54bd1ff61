"""The package's own contribution lives in small pure modules like this one."""


def exact_match(completions: list[str], answer: list[str], **_: object) -> list[float]:
    """1.0 where the completion equals the reference answer after stripping whitespace."""
    return [float(c.strip() == a.strip()) for c, a in zip(completions, answer, strict=True)]
