"""The parts of a cell's row that do not come from its sessions or judges.

``identity_fields`` (who, what, on which commit and model), ``arm_provenance``
(comparator version and overlay digest), ``provider_fields`` (what the model
side observed for the cell), ``judge_fields`` (what verify or the oracle
reported, per test, bounded) and ``infra_error_row`` (the row of a cell the
harness itself could not run). Field meanings live in ``row_schema``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from workflow_bench.arms import ArmSpec
from workflow_bench.judging.outcome_report import JudgeOutcome
from workflow_bench.providers.access import CellKey, ModelAccess
from workflow_bench.redaction import redact_text, redact_value
from workflow_bench.row_schema import SCHEMA_VERSION
from workflow_bench.usage import USAGE_FIELDS, unknown_usage

from .context import SweepSettings, TaskContext


def provider_fields(access: ModelAccess, key: CellKey, artifacts: dict[str, bytes], cell_secrets) -> dict:
    """``usage_provider`` from whatever kept per-cell accounts; its lines become ``records/`` artifacts.

    Observed after the catch-all on purpose: a cell that failed still spent what it spent.
    """
    observation = access.observe(key) if access.observe is not None else None
    if observation is None:
        return {"usage_provider": None, "usage_provider_source": None}
    for name, lines in observation.records.items():
        text = "".join(json.dumps(redact_value(line, cell_secrets), sort_keys=True) + "\n" for line in lines)
        artifacts[f"records/{name}"] = text.encode()
    return {"usage_provider": dict(observation.usage), "usage_provider_source": observation.source}


# What the sessions measured. A cell that fails after its sessions finished keeps these on its
# infra-error row: the tokens and dollars were spent, and blanking them would drop that spend
# from the task × arm accounting line. Verdict fields (ok, resolved, error_*) are not here.
SESSION_MEASUREMENTS = frozenset(
    {
        *USAGE_FIELDS,
        "usage_main_loop",
        "usage_transcripts",
        "usage_wire",
        "relay_refused_requests",
        "cost_usd",
        "duration_s",
        "num_turns",
        "session_ids",
        "sessions",
        "skill_invoked",
        "transcript_missing",
        "tool_use_counts",
        "evidence_diagnostics",
        "plan_produced",
        "plan_doc",
        "skill_digest",
        "variant_head_sha",
    }
)


def infra_error_row(exc: BaseException, cell_secrets) -> dict[str, Any]:
    row: dict[str, Any] = unknown_usage()
    row.update(
        {
            "usage_main_loop": unknown_usage(),
            "usage_transcripts": unknown_usage(),
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


def identity_fields(settings: SweepSettings, task: TaskContext, arm: ArmSpec, key: CellKey) -> dict[str, Any]:
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
        "sandbox_backend": settings.sandbox_kind.value,
        "task_ref": spec.ref,
        "task_base_sha": binding.resolved_sha,
        "sanitized_task_sha": task.sanitized_sha,
        "task_prompt_digest": spec.prompt_digest,
        "task_binding_digest": binding.binding_digest,
        "oracle_digest": binding.oracle.digest,
        "oracle_command_digest": binding.oracle.command_digest,
        "oracle_manifest_digest": binding.oracle.manifest_digest,
        "expected_tests_digest": binding.expected_tests_digest,
        "recorded_at": datetime.now(UTC).isoformat(),
        **arm_provenance(settings, arm),
        **toolkit_provenance(settings, task, arm),
    }


def toolkit_provenance(settings: SweepSettings, task: TaskContext, arm: ArmSpec) -> dict[str, Any]:
    """Which toolkit the sweep evaluated, which index and MCP servers this arm's sessions got."""
    toolkit = settings.toolkit
    index = task.index.digest if task.index is not None and arm.mcp else None
    return {
        "toolkit_name": toolkit.name,
        "toolkit_version": toolkit.version,
        "toolkit_digest": toolkit.digest,
        "index_digest": index,
        "mcp_servers": [s.name for s in toolkit.mcp_servers] if arm.mcp else [],
    }


def arm_provenance(settings: SweepSettings, arm: ArmSpec) -> dict[str, Any]:
    """Comparator version/manifest for ce_* rows, the overlay digest for candidate rows; else None."""
    comparator = settings.comparator if arm.family == "comparator" else None
    overlay = settings.overlay if arm.candidate_of else None
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


def judge_fields(which: str, outcome: JudgeOutcome, cell_secrets) -> dict[str, Any]:
    """``<which>_tests_run/_passed/_skipped`` and ``<which>_tests`` for ``which`` in verify, oracle.

    Messages are kept only if the outcome still has them: the oracle's are dropped before they
    get here (``judging.judge.hide_oracle_text``), since they may quote hidden tests.
    """
    tests = outcome.tests
    listed = None
    if tests is not None:
        ordered = sorted(tests, key=lambda t: _ORDER.get(t.outcome, 0))
        shown = [
            {
                "id": t.test_id,
                "outcome": t.outcome,
                "message": redact_text(t.message, cell_secrets)[:MAX_ROW_MESSAGE_CHARS]
                if t.message
                else None,
            }
            for t in ordered[:MAX_ROW_TESTS]
        ]
        listed = {"tests": shown, "omitted": max(0, len(tests) - MAX_ROW_TESTS)}
    return {
        f"{which}_tests_run": outcome.tests_run,
        f"{which}_tests_passed": outcome.tests_passed,
        f"{which}_tests_skipped": outcome.tests_skipped,
        f"{which}_tests": listed,
    }
