"""One headless Claude Code session: argv, strict stream parsing, evidence.

Owns how the CLI is invoked (prompt on stdin, ``--flag=value`` for variadic
flags, which otherwise swallow the prompt) and how its parent-captured
stream-json output becomes a ``SessionOutcome``. The stream captured by the
parent is the only evidence: files the session wrote under its own HOME are
never trusted, because the agent could have written them.

Failure is judged on ``is_error`` and ``terminal_reason``. The CLI reports
API failures (401/429/5xx/529) with ``subtype: "success"`` (observed on
2.1.332), so ``subtype`` alone would count an outage as a measurement.
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

from workflow_bench.process import ProcessResult
from workflow_bench.redaction import redact_text, redact_value
from workflow_bench.sandbox import SANDBOX_CLAUDE_BIN, RunPolicy, Sandbox

from .stream_usage import USAGE_FIELDS, sum_usage_fields, transcript_usage

MAX_STREAM_BYTES = 8 * 1024 * 1024  # reference cap; overflow makes evidence unverifiable, not truncated
TAIL_CHARS = 2000
_SESSION_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
_TOOL_USE_ID = re.compile(r"[A-Za-z0-9_-]{1,256}")
# Inline settings for every session: no hooks from anywhere (a repository's
# .claude/settings.json could otherwise run commands outside the tool log).
SESSION_SETTINGS = json.dumps({"disableAllHooks": True}, separators=(",", ":"))
EMPTY_MCP_CONFIG = '{"mcpServers":{}}'


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


@dataclass(frozen=True, slots=True)
class SessionOutcome:
    """What one session measured. Unknown values are None, never 0."""

    ok: bool
    error_kind: str | None
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
    transcript_usage: Mapping[str, int | None] = field(default_factory=lambda: dict.fromkeys(USAGE_FIELDS))
    """Usage summed over the stream's assistant messages, subagents included (``transcript_usage``)."""


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
        "--settings",
        SESSION_SETTINGS,
        "--strict-mcp-config",
        f"--mcp-config={EMPTY_MCP_CONFIG}",
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
) -> SessionOutcome:
    """Run one CLI session in the sandbox and parse what it printed."""
    session_id = str(uuid.uuid4())

    def _observe(line: bytes) -> None:
        if on_event is None or not line.strip():
            return
        try:
            event = json.loads(line)
        except ValueError:
            return
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
        except ValueError as exc:
            raise _StreamError(f"line {number} is not JSON: {exc}") from exc
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


def _unknown_usage() -> dict[str, int | None]:
    return dict.fromkeys(USAGE_FIELDS)


def _session_error(
    result: ProcessResult,
    detail: str,
    *,
    transcript: bytes,
    kind: str | None = None,
    events: Sequence[Mapping[str, Any]] = (),
):
    stdout_tail = result.stdout[-TAIL_CHARS:].decode("utf-8", "replace")
    if kind is None:
        kind = "cancelled" if result.state == "cancelled" else "session-error"
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
        usage=_unknown_usage(),
        cost_usd=None,
        duration_s=result.duration_s,
        num_turns=None,
        session_id=None,
        skill_invoked=None,
        transcript_missing=not transcript,
        tool_use_counts={},
        transcript=transcript,
        transcript_usage=transcript_usage(events) if events else _unknown_usage(),
    )


def parse_session(
    result: ProcessResult, *, expected_skill: str | None, secrets: Sequence[str]
) -> SessionOutcome:
    """Turn a finished CLI process into a SessionOutcome (pure; unit-tested)."""
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
    invoked, diagnostics = (None, ())
    if expected_skill is not None:
        invoked, diagnostics = skill_evidence(window, expected_skill)
    error_kind = None
    if expected_skill is not None and invoked is None:
        error_kind = "evidence-unverified"
    elif invoked is False:
        error_kind = "skill-not-invoked"
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
    )


def _result_failure(final: Mapping[str, Any], returncode: int | None) -> str | None:
    if final.get("is_error") is not False:
        return f"result is_error={final.get('is_error')!r} ({final.get('terminal_reason')!r})"
    reason = final.get("terminal_reason")
    if reason is not None and reason != "completed":
        return f"terminal_reason={reason!r}"
    if returncode != 0:
        return f"CLI exited {returncode} after a successful result"
    return None


def _content_blocks(events: Sequence[Mapping[str, Any]], event_type: str):
    for event in events:
        if event.get("type") != event_type:
            continue
        message = event.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict):
                    yield block


def tool_use_counts(events: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for block in _content_blocks(events, "assistant"):
        if block.get("type") == "tool_use" and isinstance(block.get("name"), str):
            counts[block["name"]] = counts.get(block["name"], 0) + 1
    return dict(sorted(counts.items()))


def normalize_skill_name(raw: Any) -> str | None:
    """``/plan args`` → ``plan``; ``plugin:plan`` → ``plan``."""
    if not isinstance(raw, str) or not raw.strip():
        return None
    token = raw.strip().split()[0].lstrip("/")
    return token.rsplit(":", 1)[-1].lower() or None


def skill_evidence(events: Sequence[Mapping[str, Any]], expected: str) -> tuple[bool | None, list[str]]:
    """Was ``expected`` invoked: a Skill tool_use followed by a successful tool_result?

    Returns (True, []) on proof, (False, []) when no request for the skill
    exists, and (None, reasons) when the stream is too malformed to tell —
    duplicate ids, a malformed ``is_error``, or a result that does not follow
    its request make the evidence unverifiable, not negative.
    """
    diagnostics: list[str] = []
    requests: dict[str, int] = {}
    seen_ids: set[str] = set()
    position = 0
    ordered: list[tuple[int, str, Mapping[str, Any]]] = []
    for event in events:
        position += 1
        kind = event.get("type")
        if kind not in ("assistant", "user"):
            continue
        message = event.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            continue
        for block in content:
            if isinstance(block, dict):
                ordered.append((position, kind, block))
    for pos, kind, block in ordered:
        if kind != "assistant" or block.get("type") != "tool_use":
            continue
        tool_id = block.get("id")
        if not isinstance(tool_id, str) or not _TOOL_USE_ID.fullmatch(tool_id):
            diagnostics.append("tool_use with a malformed id")
            continue
        if tool_id in seen_ids:
            diagnostics.append(f"duplicate tool_use id {tool_id}")
            continue
        seen_ids.add(tool_id)
        name = block.get("name")
        inputs = block.get("input") if isinstance(block.get("input"), dict) else {}
        if isinstance(name, str) and name.lower() == "skill":
            requested = next(
                (normalize_skill_name(inputs.get(k)) for k in ("skill", "command", "name") if inputs.get(k)),
                None,
            )
            if requested == expected.lower():
                requests[tool_id] = pos
    if not requests:
        return (None, diagnostics) if diagnostics else (False, [])
    results_seen: set[str] = set()
    succeeded = False
    for pos, kind, block in ordered:
        if kind != "user" or block.get("type") != "tool_result":
            continue
        tool_id = block.get("tool_use_id")
        if tool_id not in requests:
            continue
        if tool_id in results_seen:
            diagnostics.append(f"duplicate tool_result for {tool_id}")
            return None, diagnostics
        results_seen.add(tool_id)
        is_error = block.get("is_error")
        if is_error is not None and not isinstance(is_error, bool):
            diagnostics.append(f"malformed is_error on {tool_id}")
            return None, diagnostics
        if pos <= requests[tool_id]:
            diagnostics.append(f"tool_result for {tool_id} precedes its request")
            return None, diagnostics
        succeeded = succeeded or is_error is not True
    # Decided only after every result was seen: a later duplicate must still
    # make the evidence unverifiable rather than be ignored behind a success.
    return succeeded, diagnostics


def render_transcript(events: Sequence[Mapping[str, Any]], secrets: Sequence[str]) -> bytes:
    """Canonical, structurally redacted JSON lines (sorted keys)."""
    lines = [json.dumps(redact_value(e, secrets), sort_keys=True, ensure_ascii=False) for e in events]
    text = "\n".join(lines) + ("\n" if lines else "")
    return redact_text(text, secrets).encode()


# ── folding and progress ──────────────────────────────────────────────────
def progress_observer(progress: Callable[[str], None], label: str) -> Callable[[Mapping[str, Any]], None]:
    """Live per-turn lines: tool names only, never model prose."""
    turns = {"n": 0}

    def observe(event: Mapping[str, Any]) -> None:
        if event.get("type") == "assistant":
            message = event.get("message") or {}
            content = message.get("content") if isinstance(message, dict) else None
            tools = [
                b.get("name") for b in content or [] if isinstance(b, dict) and b.get("type") == "tool_use"
            ]
            if tools:
                turns["n"] += 1
                progress(f"{label}: tool call {turns['n']}: {', '.join(str(t) for t in tools)}")
        elif event.get("type") == "system" and event.get("subtype") == "api_retry":
            progress(
                f"{label}: API retry {event.get('attempt')}/{event.get('max_retries')} "
                f"(status {event.get('error_status')})"
            )

    return observe


def sum_sessions(outcomes: list[SessionOutcome]) -> dict[str, Any]:
    """Fold an arm's sessions into the session layer of a row (reference §5)."""
    row: dict[str, Any] = {}
    for field_name in USAGE_FIELDS:
        values = [o.usage.get(field_name) for o in outcomes]
        row[field_name] = None if not values or any(v is None for v in values) else sum(values)
    costs = [o.cost_usd for o in outcomes]
    row["cost_usd"] = None if not costs or any(c is None for c in costs) else round(sum(costs), 6)
    durations = [o.duration_s for o in outcomes]
    row["duration_s"] = (
        None if not durations or any(d is None for d in durations) else round(sum(durations), 3)
    )
    turns = [o.num_turns for o in outcomes]
    row["num_turns"] = None if not turns or any(t is None for t in turns) else sum(turns)
    row["ok"] = bool(outcomes) and all(o.ok for o in outcomes)
    first_error = next((o for o in outcomes if o.error_kind), None)
    row["error_kind"] = first_error.error_kind if first_error else None
    row["error_detail"] = first_error.error_detail if first_error else None
    row["session_ids"] = [o.session_id for o in outcomes if o.session_id]
    invoked = [o.skill_invoked for o in outcomes]
    row["skill_invoked"] = (
        False
        if any(v is False for v in invoked)
        else None
        if not invoked or any(v is None for v in invoked)
        else True
    )
    row["transcript_missing"] = any(o.transcript_missing for o in outcomes)
    counts: dict[str, int] = {}
    for outcome in outcomes:
        for name, count in outcome.tool_use_counts.items():
            counts[name] = counts.get(name, 0) + count
    row["tool_use_counts"] = dict(sorted(counts.items()))
    row["evidence_diagnostics"] = [d for o in outcomes for d in o.diagnostics]
    row["sessions"] = len(outcomes)
    row["usage_main_loop"] = {name: row[name] for name in USAGE_FIELDS}
    row["usage_transcripts"] = sum_usage_fields([o.transcript_usage for o in outcomes])
    return row
