"""One headless Claude Code session: argv, strict stream parsing, evidence.

Owns how the CLI is invoked (prompt on stdin, ``--flag=value`` for variadic
flags, which otherwise swallow the prompt) and how its parent-captured
stream-json output becomes a ``SessionOutcome``. The stream captured by the
parent is the only evidence: files the session wrote under its own HOME are
never trusted, because the agent could have written them.

Failure is judged on ``is_error`` and ``terminal_reason``. The CLI reports
API failures (401/429/5xx/529) with ``subtype: "success"`` (observed on
2.1.332), so ``subtype`` alone would count an outage as a measurement.
Skill evidence is read by ``skill_evidence``; an arm's sessions fold into a row in ``session_fold``.
"""

from __future__ import annotations

import json
import math
import re
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from workflow_bench.judging.outcomes import ErrorKind
from workflow_bench.process import ProcessResult
from workflow_bench.redaction import printable, redact_text, redact_value
from workflow_bench.sandbox import PROJECT_SETTINGS, SANDBOX_CLAUDE_BIN, RunPolicy, Sandbox
from workflow_bench.toolkit.mcp import EMPTY_MCP_CONFIG
from workflow_bench.usage import USAGE_FIELDS, unknown_usage

from .skill_evidence import skill_evidence, tool_use_counts
from .stream_usage import transcript_usage

MAX_STREAM_BYTES = 8 * 1024 * 1024  # reference cap; overflow makes evidence unverifiable, not truncated
TAIL_CHARS = 2000
_SESSION_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
# Inline settings for every session: no hooks from anywhere (a repository's
# .claude/settings.json could otherwise run commands outside the tool log).
SESSION_SETTINGS = PROJECT_SETTINGS  # also the project mask's settings.json (sandbox/_confine.py)
# The only file setting source a session loads: the project's, which is the harness's read-only
# mask of the workspace's .claude (cells/run.py); never the user's ($CLAUDE_CONFIG_DIR under the
# agent-writable HOME) or the local one. Measured on 2.1.332: the CLI reloads a settings file the
# agent writes mid-session (env, apiKeyHelper, statusLine, hooks...), and ``project`` is the
# source that gates the workspace's skills (with none, the seeded skills do not load).
SETTING_SOURCES = "--setting-sources=project"
# Workspace paths the CLI would read as its configuration in some source: recorded in the row
# (``cli_config_written``) when the agent leaves one; none is read by any session.
CLI_CONFIG = re.compile(
    r"(^|/)(\.claude/settings(\.local)?\.json|\.claude\.json|\.mcp\.json|managed-settings\.json)$"
)


@dataclass(frozen=True, slots=True)
class SessionRequest:
    """Everything needed to start one session; built by the cell from its ArmSpec."""

    prompt: str
    model: str
    tools: tuple[str, ...]
    disallowed_tools: tuple[str, ...]
    expected_skill: str | None
    env: Mapping[str, str]
    timeout_s: float
    effort: str | None = None
    extra_args: tuple[str, ...] = ()  # --flag=value forms only (variadic flags swallow what follows)
    mcp_config: str = EMPTY_MCP_CONFIG  # always passed with --strict-mcp-config (toolkit/mcp.py)
    harness_settings_only: bool = True  # False only in the canary's negative control


@dataclass(frozen=True, slots=True)
class SessionOutcome:
    """What one session measured. Unknown values are None, never 0."""

    ok: bool
    error_kind: ErrorKind | None
    error_detail: Any
    usage: Mapping[str, int | None]
    cost_usd: float | None
    duration_s: float | None
    num_turns: int | None
    session_id: str | None
    skill_invoked: bool | None
    transcript_missing: bool
    tool_use_counts: Mapping[str, int]
    transcript: bytes
    diagnostics: tuple[str, ...] = field(default_factory=tuple)
    transcript_usage: Mapping[str, int | None] = field(default_factory=unknown_usage)
    """Usage summed over the stream's assistant messages, subagents included (``transcript_usage``)."""
    events: tuple[Mapping[str, Any], ...] = ()
    """The parsed stream (second view), kept in memory for the wire cross-check; never written."""
    stream_usage: Mapping[str, int] | None = None
    """The result event's usage as the stream printed it (None when it had no valid result)."""
    usage_wire: Mapping[str, int | None] = field(default_factory=unknown_usage)
    """Every message the relay saw served in this session, subagents included (evidence of record)."""
    relay_refused: int = 0
    relay_forked: int = 0
    """Requests that forked a conversation the CLI had (``evidence.WireEvidence.forks``)."""
    relay_upstream_retries: int = 0
    """Requests whose first upstream attempt failed in transport and that the relay retried."""
    wire_summary: tuple[Mapping[str, Any], ...] = ()
    skills_invoked: tuple[str, ...] | None = None
    """Skills the wire proves invoked (``evidence.WireEvidence.skills_invoked``); None without a record."""


def claude_argv(request: SessionRequest, *, session_id: str) -> list[str]:
    argv = [
        SANDBOX_CLAUDE_BIN,
        "-p",
        "--input-format",
        "text",
        "--output-format",
        "stream-json",
        "--verbose",
        "--model",
        request.model,
        "--permission-mode",
        "dontAsk",
        f"--tools={','.join(request.tools)}",
        f"--allowedTools={','.join(request.tools)}",
        *((SETTING_SOURCES,) if request.harness_settings_only else ()),
        "--settings",
        SESSION_SETTINGS,
        "--strict-mcp-config",
        f"--mcp-config={request.mcp_config}",
        "--session-id",
        session_id,
    ]
    argv += list(request.extra_args)
    if request.disallowed_tools:
        argv.append(f"--disallowedTools={','.join(request.disallowed_tools)}")
    if request.effort:
        argv += ["--effort", request.effort]
    return argv


def run_session(
    sandbox: Sandbox,
    request: SessionRequest,
    *,
    policy: RunPolicy,
    secrets: Sequence[str],
    cancel: threading.Event | None = None,
    on_event: Callable[[Mapping[str, Any]], None] | None = None,
    session_id: str | None = None,
) -> SessionOutcome:
    """Run one CLI session in the sandbox and parse what it printed (the stream: second view)."""
    session_id = session_id or str(uuid.uuid4())

    def _observe(line: bytes) -> None:
        if on_event is None or not line.strip():
            return
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):
            return  # parse_session judges the captured stream strictly afterwards
        if isinstance(event, dict):
            on_event(event)

    result = sandbox.run(
        claude_argv(request, session_id=session_id),
        policy=policy,
        env=request.env,
        stdin=request.prompt.encode(),
        timeout_s=request.timeout_s,
        max_stdout_bytes=MAX_STREAM_BYTES,
        cancel=cancel,
        on_stdout_line=_observe,
    )
    return parse_session(result, expected_skill=request.expected_skill, secrets=secrets)


# ── parsing ────────────────────────────────────────────────────────────────


class _StreamError(ValueError):
    pass


def _reject_constant(token: str) -> Any:
    raise _StreamError(f"non-finite number {token} in stream")


def parse_events(stdout: bytes) -> list[dict[str, Any]]:
    """Strict decode: UTF-8, one JSON object per non-empty line, no NaN/Infinity."""
    try:
        text = stdout.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _StreamError(f"stream is not UTF-8: {exc}") from exc
    events = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            event = json.loads(line, parse_constant=_reject_constant)
        except (ValueError, RecursionError) as exc:  # RecursionError: nesting deeper than json allows
            raise _StreamError(f"line {number} is not JSON: {type(exc).__name__}: {exc}"[:500]) from exc
        if not isinstance(event, dict):
            raise _StreamError(f"line {number} is not a JSON object")
        events.append(event)
    return events


def _usage(result_event: Mapping[str, Any]) -> dict[str, int] | None:
    usage = result_event.get("usage")
    if not isinstance(usage, dict):
        return None
    out = {}
    for key in USAGE_FIELDS:
        value = usage.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return None
        out[key] = value
    return out


def _finite_nonneg(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


def _session_error(
    result: ProcessResult,
    detail: str,
    *,
    transcript: bytes,
    kind: ErrorKind | None = None,
    events: Sequence[Mapping[str, Any]] = (),
) -> SessionOutcome:
    stdout_tail = result.stdout[-TAIL_CHARS:].decode("utf-8", "replace")
    if kind is None:
        kind = ErrorKind.CANCELLED if result.state == "cancelled" else ErrorKind.SESSION_ERROR
    return SessionOutcome(
        ok=False,
        error_kind=kind,
        error_detail={
            "returncode": result.returncode,
            "process_state": result.state,
            "process_detail": result.detail,
            "stderr_tail": result.stderr_tail[-TAIL_CHARS:],
            "stdout_tail": stdout_tail,
            "event_stream_error": detail,
        },
        usage=unknown_usage(),
        cost_usd=None,
        duration_s=result.duration_s,
        num_turns=None,
        session_id=None,
        skill_invoked=None,
        transcript_missing=not transcript,
        tool_use_counts={},
        transcript=transcript,
        transcript_usage=transcript_usage(events) if events else unknown_usage(),
        events=tuple(events),
    )


def parse_session(
    result: ProcessResult, *, expected_skill: str | None, secrets: Sequence[str]
) -> SessionOutcome:
    """Turn a finished CLI process into a SessionOutcome (pure; unit-tested)."""
    if result.reader_error:
        # The capture or the live observer failed: what we hold may not be the whole stream.
        return _session_error(result, result.reader_error, transcript=b"")
    if result.stdout_overflow:
        return _session_error(result, f"stream exceeded {MAX_STREAM_BYTES} bytes", transcript=b"")
    try:
        events = parse_events(result.stdout)
    except _StreamError as exc:
        return _session_error(result, str(exc), transcript=b"")
    transcript = render_transcript(events, secrets)
    if result.state != "exited":
        return _session_error(result, f"process {result.state}", transcript=transcript, events=events)
    results = [i for i, e in enumerate(events) if e.get("type") == "result"]
    if len(results) != 1:
        return _session_error(
            result,
            f"expected exactly one result event, saw {len(results)}",
            transcript=transcript,
            events=events,
        )
    index = results[0]
    if any(e.get("type") != "system" for e in events[index + 1 :]):
        return _session_error(
            result, "non-system events follow the result event", transcript=transcript, events=events
        )
    window, final = events[: index + 1], events[index]
    failure = _result_failure(final, result.returncode)
    if failure:
        return _session_error(result, failure, transcript=transcript, events=events)
    usage = _usage(final)
    if usage is None:
        return _session_error(
            result, "result usage lacks one of the four usage fields", transcript=transcript, events=events
        )
    session_id = final.get("session_id")
    if not isinstance(session_id, str) or not _SESSION_ID.fullmatch(session_id):
        return _session_error(result, "result has no usable session_id", transcript=transcript, events=events)
    counts = tool_use_counts(window)
    invoked: bool | None = None
    diagnostics: Sequence[str] = ()
    if expected_skill is not None:
        invoked, diagnostics = skill_evidence(window, expected_skill)
    error_kind = None
    if expected_skill is not None and invoked is None:
        error_kind = ErrorKind.EVIDENCE_UNVERIFIED
    elif invoked is False:
        error_kind = ErrorKind.SKILL_NOT_INVOKED
    duration_ms = _finite_nonneg(final.get("duration_ms"))
    turns = final.get("num_turns")
    return SessionOutcome(
        ok=error_kind is None,
        error_kind=error_kind,
        error_detail="; ".join(diagnostics) or None if error_kind else None,
        usage=usage,
        cost_usd=_finite_nonneg(final.get("total_cost_usd")),
        duration_s=duration_ms / 1000 if duration_ms is not None else result.duration_s,
        num_turns=turns if isinstance(turns, int) and not isinstance(turns, bool) else None,
        session_id=session_id,
        skill_invoked=invoked,
        transcript_missing=invoked is None and expected_skill is not None,
        tool_use_counts=counts,
        transcript=transcript,
        diagnostics=tuple(diagnostics),
        transcript_usage=transcript_usage(events),
        events=tuple(events),
        stream_usage=usage,
    )


def _result_failure(final: Mapping[str, Any], returncode: int | None) -> str | None:
    # Both values come from the stream: stored bounded and escaped (printable), whatever they hold.
    if final.get("is_error") is not False:
        flag = printable(repr(final.get("is_error")), 40)
        why = printable(repr(final.get("terminal_reason")), 80)
        return f"result is_error={flag} ({why})"
    reason = final.get("terminal_reason")
    if reason is not None and reason != "completed":
        return f"terminal_reason={printable(repr(reason), 80)}"
    if returncode != 0:
        return f"CLI exited {returncode} after a successful result"
    return None


def render_transcript(events: Sequence[Mapping[str, Any]], secrets: Sequence[str]) -> bytes:
    """Canonical, structurally redacted JSON lines (sorted keys)."""
    lines = [_render_event(redact_value(e, secrets)) for e in events]
    text = "\n".join(lines) + ("\n" if lines else "")
    return redact_text(text, secrets).encode()


def _render_event(event: Mapping[str, Any]) -> str:
    try:
        return json.dumps(event, sort_keys=True, ensure_ascii=False)
    except RecursionError:
        # json.loads accepted it a few frames higher up; a stub keeps the line count honest.
        stub = {"type": event.get("type"), "wfbench_unrendered": "nesting too deep"}
        return json.dumps(stub, sort_keys=True)
