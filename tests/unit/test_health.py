"""Measurement health lines and exit precedence: every state, every arm, with negative controls."""

from __future__ import annotations

import pytest

from tests.builders import sweep_row, sweep_runs
from workflow_bench.reports.aggregate import HealthStatus, aggregate_all
from workflow_bench.reports.health import health_line, sweep_exit_code, sweep_health

pytestmark = pytest.mark.unit
ARMS = ("workflow", "candidate_workflow", "baseline", "ce_review")


def health_of(rows):
    return sweep_health(aggregate_all(rows), arms=ARMS)


def states(rows):
    return {arm: h.status for arm, h in health_of(rows).items()}


def test_every_declared_arm_gets_a_line_even_without_rows() -> None:
    health = health_of(sweep_runs(1, "t1", "workflow"))
    assert list(health) == list(ARMS)  # baselines, candidates and comparators alike
    assert health["ce_review"].status is HealthStatus.UNKNOWN
    lines = [health_line(h) for h in health.values()]
    assert all(line.startswith("[measurement-health] ") for line in lines)
    assert lines[0].startswith("[measurement-health] workflow: OBSERVED_OK fresh_attempts=1 admissible=1")


def test_observed_ok_vs_degraded() -> None:
    ok = sweep_runs(2, "t1", "baseline", skill_invoked=None, resolved=False, error_kind="verify-failed")
    assert states(ok)["baseline"] is HealthStatus.OBSERVED_OK  # resolving nothing is not ill health
    degraded = [*ok, sweep_row("t1", "baseline", 2, ok=False, resolved=False, error_kind="session-error")]
    assert states(degraded)["baseline"] is HealthStatus.DEGRADED
    assert "reasons=session-error" in health_line(health_of(degraded)["baseline"])


def test_unusable_needs_failures_and_no_admissible_row() -> None:
    broken = sweep_runs(2, "t1", "candidate_workflow", ok=False, resolved=False, error_kind="infra-error")
    line = health_line(health_of(broken)["candidate_workflow"])
    assert "UNUSABLE" in line and line.endswith("cause=undetermined")
    # negative control: one admissible row makes it DEGRADED, not UNUSABLE
    mixed = [*broken, sweep_row("t1", "candidate_workflow", 2)]
    assert states(mixed)["candidate_workflow"] is HealthStatus.DEGRADED


def test_evidence_failures_alone_make_an_arm_unusable() -> None:
    tampered = sweep_runs(2, "t1", "workflow", transcript_missing=True, error_kind="evidence-unverified")
    assert states(tampered)["workflow"] is HealthStatus.UNUSABLE


def test_unknown_when_only_reused_rows() -> None:
    assert states(sweep_runs(2, "t1", "workflow", reused=True))["workflow"] is HealthStatus.UNKNOWN
    assert states(sweep_runs(2, "t1", "workflow", reused=False))["workflow"] is HealthStatus.OBSERVED_OK


def test_exit_precedence_breaker_cancel_health() -> None:
    unusable = health_of(sweep_runs(2, "t1", "workflow", ok=False, resolved=False, error_kind="infra-error"))
    healthy = health_of(sweep_runs(2, "t1", "workflow"))
    assert sweep_exit_code("complete", healthy) == 0
    assert sweep_exit_code("complete", unusable) == 1
    assert sweep_exit_code("aborted", healthy) == 1
    assert sweep_exit_code("aborted", unusable) == 1
    assert sweep_exit_code("cancelled", unusable) == 130  # cancel outranks health
    assert sweep_exit_code("cancelled", healthy) == 130
