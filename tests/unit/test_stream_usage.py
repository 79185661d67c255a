"""The rules of `transcript_usage`: what the stream can tell about spend, and when it cannot.

Each test states one rule; unknown is `None`, never 0, and one unknowable message makes the
total unknown (a partial sum would understate spend and look like a measurement).
"""

from __future__ import annotations

import pytest

from workflow_bench.cells.stream_usage import transcript_usage
from workflow_bench.usage import sum_usage

pytestmark = pytest.mark.unit
UNKNOWN = dict.fromkeys(
    ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
)


def _u(i, cc, cr, o):
    return {
        "input_tokens": i,
        "cache_creation_input_tokens": cc,
        "cache_read_input_tokens": cr,
        "output_tokens": o,
    }


def _assistant(message_id, usage, *, blocks=("text",), parent=None, model="m", content=...):
    return {
        "type": "assistant",
        "parent_tool_use_id": parent,
        "message": {
            "id": message_id,
            "model": model,
            "usage": usage,
            "content": [{"type": b} for b in blocks] if content is ... else content,
        },
    }


def _agent_result(call_ids, usage, *, event_type="user", message=True):
    event = {"type": event_type, "tool_use_result": {"status": "completed"}}
    if usage is not None:
        event["tool_use_result"]["usage"] = usage
    if message:
        event["message"] = {"content": [{"type": "tool_result", "tool_use_id": c} for c in call_ids]}
    return event


# ── a message that cannot be deduplicated ──────────────────────────────────────────────────


@pytest.mark.parametrize("bad_id", [None, "", 7, ["m9"]], ids=["missing", "empty", "int", "list"])
def test_a_message_without_a_usable_id_makes_the_total_unknown(bad_id):
    # Next to countable messages: dropping it silently would understate the spend.
    events = [
        _assistant("m1", _u(10, 0, 0, 1)),
        _assistant(bad_id, _u(5, 0, 0, 1)),
        _assistant("m2", _u(7, 0, 0, 1)),
    ]
    assert transcript_usage(events) == UNKNOWN


def test_a_synthetic_message_is_skipped_and_later_messages_still_count():
    events = [
        _assistant("m1", _u(10, 0, 0, 1)),
        _assistant("syn", _u(0, 0, 0, 0), model="<synthetic>"),
        _assistant("m2", _u(20, 1, 2, 3)),
    ]
    assert transcript_usage(events) == _u(30, 1, 2, 4)


def test_events_that_are_not_assistant_messages_are_ignored():
    events = [
        {"type": "system"},
        {"type": "assistant", "message": "not a mapping"},
        _assistant("m1", _u(3, 0, 0, 1)),
    ]
    assert transcript_usage(events) == _u(3, 0, 0, 1)


def test_a_message_whose_content_is_not_a_list_still_counts():
    for content in (None, 5, "text"):
        assert transcript_usage([_assistant("m1", _u(4, 0, 0, 2), content=content)]) == _u(4, 0, 0, 2)


# ── which values count ─────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("bad", [-1, True, 1.5, "3"], ids=["negative", "bool", "float", "string"])
def test_a_value_that_is_not_a_non_negative_int_is_unknown(bad):
    assert transcript_usage([_assistant("m1", {**_u(10, 0, 0, 1), "output_tokens": bad})]) == {
        **_u(10, 0, 0, None)
    }
    # on the input side it makes the message's report unknown, so every field is unknown
    assert transcript_usage([_assistant("m1", {**_u(10, 0, 0, 1), "input_tokens": bad})]) == UNKNOWN


def test_zero_is_a_value_not_unknown():
    assert transcript_usage([_assistant("m1", _u(10, 0, 0, 0))]) == _u(10, 0, 0, 0)


def test_an_all_zero_input_side_is_no_report_even_with_output():
    # A gateway's message_start: zeros on the input side, the real counts only in message_delta.
    events = [_assistant("m1", _u(10, 0, 0, 1)), _assistant("m2", _u(0, 0, 0, 5))]
    assert transcript_usage(events) == UNKNOWN


def test_an_unknown_field_in_any_event_of_a_message_stays_unknown():
    events = [_assistant("m1", _u(10, 0, 0, 5)), _assistant("m1", {**_u(10, 0, 0, 5), "output_tokens": None})]
    assert transcript_usage(events) == _u(10, 0, 0, None)


def test_an_unknown_output_of_one_message_makes_the_output_total_unknown():
    events = [_assistant("m1", {**_u(10, 0, 0, 1), "output_tokens": None}), _assistant("m2", _u(20, 0, 0, 3))]
    assert transcript_usage(events) == _u(30, 0, 0, None)
    events = [_assistant("m1", _u(20, 0, 0, 3)), _assistant("m2", {**_u(10, 0, 0, 1), "output_tokens": None})]
    assert transcript_usage(events) == _u(30, 0, 0, None)


# ── subagents and Agent-tool results ───────────────────────────────────────────────────────


def test_an_agent_result_equal_to_a_tool_using_subagent_message_still_counts():
    # Only a text-only final message can be the one the result repeats; a tool_use message with
    # the same numbers is another request.
    events = [
        _assistant("m1", _u(100, 0, 0, 10), blocks=("tool_use",)),
        _assistant("s1", _u(50, 0, 0, 5), blocks=("tool_use",), parent="call1"),
        _agent_result(["call1"], _u(50, 0, 0, 5)),
    ]
    assert transcript_usage(events) == _u(200, 0, 0, 20)


@pytest.mark.parametrize("blocks", [("text",), ("thinking", "text"), ("thinking",)])
def test_a_text_only_final_message_already_shown_is_not_counted_twice(blocks):
    events = [
        _assistant("m1", _u(100, 0, 0, 10), blocks=("tool_use",)),
        _assistant("s1", _u(50, 0, 0, 5), blocks=blocks, parent="call1"),
        _agent_result(["call1"], _u(50, 0, 0, 5)),
    ]
    assert transcript_usage(events) == _u(150, 0, 0, 15)


def test_a_final_message_under_another_agent_call_does_not_hide_this_result():
    events = [
        _assistant("m1", _u(100, 0, 0, 10), blocks=("tool_use",)),
        _assistant("s1", _u(50, 0, 0, 5), parent="call0"),
        _agent_result(["call1"], _u(50, 0, 0, 5)),
    ]
    assert transcript_usage(events) == _u(200, 0, 0, 20)


@pytest.mark.parametrize(
    "event",
    [
        _agent_result(["call1", "call2"], _u(50, 0, 0, 5)),  # which call's? ambiguous
        _agent_result([7], _u(50, 0, 0, 5)),  # not an id
        _agent_result(["call1"], None),  # no usage reported
        _agent_result(["call1"], _u(50, 0, 0, 5), event_type="assistant_echo"),  # not a tool result
        _agent_result(["call1"], _u(50, 0, 0, 5), message=False),  # no message to attribute it to
    ],
    ids=["two-results", "non-string-id", "no-usage", "not-a-user-event", "no-message"],
)
def test_an_agent_result_that_cannot_be_attributed_adds_nothing(event):
    assert transcript_usage([_assistant("m1", _u(100, 0, 0, 10)), event]) == _u(100, 0, 0, 10)


def test_no_messages_at_all_is_unknown():
    assert transcript_usage([]) == UNKNOWN
    assert transcript_usage([{"type": "result", "usage": _u(1, 0, 0, 1)}]) == UNKNOWN


def test_sum_over_sessions_is_unknown_per_field_and_when_there_are_none():
    assert sum_usage([_u(1, 2, 3, 4), _u(10, 0, 0, None)]) == _u(11, 2, 3, None)
    assert sum_usage([]) == UNKNOWN
