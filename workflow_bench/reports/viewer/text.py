"""Untrusted text, made visible and bounded before it reaches a viewer data file.

Everything the viewer shows (model text, tool names, inputs and outputs, test ids, failure
messages, paths) came from the agent or from code it wrote. The page inserts it only as text
(``textContent``), so markup is inert there; this module handles what text alone cannot:

- ``visible``: characters that hide or reorder what a reader sees — C0/C1 controls other than tab
  and newline, DEL, zero-width and bidi controls (a U+202E makes ``gpj.exe`` read ``exe.jpg``),
  line/paragraph separators, BOM — become a visible ``⟦U+202E⟧``; a lone surrogate becomes U+FFFD,
  so every string encodes as UTF-8.
- ``Budget.take``: a string cut to a per-field limit and to what is left of its cell's byte budget,
  head and tail kept, with the number of characters left out (a structural marker the page shows;
  the agent can print look-alike text, never set this field).

Shape-based credential redaction (``redaction.redact_value``) runs again on every value read
from a transcript (they were redacted with the sweep's secrets when written; this catches a
token shape in anything older). Must never: return text that was not through ``visible``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from workflow_bench.redaction import encodable

_HIDDEN = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]"
)
# Of a cut string, the share of the limit kept from its start (the rest from its end): a test
# run's failure summary and a command's exit line are at the end, what it did at the start.
HEAD_SHARE = 0.75


def _mark(match: re.Match[str]) -> str:
    return f"⟦U+{ord(match.group(0)):04X}⟧"


def visible(text: str) -> str:
    """``text`` with hiding and reordering characters shown as ``⟦U+XXXX⟧`` (UTF-8 encodable)."""
    return _HIDDEN.sub(_mark, encodable(text))


def as_text(value: Any) -> str:
    """A tool input or output as text: a string as is, anything else as indented JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


@dataclass(frozen=True, slots=True)
class Cut:
    """A bounded string and how many characters of the original it leaves out (0: whole)."""

    text: str
    omitted: int


def cut(text: str, limit: int) -> Cut:
    """``text`` (made ``visible``) within ``limit`` characters: head and tail kept around the gap."""
    shown = visible(text)
    if len(shown) <= limit:
        return Cut(shown, 0)
    if limit <= 0:
        return Cut("", len(shown))
    head = int(limit * HEAD_SHARE)
    tail = limit - head
    return Cut(shown[:head] + "\n…\n" + (shown[-tail:] if tail else ""), len(shown) - limit)


class Budget:
    """A cell's byte budget for untrusted text: each ``take`` draws on it until it is spent."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.left = total
        self.spent_out = False
        """Some text was cut (or left out) because the budget, not a field limit, ran out."""

    def take(self, text: str, limit: int) -> Cut:
        allowed = max(0, min(limit, self.left))
        piece = cut(text, allowed)
        if piece.omitted and allowed < limit:
            self.spent_out = True
        self.left -= len(piece.text.encode("utf-8"))
        return piece

    def charge(self, nbytes: int) -> bool:
        """Charge the budget for structure (names, ids, counts); False once it is spent."""
        self.left -= nbytes
        if self.left < 0:
            self.spent_out = True
        return self.left >= 0
