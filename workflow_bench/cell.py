"""One cell: a fresh clone, its sessions, the judges, and the row — returned as data.

``run_cell`` owns its clone for the whole call and removes it whatever
happens. It never writes the output directory: the row and the artifacts
(patch, transcripts) come back in a ``CellResult`` and the driver persists
them. It catches ``Exception`` in exactly one place, its top, and records it
as an ``infra-error`` row; cancellation (``KeyboardInterrupt``,
``SweepCancelled``) propagates.

Order inside a cell, and why:
  copy template → setup (sandbox, no network) → sessions (workspace
  writable; phase boundaries and skill fingerprints checked after each) →
  authored verify (workspace read-only, no network) → hidden oracle, staged
  only now, after every model process has exited, read-only, no network,
  its output never kept, its bytes re-checked afterwards → patch capture.
"""

from __future__ import annotations

import secrets
import shutil
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .access import CellKey, ModelAccess
from .arms import ArmSpec, SessionSpec, Toolkit
from .oracles import stage_oracle, verify_staged
from .process import ProcessError
from .redaction import redact_text, redact_value
from .row_schema import SCHEMA_VERSION, complete_row
from .sandbox import Mount, RunPolicy, Sandbox, claude_environment, create_sandbox, tool_environment
from .sandbox import SandboxKind as _Kind
from .sessions import USAGE_FIELDS, SessionOutcome, SessionRequest, run_session
from .tasks import TaskBinding
from .workspace import (
    NON_WORK_PATHS,
    PLAN_DIR,
    capture_patch,
    changed_paths,
    copy_clone,
    head_sha,
    remove_tree,
    skill_fingerprint,
    workspace_snapshot,
)

SETUP_TIMEOUT_S = 600  # reference value: setup installs/patches, never runs the model
OUTPUT_TAIL_CHARS = 4000
ORACLE_ENV_VAR = "WORKFLOW_BENCH_ORACLE_ROOT"


@dataclass(frozen=True, slots=True)
class SweepSettings:
    """Sweep-wide, read-only inputs every cell needs."""

    model: str
    effort: str | None
    session_timeout_s: float
    verify_timeout_s: float
    max_retries: int
    claude_bin: Path
    claude_version: str
    bwrap_bin: str
    access: ModelAccess
    toolkit: Toolkit
    work_root: Path
    runtime_dir: Path
    cancel: threading.Event = field(default_factory=threading.Event)
    progress: Callable[[str], None] = print


@dataclass(frozen=True, slots=True)
class TaskContext:
    """A bound task plus its sanitized clone template (built once per task)."""

    binding: TaskBinding
    template: Path
    sanitized_sha: str


@dataclass(frozen=True, slots=True)
class CellResult:
    row: Mapping[str, Any]
    artifacts: Mapping[str, bytes]


class EvidenceError(ValueError):
    """A phase boundary or skill fingerprint was violated; carries the error kind."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def run_cell(settings: SweepSettings, task: TaskContext, arm: ArmSpec, key: CellKey) -> CellResult:
    credentials = settings.access.credentials_for(key)
    cell_secrets = (*credentials.secrets, *settings.access.static_secrets)
    cell_dir = settings.work_root / f"{key.slug}-{secrets.token_hex(4)}"
    artifacts: dict[str, bytes] = {}
    try:
        cell_dir.mkdir(parents=True)
        workspace = cell_dir / "workspace"
        copy_clone(task.template, workspace)
        sandbox = create_sandbox(
            _Kind.BWRAP,
            workspace=workspace,
            claude_bin=settings.claude_bin,
            runtime_dir=settings.runtime_dir,
            bwrap_bin=settings.bwrap_bin,
        )
        row = _run_in_clone(settings, task, arm, key, sandbox, cell_dir, credentials, cell_secrets, artifacts)
    except Exception as exc:  # the one catch-all: a cell's failure is data, not a sweep crash
        row = _infra_error_row(exc, cell_secrets)
        if settings.cancel.is_set():
            row["error_kind"] = "cancelled"
    finally:
        cleanup_error = _remove(cell_dir)
    if cleanup_error is not None:
        row = {
            **row,
            "ok": False,
            "resolved": False,
            "error_kind": "cleanup-failure",
            "error_detail": (
                f"primary={row.get('error_kind')}: {row.get('error_detail')}; cleanup: {cleanup_error}"
            )[:2000],
        }
    row.update(_identity_fields(settings, task, arm, key))
    return CellResult(row=complete_row(redact_value(row, cell_secrets)), artifacts=artifacts)


def _remove(path: Path) -> str | None:
    try:
        remove_tree(path)
    except OSError as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def _run_in_clone(settings, task, arm, key, sandbox, cell_dir, credentials, cell_secrets, artifacts):
    spec = task.binding.spec
    if spec.setup:
        result = sandbox.run(
            ["/bin/sh", "-c", spec.setup],
            policy=RunPolicy(workspace_writable=True),
            timeout_s=SETUP_TIMEOUT_S,
            cancel=settings.cancel,
        )
        if not result.ok:
            raise ProcessError("task setup", result)
    base_snapshot = workspace_snapshot(sandbox.workspace)
    skill_digest = skill_fingerprint(base_snapshot)
    base_sha = head_sha(sandbox)
    env = claude_environment(
        base_url=settings.access.base_url,
        api_key=credentials.api_key,
        auth_token=credentials.auth_token,
        model=settings.model,
        max_retries=settings.max_retries,
        api_timeout_ms=int(settings.session_timeout_s * 1000),
    )
    outcomes, plan_doc = _run_sessions(settings, task, arm, key, sandbox, env, skill_digest, cell_secrets)
    for index, outcome in enumerate(outcomes):
        if outcome.transcript:
            artifacts[f"transcripts/{key.slug}-s{index}-{outcome.session_id or 'unknown'}.jsonl"] = (
                outcome.transcript
            )
    row = sum_sessions(outcomes)
    row["plan_produced"] = (not arm.plans_first) or plan_doc is not None
    row["plan_doc"] = plan_doc
    if settings.cancel.is_set():
        # Keep what the sessions measured; judging a half-finished clone would be noise.
        row.update(ok=False, resolved=False, error_kind="cancelled", error_detail="sweep cancelled")
        return row
    after_snapshot = workspace_snapshot(sandbox.workspace)
    authored, authored_output = _run_verify(settings, sandbox, spec.verify)
    oracle_passed = _run_oracle(settings, task, sandbox, cell_dir)
    patch, churn = capture_patch(sandbox, base_sha)
    artifacts["patch.diff"] = patch
    row.update(churn)
    row.update(
        {
            "authored_tests_passed": authored,
            "authored_test_output": redact_text(authored_output, cell_secrets),
            "verify_output": redact_text(authored_output, cell_secrets),
            "oracle_passed": oracle_passed,
            "oracle_output": "hidden oracle passed" if oracle_passed else "hidden oracle failed",
            "skill_digest": skill_digest,
            "variant_head_sha": base_sha,
        }
    )
    row["resolved"] = bool(row["ok"] and authored and oracle_passed)
    if row["error_kind"] is None and not authored:
        row["error_kind"] = "verify-failed"
    elif row["error_kind"] is None and not oracle_passed:
        row["error_kind"] = "oracle-failed"
    work_changes = [
        p
        for p in changed_paths(base_snapshot, after_snapshot)
        if not any(p == n or p.startswith(n + "/") for n in NON_WORK_PATHS)
    ]
    if arm.implementation and row["resolved"] and not work_changes:
        row["resolved"] = False
        row["error_kind"] = "no-work-produced"
    return row


def _run_sessions(settings, task, arm, key, sandbox, env, skill_digest, cell_secrets):
    """Run the arm's sessions in order; stop at the first failed one."""
    outcomes: list[SessionOutcome] = []
    plan_doc: str | None = None
    for spec in arm.sessions:
        before = workspace_snapshot(sandbox.workspace)
        request = _session_request(settings, task, spec, env, plan_doc, key)
        settings.progress(f"{key.label} {spec.phase} session starting")
        outcome = run_session(
            sandbox,
            request,
            secrets=cell_secrets,
            cancel=settings.cancel,
            on_event=_progress_observer(settings.progress, f"{key.label} {spec.phase}"),
        )
        after = workspace_snapshot(sandbox.workspace)
        try:
            if skill_fingerprint(after) != skill_digest:
                kind = "plan-evidence-invalid" if spec.phase == "plan" else "implementation-evidence-invalid"
                raise EvidenceError(kind, f"{spec.phase} session changed the evaluated skill files")
            if spec.phase == "plan" and outcome.ok:
                plan_doc = _accepted_plan_doc(changed_paths(before, after), after)
        except EvidenceError as exc:
            outcome = _with_error(outcome, exc.kind, str(exc))
        outcomes.append(outcome)
        if not outcome.ok:
            break
    return outcomes, plan_doc


def _session_request(settings, task, spec: SessionSpec, env, plan_doc, key) -> SessionRequest:
    toolkit: Toolkit = settings.toolkit
    skill = toolkit.skill_for(spec.skill_role) if spec.skill_role else None
    prompt = spec.prompt.format(task=task.binding.spec.prompt, plan=plan_doc or "", skill=skill or "")
    return SessionRequest(
        prompt=prompt,
        model=settings.model,
        tools=spec.tools,
        disallowed_tools=spec.disallowed_tools,
        expected_skill=skill,
        env=env,
        timeout_s=settings.session_timeout_s,
        effort=settings.effort,
        label=f"{key.label} {spec.phase}",
    )


def _accepted_plan_doc(changed: tuple[str, ...], after: Mapping[str, str]) -> str:
    """Planning may add or modify exactly one ``docs/plans/*.md`` file (plus its new dirs)."""
    files = [p for p in changed if after.get(p, "").startswith("file:") or p not in after]
    dirs = [p for p in changed if p not in files]
    plans = [
        p
        for p in files
        if p.startswith(PLAN_DIR + "/") and p.endswith(".md") and "/" not in p[len(PLAN_DIR) + 1 :]
    ]
    others = [p for p in files if p not in plans] + [d for d in dirs if not PLAN_DIR.startswith(d)]
    if len(plans) != 1 or others:
        raise EvidenceError(
            "plan-evidence-invalid",
            f"planning must produce exactly one {PLAN_DIR}/*.md and change nothing else; "
            f"plan docs: {plans[:5]}, other changes: {others[:5]}",
        )
    if plans[0] not in after:
        raise EvidenceError("plan-evidence-invalid", f"planning deleted {plans[0]}")
    return plans[0]


def _with_error(outcome: SessionOutcome, kind: str, detail: str) -> SessionOutcome:
    return replace(outcome, ok=False, error_kind=kind, error_detail=detail)


def _run_verify(settings: SweepSettings, sandbox: Sandbox, command: str) -> tuple[bool, str]:
    result = sandbox.run(
        ["/bin/sh", "-c", command],
        policy=RunPolicy(workspace_writable=False),
        timeout_s=settings.verify_timeout_s,
        cancel=settings.cancel,
    )
    if result.state != "exited":
        raise ProcessError("authored verify", result)
    output = (result.stdout.decode("utf-8", "replace") + result.stderr_tail)[-OUTPUT_TAIL_CHARS:]
    return result.returncode == 0, output


def _run_oracle(settings: SweepSettings, task: TaskContext, sandbox: Sandbox, cell_dir: Path) -> bool:
    """Stage the hidden oracle now (every model process has exited), run it, erase it."""
    token = secrets.token_hex(8)
    staged = cell_dir / f"oracle-{token}"
    target = f"/.wfbench-oracle-{token}"
    snapshot = task.binding.oracle
    stage_oracle(snapshot, staged)
    try:
        result = sandbox.run(
            ["/bin/sh", "-c", snapshot.command],
            policy=RunPolicy(workspace_writable=False, mounts=(Mount(source=staged, target=target),)),
            env=tool_environment({ORACLE_ENV_VAR: target}),
            timeout_s=settings.verify_timeout_s,
            cancel=settings.cancel,
        )
        verify_staged(snapshot, staged)
    finally:
        shutil.rmtree(staged, ignore_errors=True)
    if result.state != "exited":
        # Never carry the oracle's own output into an error: it may quote the hidden tests.
        raise RuntimeError(f"hidden oracle did not complete: {result.state}")
    return result.returncode == 0


def _progress_observer(progress: Callable[[str], None], label: str) -> Callable[[Mapping[str, Any]], None]:
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


# ── rows ───────────────────────────────────────────────────────────────────


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
    return row


def _infra_error_row(exc: BaseException, cell_secrets) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(USAGE_FIELDS)
    row.update(
        {
            "ok": False,
            "resolved": False,
            "error_kind": "infra-error",
            "error_detail": redact_text(f"{type(exc).__name__}: {exc}", cell_secrets)[:2000],
            "session_ids": [],
            "cost_usd": None,
            "duration_s": None,
            "num_turns": None,
            "plan_produced": False,
            "authored_tests_passed": False,
            "authored_test_output": "",
            "verify_output": "",
            "oracle_passed": False,
            "oracle_output": "",
            "skill_invoked": None,
            "transcript_missing": False,
            "tool_use_counts": {},
            "diff_files": None,
            "diff_insertions": None,
            "diff_deletions": None,
        }
    )
    return row


def _identity_fields(
    settings: SweepSettings, task: TaskContext, arm: ArmSpec, key: CellKey
) -> dict[str, Any]:
    binding = task.binding
    spec = binding.spec
    return {
        "schema_version": SCHEMA_VERSION,
        "task": key.task_id,
        "class": spec.task_class,
        "arm": arm.name,
        "run": key.run,
        "model": settings.model,
        "benchmark_model": settings.model,
        "effort": settings.effort,
        "provider": settings.access.provider,
        "claude_code_version": settings.claude_version,
        "sandbox_backend": "bwrap",
        "task_ref": spec.ref,
        "task_base_sha": binding.resolved_sha,
        "sanitized_task_sha": task.sanitized_sha,
        "task_prompt_digest": spec.prompt_digest,
        "task_binding_digest": binding.binding_digest,
        "oracle_digest": binding.oracle.digest,
        "oracle_command_digest": binding.oracle.command_digest,
        "oracle_manifest_digest": binding.oracle.manifest_digest,
        "recorded_at": datetime.now(UTC).isoformat(),
    }
