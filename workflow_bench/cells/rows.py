"""The parts of a cell's row that do not come from its sessions or judges.

``identity`` (which cell), ``provenance`` (what it ran on: model, CLI, commit, oracle, toolkit,
comparator and overlay, bounds), ``provider_usage`` (what the model side observed for the cell),
``listed_tests`` (what verify or the oracle reported, per test, bounded) and ``infra_error`` (the
draft of a cell the harness itself could not run). Every field is declared, with its meaning, in
``rows.model``; these only fill them.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from workflow_bench.arms import ArmSpec
from workflow_bench.judging.outcome_report import JudgeOutcome
from workflow_bench.judging.outcomes import ErrorKind
from workflow_bench.providers.access import CellKey, ModelAccess
from workflow_bench.redaction import redact_text, redact_value
from workflow_bench.rows.model import (
    SCHEMA_VERSION,
    Churn,
    Identity,
    JudgedTest,
    JudgedTests,
    OracleJudgement,
    Provenance,
    ProviderUsage,
    Resolution,
    ResourceLimits,
    RuntimeRecord,
    SessionLayer,
    Usage,
    VerifyJudgement,
)
from workflow_bench.sandbox import CloneSupport
from workflow_bench.usage import unknown_usage

from .context import SweepSettings, TaskContext
from .draft import CellDraft


def provider_usage(
    access: ModelAccess, key: CellKey, artifacts: dict[str, bytes], cell_secrets
) -> ProviderUsage:
    """``usage_provider`` from whatever kept per-cell accounts; its lines become ``records/`` artifacts.

    Observed after the catch-all on purpose: a cell that failed still spent what it spent.
    """
    observation = access.observe(key) if access.observe is not None else None
    if observation is None:
        return ProviderUsage(usage_provider=None, usage_provider_source=None)
    for name, lines in observation.records.items():
        text = "".join(json.dumps(redact_value(line, cell_secrets), sort_keys=True) + "\n" for line in lines)
        artifacts[f"records/{name}"] = text.encode()
    return ProviderUsage.model_validate(
        {"usage_provider": dict(observation.usage), "usage_provider_source": observation.source}
    )


# What an infra-error row records for the sessions when none finished: nothing measured, no
# session, no tool call (the reference's failure row, with unknown kept unknown).
_UNKNOWN_USAGE = Usage.model_validate(unknown_usage())
_NO_SESSIONS = SessionLayer(
    **_UNKNOWN_USAGE.model_dump(),
    usage_main_loop=_UNKNOWN_USAGE,
    usage_transcripts=_UNKNOWN_USAGE,
    session_ids=[],
    cost_usd=None,
    duration_s=None,
    num_turns=None,
    plan_produced=False,
    skill_invoked=None,
    transcript_missing=False,
    tool_use_counts={},
)


NO_SESSIONS = _NO_SESSIONS
"""A row's session layer when no session ran (a judged prediction: its patch came from elsewhere)."""


def infra_error(exc: BaseException, cell_secrets, *, measured: SessionLayer | None = None) -> CellDraft:
    """The draft of a cell the harness failed: ``infra-error``, the sessions' measurements if they ran.

    A cell that fails after its sessions finished keeps what they measured: the tokens and dollars
    were spent, and blanking them would drop that spend from the task × arm accounting line.
    """
    return CellDraft(
        verdict=Resolution(
            ok=False,
            resolved=False,
            error_kind=ErrorKind.INFRA_ERROR,
            error_detail=redact_text(f"{type(exc).__name__}: {exc}", cell_secrets)[:2000],
        ),
        session=measured if measured is not None else _NO_SESSIONS,
        verify=VerifyJudgement(authored_tests_passed=False, authored_test_output="", verify_output=""),
        oracle=OracleJudgement(oracle_passed=False, oracle_output=""),
        churn=Churn(diff_files=None, diff_insertions=None, diff_deletions=None),
    )


def identity(task: TaskContext, arm: ArmSpec, key: CellKey) -> Identity:
    return Identity(
        schema_version=SCHEMA_VERSION,
        task=key.task_id,
        task_class=task.binding.spec.task_class,
        task_impossible=task.binding.spec.impossible,
        arm=arm.name,
        run=key.run,
        recorded_at=datetime.now(UTC).isoformat(),
    )


def provenance(
    settings: SweepSettings,
    task: TaskContext,
    arm: ArmSpec,
    *,
    resource_limits: dict[str, Any] | None = None,
    clone: CloneSupport | None = None,
) -> Provenance:
    """What the cell ran on; ``resource_limits`` as ``CellResources.enforced`` reported it (or
    unknown), ``clone`` as ``CellResources.clone`` (None: no clone, or the host-unsafe copy)."""
    binding = task.binding
    spec = binding.spec
    fields: dict[str, Any] = {
        "model": settings.cell.model,
        "benchmark_model": settings.cell.model,
        "effort": settings.cell.effort,
        "provider": settings.access.provider,
        "claude_code_version": settings.harness.claude_version,
        "sandbox_backend": settings.harness.sandbox_kind.value,
        "task_ref": spec.ref,
        "task_base_sha": binding.resolved_sha,
        "sanitized_task_sha": task.sanitized_sha,
        "task_prompt_digest": spec.prompt_digest,
        "task_binding_digest": binding.binding_digest,
        "oracle_digest": binding.oracle.digest,
        "oracle_command_digest": binding.oracle.command_digest,
        "oracle_manifest_digest": binding.oracle.manifest_digest,
        "expected_tests_digest": binding.expected_tests_digest,
        "task_runtimes": [RuntimeRecord(**r) for r in binding.runtime_records()] or None,
        **_arm_provenance(settings, arm),
        **_toolkit_provenance(settings, task, arm),
    }
    fields["resource_limits"] = (
        None if resource_limits is None else ResourceLimits.model_validate(resource_limits)
    )
    fields["clone_kind"] = clone.kind if clone is not None else None
    fields["clone_reason"] = clone.reason if clone is not None else None
    return Provenance(**fields)


def _toolkit_provenance(settings: SweepSettings, task: TaskContext, arm: ArmSpec) -> dict[str, Any]:
    """Which toolkit the sweep evaluated, which index and MCP servers this arm's sessions got."""
    toolkit = settings.evaluated.toolkit
    index = task.index.digest if task.index is not None and arm.mcp else None
    return {
        "toolkit_name": toolkit.name,
        "toolkit_version": toolkit.version,
        "toolkit_digest": toolkit.digest,
        "index_digest": index,
        "mcp_servers": [s.name for s in toolkit.mcp_servers] if arm.mcp else [],
        "mcp_tools_granted": list(toolkit.granted_mcp_tools) if arm.mcp else [],
    }


def _arm_provenance(settings: SweepSettings, arm: ArmSpec) -> dict[str, Any]:
    """Comparator version/manifest for ce_* rows, the overlay digest for candidate rows; else None."""
    comparator = settings.evaluated.comparator if arm.family == "comparator" else None
    overlay = settings.evaluated.overlay if arm.candidate_of else None
    return {
        "ce_plugin_version": comparator.version if comparator else None,
        "ce_plugin_manifest_digest": comparator.manifest_digest if comparator else None,
        "candidate_overlay_digest": overlay.digest if overlay else None,
    }


# Per-test outcomes kept in a row: failures first, then skips, then passes. 200 is enough to name
# every failure of a real run (the report shows the first few) and bounds a 100 000-test suite's
# row to tens of kB; a failure message keeps its first 300 characters, redacted.
MAX_ROW_TESTS = 200
MAX_ROW_MESSAGE_CHARS = 300
_ORDER = {"failed": 0, "error": 0, "skipped": 1, "passed": 2}


def listed_tests(outcome: JudgeOutcome, cell_secrets: Any) -> JudgedTests | None:
    """``verify_tests``/``oracle_tests``: the judge's tests, failures first, bounded; None when no
    test reported.

    Messages are kept only if the outcome still has them: the oracle's are dropped before they
    get here (``judging.judge.hide_oracle_text``), since they may quote hidden tests.
    """
    tests = outcome.tests
    if tests is None:
        return None
    ordered = sorted(tests, key=lambda t: _ORDER.get(t.outcome, 0))
    shown = [  # validated: outcome is one of JudgedTest's four
        JudgedTest.model_validate(
            {
                "id": t.test_id,
                "outcome": t.outcome,
                "message": redact_text(t.message, cell_secrets)[:MAX_ROW_MESSAGE_CHARS]
                if t.message
                else None,
            }
        )
        for t in ordered[:MAX_ROW_TESTS]
    ]
    return JudgedTests(tests=shown, omitted=max(0, len(tests) - MAX_ROW_TESTS))


def verify_tests(outcome: JudgeOutcome, cell_secrets: Any, **judged: Any) -> VerifyJudgement:
    """Verify's judgement: ``judged`` (the verdict and output) and its tests (a timed-out verify has
    only the tests that had reported)."""
    return VerifyJudgement(
        **judged,
        verify_tests_run=outcome.tests_run,
        verify_tests_passed=outcome.tests_passed,
        verify_tests_skipped=outcome.tests_skipped,
        verify_tests=listed_tests(outcome, cell_secrets),
    )


def oracle_tests(outcome: JudgeOutcome, cell_secrets: Any, **judged: Any) -> OracleJudgement:
    """The oracle's judgement: ``judged`` (the verdict) and its tests (a timed-out oracle has only
    the tests that had reported)."""
    return OracleJudgement(
        **judged,
        oracle_sealed=("unknown" if outcome.evidence is None else "sealed" if outcome.sealed else "unsealed"),
        oracle_tests_run=outcome.tests_run,
        oracle_tests_passed=outcome.tests_passed,
        oracle_tests_skipped=outcome.tests_skipped,
        oracle_tests=listed_tests(outcome, cell_secrets),
    )
