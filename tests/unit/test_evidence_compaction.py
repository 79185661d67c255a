"""Compaction rules of `cells.evidence.analyse` on small synthetic sessions.

test_evidence.py replays three real CLI bodies; these pin the edges those bodies do not reach:
a summary of at least 16 characters (after stripping) can anchor, a shorter one proves nothing;
the new conversation's first-message text blocks are read as one text joined by newlines; only
a summary under the same agent id, not continued since, anchors — and a skipped candidate does
not stop the search; and the compaction exchange is never the session's, even when it is the
last reply of its conversation because the continued conversation's next reply failed.
"""

from __future__ import annotations

import pytest

from tests.builders import USER, wire_exchange, wire_record, wire_reply
from workflow_bench.cells.evidence import analyse

pytestmark = pytest.mark.unit
ANSWER = [{"type": "text", "text": "the first answer, long enough to quote"}]
SUMMARIZE = {"role": "user", "content": "summarize the conversation"}
OVERLOADED = b"HTTP/1.1 529 Overloaded\r\nContent-Length: 0\r\n\r\n"
NEVER_HAD = "request 2 starts a conversation the session never had"


def _text(text: str) -> list[dict]:
    return [{"type": "text", "text": text}]


def _compaction(summary: str, opening, *, agent_id=None, next_reply=None) -> list:
    """Request 0 answered; request 1 continues it and gets the summary; request 2 opens anew."""
    continued = [USER, {"role": "assistant", "content": ANSWER}, SUMMARIZE]
    first = {"role": "user", "content": opening}
    return [
        wire_exchange(0, [USER], wire_reply("m0", ANSWER, 10), delivered=True),
        wire_exchange(1, continued, wire_reply("m1", _text(summary), 50), delivered=True),
        wire_exchange(2, [first], next_reply or wire_reply("m2", _text("ok"), 7), agent_id=agent_id),
    ]


def test_a_summary_of_sixteen_characters_anchors_a_shorter_one_proves_nothing() -> None:
    sixteen = "abcdefghijklmnop"
    wire = analyse(wire_record(_compaction(f"  {sixteen}\n", f"Summary: {sixteen}")))
    assert wire.tampering == () and [line["thread"] for line in wire.summary] == [0, 0, 0]
    fifteen = sixteen[:15]
    assert analyse(wire_record(_compaction(fifteen, f"Summary: {fifteen}"))).tampering == (NEVER_HAD,)


def test_the_first_messages_text_blocks_are_read_joined_by_newlines() -> None:
    summary = "line one of the summary\nline two of the summary"
    opening = [
        {"type": "text", "text": "Earlier: line one of the summary"},
        *_text("line two of the summary"),
    ]
    assert analyse(wire_record(_compaction(summary, opening))).tampering == ()


def test_a_summary_under_another_agent_anchors_nothing() -> None:
    summary = "SUMMARY: ran echo one; nothing else."
    wire = analyse(wire_record(_compaction(summary, summary, agent_id="ag1")))
    assert wire.tampering == (NEVER_HAD,)


def test_a_reply_the_conversation_went_on_from_is_no_summary_and_does_not_stop_the_search() -> None:
    """Reply 1 is text only but was continued (request 2); reply 2 is the compaction summary."""
    earlier = "an ordinary reply the user answered"
    summary = "SUMMARY: ran echo one; nothing else."
    base = [USER, {"role": "assistant", "content": ANSWER}, {"role": "user", "content": "more"}]
    went_on = [*base, {"role": "assistant", "content": _text(earlier)}, SUMMARIZE]
    session = [
        wire_exchange(0, [USER], wire_reply("m0", ANSWER, 10), delivered=True),
        wire_exchange(1, base, wire_reply("m1", _text(earlier), 20), delivered=True),
        wire_exchange(2, went_on, wire_reply("m2", _text(summary), 50), delivered=True),
    ]
    quoting = wire_exchange(3, [{"role": "user", "content": summary}], wire_reply("m3", _text("ok"), 7))
    assert analyse(wire_record([*session, quoting])).tampering == ()
    stale = wire_exchange(3, [{"role": "user", "content": earlier}], wire_reply("m3", _text("ok"), 7))
    assert analyse(wire_record([*session, stale])).tampering == (
        "request 3 starts a conversation the session never had",
    )


def test_the_compaction_exchange_is_never_the_sessions_even_as_its_threads_last_reply() -> None:
    summary = "SUMMARY: ran echo one; nothing else."
    wire = analyse(wire_record(_compaction(summary, summary, next_reply=OVERLOADED)))
    assert wire.tampering == () and wire.unverifiable == ()
    assert [line["accepted"] for line in wire.summary] == [True, False, False]
    assert wire.usage_main["input_tokens"] == 10 and wire.turns == 1  # the summary's 50 is not reported
    assert wire.usage["input_tokens"] == 60  # but it was served: spend
