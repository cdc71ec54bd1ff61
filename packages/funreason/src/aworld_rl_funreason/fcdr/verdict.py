"""Read judge replies: ``<judge>True|False</judge>`` and ``<NewFC>[...]</NewFC>``.

Reasoning the judge wrote before ``</think>`` is ignored; when a tag appears several times the
last one counts (judges sometimes quote the format while thinking).
"""

from __future__ import annotations

import re

_JUDGE = re.compile(r"<judge>\s*(.*?)\s*</judge>", re.IGNORECASE | re.DOTALL)
_NEW_FC = re.compile(r"<NewFC>\s*(.*?)\s*</NewFC>", re.IGNORECASE | re.DOTALL)
_TRUE = {"true", "yes", "1", "pass"}
_FALSE = {"false", "no", "0", "fail"}


def _after_thinking(text: str) -> str:
    _, sep, tail = text.rpartition("</think>")
    return tail if sep else text


def parse_judge(text: str) -> bool | None:
    """True / False from the last ``<judge>`` tag; None when there is no readable verdict."""
    found = _JUDGE.findall(_after_thinking(text or ""))
    if not found:
        return None
    word = found[-1].strip().strip(".").lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    return None


def parse_new_fc(text: str) -> str | None:
    """The text of the last ``<NewFC>`` tag (not yet validated), or None."""
    found = _NEW_FC.findall(_after_thinking(text or ""))
    return found[-1].strip() if found else None
