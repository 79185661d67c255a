"""From sessions to a row: live progress lines per session, and the fold of an arm's sessions.

Owns ``progress_observer`` (tool names per turn and API retries, never model prose) and
``sum_sessions`` (the ``SessionLayer`` part of a row, reference §5: usage and cost summed with
unknown kept unknown, skill evidence, tool counts, the usage figures; and the first verdict).
Callers: ``cells.run``, tests.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from workflow_bench.redaction import printable
from workflow_bench.rows.model import Resolution, SessionLayer, Usage
from workflow_bench.usage import sum_usage

from .sessions import SessionOutcome
from .skill_evidence import TOOL_NAME_CHARS

T = TypeVar("T", int, float)
PROGRESS_TOOLS = 8  # tool names per live line; the rest are counted


def progress_observer(progress: Callable[[str], None], label: str) -> Callable[[Mapping[str, Any]], None]:
    """Live per-turn lines: tool names, never model prose; a short preview of each MCP tool result."""
    turns = {"n": 0}
    mcp_calls: dict[str, str] = {}

    def observe(event: Mapping[str, Any]) -> None:
        message = event.get("message") or {}
        content = message.get("content") if isinstance(message, dict) else None
        blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
        if event.get("type") == "user":
            for block in blocks:
                name = mcp_calls.pop(str(block.get("tool_use_id")), None)
                if block.get("type") == "tool_result" and name is not None:
                    status = "error" if block.get("is_error") else "ok"
                    shown = printable(name, TOOL_NAME_CHARS)
                    progress(f"{label}: {shown} {status}: {_preview(block.get('content'))}")
        if event.get("type") == "assistant":
            tools = [b.get("name") for b in blocks if b.get("type") == "tool_use"]
            mcp_calls.update(
                (str(b.get("id")), str(b.get("name")))
                for b in blocks
                if b.get("type") == "tool_use" and str(b.get("name")).startswith("mcp__")
            )
            if tools:
                turns["n"] += 1
                names = ", ".join(printable(t, TOOL_NAME_CHARS) for t in tools[:PROGRESS_TOOLS])
                more = f" (+{len(tools) - PROGRESS_TOOLS} more)" if len(tools) > PROGRESS_TOOLS else ""
                progress(f"{label}: tool call {turns['n']}: {names}{more}")
        elif event.get("type") == "system" and event.get("subtype") == "api_retry":
            attempt, most = printable(event.get("attempt"), 12), printable(event.get("max_retries"), 12)
            status = printable(event.get("error_status"), 12)
            progress(f"{label}: API retry {attempt}/{most} (status {status})")

    return observe


def _preview(content: Any, limit: int = 160) -> str:
    """A one-line, printable, bounded preview of a tool result (the console redacts secrets)."""
    if isinstance(content, list):
        content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return printable(" ".join(str(content or "")[: limit * 8].split()), limit)


def sum_sessions(
    outcomes: list[SessionOutcome],
    *,
    plan_produced: bool | None = None,
    plan_doc: str | None = None,
    skill_digest: str | None = None,
    variant_head_sha: str | None = None,
    skills_expected: Sequence[str] = (),
) -> tuple[SessionLayer, Resolution]:
    """Fold an arm's sessions into the session layer of a row (reference §5) and the first verdict.

    The verdict is ``ok`` when every session was, with the first session error; ``resolved`` stays
    false until the judges say otherwise.
    """
    costs = [o.cost_usd for o in outcomes]
    durations = [o.duration_s for o in outcomes]
    turns = [o.num_turns for o in outcomes]
    invoked = [o.skill_invoked for o in outcomes]
    counts: dict[str, int] = {}
    for outcome in outcomes:
        for name, count in outcome.tool_use_counts.items():
            counts[name] = counts.get(name, 0) + count
    main_loop = Usage.model_validate(sum_usage(o.usage for o in outcomes))
    layer = SessionLayer(
        **main_loop.model_dump(),  # the four fields above the figures: the main loop's
        cost_usd=_known_sum(costs, digits=6),
        duration_s=_known_sum(durations, digits=3),
        num_turns=_known_sum(turns),
        session_ids=[o.session_id for o in outcomes if o.session_id],
        skill_invoked=(
            False
            if any(v is False for v in invoked)
            else None
            if not invoked or any(v is None for v in invoked)
            else True
        ),
        skills_expected=list(skills_expected),
        skills_invoked=_union([o.skills_invoked for o in outcomes]),
        transcript_missing=any(o.transcript_missing for o in outcomes),
        tool_use_counts=dict(sorted(counts.items())),
        evidence_diagnostics=[d for o in outcomes for d in o.diagnostics],
        sessions=len(outcomes),
        usage_main_loop=main_loop,
        usage_transcripts=Usage(**sum_usage(o.transcript_usage for o in outcomes)),
        usage_wire=Usage(**sum_usage(o.usage_wire for o in outcomes)),
        relay_refused_requests=sum(o.relay_refused for o in outcomes),
        relay_forked_requests=sum(o.relay_forked for o in outcomes),
        relay_upstream_retries=sum(o.relay_upstream_retries for o in outcomes),
        plan_produced=plan_produced,
        plan_doc=plan_doc,
        skill_digest=skill_digest,
        variant_head_sha=variant_head_sha,
    )
    first_error = next((o for o in outcomes if o.error_kind), None)
    verdict = Resolution(
        ok=bool(outcomes) and all(o.ok for o in outcomes),
        resolved=False,
        error_kind=first_error.error_kind if first_error else None,
        error_detail=first_error.error_detail if first_error else None,
    )
    return layer, verdict


def _union(per_session: Sequence[tuple[str, ...] | None]) -> list[str] | None:
    """Skills invoked in any session; unknown when no session ran or one has no wire record."""
    if not per_session or any(names is None for names in per_session):
        return None
    return sorted({name for names in per_session for name in names or ()})


def _known_sum(values: Sequence[T | None], *, digits: int | None = None) -> T | None:
    """The sum, or ``None`` when there is nothing or any value is unknown (never a partial sum)."""
    known = [v for v in values if v is not None]
    if not values or len(known) != len(values):
        return None
    total = sum(known)
    return total if digits is None else round(total, digits)
