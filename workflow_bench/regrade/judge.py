"""One regraded row: a job's patch judged in a clean room, its verdict, what changed and why.

The verdict rule is the cell's (``cells.judges.judged``: resolved = ok ∧ authored ∧ oracle, the
first failing judge names the kind, a patch of bookkeeping only is ``no-work-produced``), over the
clean room's verify and oracle (``cells.cleanroom.judge_patch`` with the authored verify). A patch
that cannot be re-judged (a stand-in, a truncated patch, one that does not apply) is
``workspace-invalid``, a judge that timed out its ``*-timeout``, any other failure
``judging-error``: all charged to the arm (the patch is the agent's). No model is asked and no CLI
started: judging needs neither.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from workflow_bench.cells.cleanroom import (
    CleanRoom,
    RoomVerdict,
    UnjudgeablePatch,
    judge_patch,
    patch_churn,
    patch_paths,
)
from workflow_bench.cells.context import TaskContext
from workflow_bench.cells.draft import CellDraft
from workflow_bench.cells.judges import judged
from workflow_bench.cells.rows import NO_SESSIONS, oracle_tests, verify_tests
from workflow_bench.judging.attribution import ChargedFailure
from workflow_bench.judging.outcomes import ErrorKind
from workflow_bench.judging.test_config import MAX_LISTED
from workflow_bench.reports.sweep_record import PREDICTIONS_PROVIDER
from workflow_bench.rows.model import (
    SCHEMA_VERSION,
    Churn,
    CleanRoomJudgement,
    Identity,
    OracleJudgement,
    Provenance,
    Regrade,
    RegradeBefore,
    Resolution,
    Row,
    RuntimeRecord,
    VerifyJudgement,
    assemble,
)

from .source import Job


def judge_job(
    job: Job, task: TaskContext, room: CleanRoom, *, where: Path, old_verify_digest: str | None
) -> Row:
    """The regraded row of ``job`` (``where``: a fresh directory for its clean room)."""
    binding = task.binding
    regrade: dict[str, Any] = {
        "regraded_from": job.source,
        "regrade_verify_digest": binding.spec.verify_digest,
        "regrade_before": None if job.row is None else _before(job.row, old_verify_digest),
    }
    if job.row is not None and not job.rejudge:
        return job.row.replace(**regrade)  # nothing was judged at sweep time: carried as it was
    ok = True if job.row is None else job.row.ok
    draft = _judged_draft(job, task, room, where=where, ok=ok)
    judged_parts = _fields(*draft.parts())
    digests: dict[str, Any] = {
        "task_binding_digest": binding.binding_digest,
        "oracle_digest": binding.oracle.digest,
        "oracle_command_digest": binding.oracle.command_digest,
        "oracle_manifest_digest": binding.oracle.manifest_digest,
        "expected_tests_digest": binding.expected_tests_digest,
    }
    if job.row is not None:
        row = job.row.replace(**judged_parts, **digests, **regrade)
        return row.replace(regrade_change=change(job.row, row))
    spec = binding.spec
    identity = Identity(
        schema_version=SCHEMA_VERSION,
        task=job.task_id,
        task_class=spec.task_class,
        task_impossible=spec.impossible,
        arm=job.arm,
        run=job.run,
        recorded_at=datetime.now(UTC).isoformat(),
    )
    provenance = Provenance(
        model=job.arm,
        benchmark_model=job.arm,
        provider=PREDICTIONS_PROVIDER,
        sandbox_backend=room.kind.value,
        task_ref=spec.ref,
        task_base_sha=binding.resolved_sha,
        sanitized_task_sha=task.sanitized_sha,
        task_prompt_digest=spec.prompt_digest,
        task_runtimes=[RuntimeRecord(**r) for r in binding.runtime_records()] or None,
        **digests,
    )
    parts = (*draft.parts(), NO_SESSIONS, identity, provenance, Regrade(**regrade))
    return assemble(*parts)


def _judged_draft(job: Job, task: TaskContext, room: CleanRoom, *, where: Path, ok: bool) -> CellDraft:
    verdict = Resolution(ok=ok, resolved=False)
    try:
        churn = Churn(**patch_churn(job.patch, where.parent))
        room_verdict = judge_patch(room, task, job.patch, where=where, with_verify=True)
    except Exception as exc:  # the patch is the agent's: whatever it made fail is charged
        kind = (
            ErrorKind.WORKSPACE_INVALID
            if isinstance(exc, UnjudgeablePatch)
            else exc.kind
            if isinstance(exc, ChargedFailure)
            else ErrorKind.JUDGING_ERROR
        )
        detail = f"{type(exc).__name__}: {exc}"[:2000]
        return CellDraft(
            verdict=verdict.model_copy(update={"error_kind": kind, "error_detail": detail}),
            verify=VerifyJudgement(authored_tests_passed=False, authored_test_output="", verify_output=""),
            oracle=OracleJudgement(oracle_passed=False, oracle_output=""),
            churn=Churn(diff_files=None, diff_insertions=None, diff_deletions=None),
            cleanroom=CleanRoomJudgement(cleanroom_oracle_passed=None, cleanroom_detail=detail),
        )
    draft = CellDraft(verdict=verdict, churn=churn, **_judges(room_verdict))
    if room_verdict.oracle.tampered:
        draft = draft.failed(ErrorKind.EVIDENCE_TAMPERED, f"clean room: {room_verdict.detail()}"[:2000])
    paths = patch_paths(job.patch, where.parent)
    return judged(draft, implementation=True, changed=paths, base={}, after=dict.fromkeys(paths, "file:"))


def _judges(verdict: RoomVerdict) -> dict[str, Any]:
    verify, oracle = verdict.verify, verdict.oracle
    assert verify is not None  # judged with the authored verify
    detail = verdict.detail()
    passed = "hidden oracle passed: " if oracle.passed else "hidden oracle failed: "
    return {
        "verify": verify_tests(
            verify,
            (),
            authored_tests_passed=verify.passed,
            authored_test_output=verify.output,
            verify_output=verify.output,
            verify_detail=verify.detail,
        ),
        "oracle": oracle_tests(
            oracle,
            (),
            oracle_passed=oracle.passed,
            oracle_output=passed + oracle.detail,
            test_config_changed=list(verdict.test_config_kept[:MAX_LISTED]),
        ),
        "cleanroom": CleanRoomJudgement(cleanroom_oracle_passed=oracle.passed, cleanroom_detail=detail),
    }


def _fields(*parts: Any) -> dict[str, Any]:
    """Every field of ``parts`` (unset ones as None: a re-judged row keeps nothing of the old judges)."""
    out: dict[str, Any] = {}
    for part in parts:
        out.update({name: getattr(part, name) for name in type(part).model_fields})
    return out


def _before(row: Row, verify_digest: str | None) -> RegradeBefore:
    return RegradeBefore(
        resolved=row.resolved,
        oracle_passed=row.oracle_passed,
        authored_tests_passed=row.authored_tests_passed,
        error_kind=None if row.error_kind is None else str(row.error_kind),
        oracle_digest=row.oracle_digest,
        verify_digest=verify_digest,
        expected_tests_digest=row.expected_tests_digest,
    )


def change(before: Row, after: Row) -> str | None:
    """Why ``after``'s verdict differs from ``before``'s (resolved, verify, oracle, kind); None when not."""
    fields = ("resolved", "authored_tests_passed", "oracle_passed", "error_kind")
    moved = [
        f"{name} {_shown(getattr(before, name))} -> {_shown(getattr(after, name))}"
        for name in fields
        if getattr(before, name) != getattr(after, name)
    ]
    if not moved:
        return None
    why = []
    if before.oracle_digest != after.oracle_digest:
        why.append("the oracle changed")
    if before.expected_tests_digest != after.expected_tests_digest:
        why.append("the expected-tests lock changed")
    if after.cleanroom_detail:
        why.append(after.cleanroom_detail)
    return f"{'; '.join(moved)} ({'; '.join(why) or 'same task, the clean room judged differently'})"[:2000]


def _shown(value: object) -> str:
    return "null" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
