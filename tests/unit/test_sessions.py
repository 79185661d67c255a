"""Strict stream parsing and skill evidence (pure; negative controls for each rule)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from workflow_bench.cells.session_fold import progress_observer
from workflow_bench.cells.sessions import SessionRequest, claude_argv, parse_session
from workflow_bench.cells.skill_evidence import TOOL_NAME_CHARS, normalize_skill_name, skill_evidence
from workflow_bench.process import ProcessResult

pytestmark = pytest.mark.unit

USAGE = {
    "input_tokens": 10,
    "cache_creation_input_tokens": 1,
    "cache_read_input_tokens": 2,
    "output_tokens": 3,
}


def _result_event(**overrides):
    event = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "terminal_reason": "completed",
        "num_turns": 2,
        "duration_ms": 1500,
        "session_id": "abc-123",
        "total_cost_usd": 0.25,
        "usage": dict(USAGE),
    }
    event.update(overrides)
    return event


def _skill_use(tool_id="toolu_1", skill="plan"):
    return {
        "type": "assistant",
        "message": {
            "content": [{"type": "tool_use", "id": tool_id, "name": "Skill", "input": {"skill": skill}}]
        },
    }


def _tool_result(tool_id="toolu_1", is_error=False):
    return {
        "type": "user",
        "message": {"content": [{"type": "tool_result", "tool_use_id": tool_id, "is_error": is_error}]},
    }


def _process(events, *, returncode=0, state="exited", overflow=False, raw=None):
    stdout = raw if raw is not None else "\n".join(json.dumps(e) for e in events).encode() + b"\n"
    return ProcessResult(
        ("claude",), state, returncode if state == "exited" else None, stdout, overflow, "", 1.0
    )


def test_clean_session_is_measured():
    outcome = parse_session(
        _process([_skill_use(), _tool_result(), _result_event()]), expected_skill="plan", secrets=()
    )
    assert outcome.ok and outcome.error_kind is None
    assert outcome.usage == USAGE
    assert outcome.cost_usd == 0.25 and outcome.num_turns == 2 and outcome.duration_s == 1.5
    assert outcome.skill_invoked is True
    assert outcome.tool_use_counts == {"Skill": 1}


def test_api_error_with_subtype_success_is_a_session_error():
    # 2.1.332 reports a 529 as subtype "success" with is_error true.
    event = _result_event(is_error=True, terminal_reason="api_error", api_error_status=529)
    outcome = parse_session(_process([event], returncode=1), expected_skill=None, secrets=())
    assert not outcome.ok and outcome.error_kind == "session-error"
    assert outcome.usage == dict.fromkeys(USAGE)  # unknown, not zero
    assert outcome.cost_usd is None


@pytest.mark.parametrize(
    "events",
    [
        [],
        [_result_event(), _result_event()],
        [_result_event(), {"type": "assistant", "message": {"content": []}}],
        [_result_event(usage={k: v for k, v in USAGE.items() if k != "cache_read_input_tokens"})],
        [_result_event(usage={**USAGE, "output_tokens": True})],
        [_result_event(terminal_reason="max_turns")],
        [_result_event(session_id="../../etc")],
    ],
    ids=[
        "no-result",
        "two-results",
        "event-after-result",
        "missing-usage",
        "bool-usage",
        "bad-terminal",
        "bad-id",
    ],
)
def test_malformed_streams_are_session_errors(events):
    outcome = parse_session(_process(events), expected_skill=None, secrets=())
    assert outcome.error_kind == "session-error"
    assert not outcome.ok


def test_non_utf8_and_nan_streams_are_rejected():
    assert parse_session(_process([], raw=b"\xff\xfe\n"), expected_skill=None, secrets=()).error_kind == (
        "session-error"
    )
    assert parse_session(_process([], raw=b'{"x": NaN}\n'), expected_skill=None, secrets=()).error_kind == (
        "session-error"
    )


def test_overflow_and_timeout_are_not_measurements():
    assert (
        parse_session(_process([_result_event()], overflow=True), expected_skill=None, secrets=()).ok is False
    )
    timed_out = parse_session(_process([_result_event()], state="timeout"), expected_skill=None, secrets=())
    assert timed_out.error_kind == "session-error"
    cancelled = parse_session(_process([], state="cancelled"), expected_skill=None, secrets=())
    assert cancelled.error_kind == "cancelled"


def test_nonfinite_or_negative_cost_is_unknown():
    outcome = parse_session(_process([_result_event(total_cost_usd=-1)]), expected_skill=None, secrets=())
    assert outcome.ok and outcome.cost_usd is None


def test_skill_never_invoked():
    outcome = parse_session(_process([_result_event()]), expected_skill="plan", secrets=())
    assert outcome.error_kind == "skill-not-invoked" and outcome.skill_invoked is False


def test_wrong_skill_or_failed_skill_is_not_invocation():
    assert skill_evidence([_skill_use(skill="work"), _tool_result()], "plan") == (False, [])
    assert skill_evidence([_skill_use(), _tool_result(is_error=True)], "plan")[0] is False


def test_result_before_request_or_duplicates_make_evidence_unverified():
    invoked, reasons = skill_evidence([_tool_result(), _skill_use()], "plan")
    assert invoked is None and reasons
    invoked, _ = skill_evidence([_skill_use(), _tool_result(), _tool_result()], "plan")
    assert invoked is None
    invoked, _ = skill_evidence([_skill_use(), _tool_result(is_error="no")], "plan")
    assert invoked is None
    outcome = parse_session(
        _process([_skill_use(), _tool_result(is_error="no"), _result_event()]),
        expected_skill="plan",
        secrets=(),
    )
    assert outcome.error_kind == "evidence-unverified" and outcome.transcript_missing


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("plan", "plan"), ("/plan now", "plan"), ("toolkit:Plan", "plan"), ("", None), (3, None)],
)
def test_skill_name_normalization(raw, expected):
    assert normalize_skill_name(raw) == expected


def test_transcript_is_redacted_structurally_and_textually():
    secret = "sk-scripted-0123456789abcdef0123"
    events = [
        {"type": "system", "subtype": "init", "apiKeySource": "ANTHROPIC_API_KEY", "x-api-key": "anything"},
        {"type": "assistant", "message": {"content": [{"type": "text", "text": f"key is {secret}"}]}},
        _result_event(),
    ]
    outcome = parse_session(_process(events), expected_skill=None, secrets=(secret,))
    text = outcome.transcript.decode()
    assert secret not in text and "anything" not in text and "[REDACTED]" in text


def test_argv_keeps_prompt_off_the_command_line_and_uses_equals_for_variadic_flags():
    request = SessionRequest(
        prompt="SECRET PROMPT",
        model="m",
        tools=("Read", "Write"),
        disallowed_tools=("Skill",),
        expected_skill=None,
        env={},
        timeout_s=10,
    )
    argv = claude_argv(request, session_id="00000000-0000-0000-0000-000000000000")
    assert "SECRET PROMPT" not in " ".join(argv)
    assert "--tools=Read,Write" in argv and "--allowedTools=Read,Write" in argv
    assert "--disallowedTools=Skill" in argv
    assert argv[-1].startswith("--disallowedTools")  # nothing after a variadic flag could be read as a prompt


# ── agent-controlled text cannot crash or steer the harness (issue 8 item 7) ──


def _tool_call(name, tool_id="toolu_9"):
    return {"type": "assistant", "message": {"content": [{"type": "tool_use", "id": tool_id, "name": name}]}}


def test_hostile_tool_names_are_bounded_and_escaped_in_counts():
    events = [_tool_call("\x1b[2JBash" + "x" * 5000), _tool_call("Bash\ud800", "toolu_8"), _result_event()]
    outcome = parse_session(_process([], raw=_raw(events)), expected_skill=None, secrets=())
    assert outcome.ok
    names = list(outcome.tool_use_counts)
    assert all(len(n) <= TOOL_NAME_CHARS and "\x1b" not in n for n in names)
    assert "Bash\ufffd" in names
    json.dumps(outcome.tool_use_counts, ensure_ascii=False).encode()
    outcome.transcript.decode("utf-8")  # the transcript bytes are valid UTF-8 despite the surrogate


def _raw(events):
    # json.dumps escapes a lone surrogate as \ud800 (valid ASCII), exactly as the CLI prints it
    return "\n".join(json.dumps(e) for e in events).encode() + b"\n"


def test_progress_lines_escape_control_characters():
    lines: list[str] = []
    observe = progress_observer(lines.append, "cell")
    observe(_tool_call("\x1b]0;pwned\x07Read\nfake: resolved"))
    observe({"type": "assistant", "message": {"content": 7}})  # malformed: ignored, not raised
    observe({"type": "system", "subtype": "api_retry", "attempt": "\x1b[A", "error_status": 529})
    assert len(lines) == 2
    assert all("\x1b" not in line and "\n" not in line and "\x07" not in line for line in lines)
    assert "\\x1b]0;pwned\\x07Read\\x0afake: resolved" in lines[0]


def test_deeply_nested_stream_line_is_a_stream_error_not_a_crash():
    line = b'{"type":"assistant","message":' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"
    outcome = parse_session(_process([], raw=line + _raw([_result_event()])), expected_skill=None, secrets=())
    assert not outcome.ok and outcome.error_kind == "session-error"
    assert "RecursionError" in outcome.error_detail["event_stream_error"]


def test_a_failed_stdout_reader_makes_the_session_an_error():
    clean = _process([_result_event()])
    assert parse_session(clean, expected_skill=None, secrets=()).ok  # negative control
    broken = replace(clean, reader_error="stdout observer failed: UnicodeEncodeError: x")
    outcome = parse_session(broken, expected_skill=None, secrets=())
    assert not outcome.ok and "observer failed" in outcome.error_detail["event_stream_error"]


def test_result_failure_reasons_from_the_stream_are_bounded():
    event = _result_event(is_error=True, terminal_reason="\x1b[2J" + "r" * 100_000)
    outcome = parse_session(_process([event]), expected_skill=None, secrets=())
    reason = outcome.error_detail["event_stream_error"]
    assert not outcome.ok and len(reason) < 200 and "\x1b" not in reason and "\\x1b" in reason
