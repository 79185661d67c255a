"""The error-kind vocabulary matches the reference table (§5.1) flag by flag."""

from __future__ import annotations

import pytest

from workflow_bench.judging.outcomes import (
    ERROR_KINDS,
    EVIDENCE_FAILURE_KINDS,
    EXCLUDED_ERROR_KINDS,
    EXECUTION_FAILURE_KINDS,
    SYSTEMIC_ERROR_KINDS,
    ErrorKind,
    UnknownErrorKind,
    error_kind_info,
    evidence_failed,
    execution_failed,
    is_admissible,
    is_excluded,
    is_systemic_failure,
)

pytestmark = pytest.mark.unit

# Restated by hand from reference-harness.md §5.1 — deliberately NOT derived from the module, so
# flipping one flag in outcomes._KINDS fails here.
# name: (excluded, execution failure, evidence failure, systemic)
REFERENCE_TABLE = {
    "session-error": (True, True, False, True),
    "infra-error": (True, True, False, True),
    "cleanup-failure": (True, True, False, True),
    "cancelled": (True, True, False, False),
    "evidence-unverified": (True, False, True, False),
    # Charged to the arm: only the agent (or its tools) can make the stream disagree with the wire.
    "evidence-tampered": (False, False, True, False),
    "review-evidence-invalid": (True, False, True, True),
    "skill-not-invoked": (False, False, True, False),
    "plan-evidence-invalid": (False, False, False, False),
    "implementation-evidence-invalid": (False, False, False, False),
    "verify-failed": (False, False, False, False),
    "oracle-failed": (False, False, False, False),
    "oracle-unavailable": (False, False, False, False),
    "no-work-produced": (False, False, False, False),
    "resource-limit": (False, False, False, False),
}


def test_vocabulary_is_exactly_the_reference_kinds_in_order() -> None:
    assert list(ERROR_KINDS) == list(REFERENCE_TABLE)


@pytest.mark.parametrize("name", list(REFERENCE_TABLE))
def test_each_kind_flags_match_reference(name: str) -> None:
    kind = ERROR_KINDS[name]
    excluded, execution, evidence, systemic = REFERENCE_TABLE[name]
    assert kind.name == name
    assert (kind.is_excluded, kind.is_execution_failure, kind.is_evidence_failure, kind.is_systemic) == (
        excluded,
        execution,
        evidence,
        systemic,
    )
    assert (name in EXCLUDED_ERROR_KINDS) is excluded
    assert (name in EXECUTION_FAILURE_KINDS) is execution
    assert (name in EVIDENCE_FAILURE_KINDS) is evidence
    assert (name in SYSTEMIC_ERROR_KINDS) is systemic


@pytest.mark.parametrize(
    ("derived", "expected"),
    [
        (
            EXCLUDED_ERROR_KINDS,
            {
                "session-error",
                "infra-error",
                "cleanup-failure",
                "cancelled",
                "evidence-unverified",
                "review-evidence-invalid",
            },
        ),
        (EXECUTION_FAILURE_KINDS, {"session-error", "infra-error", "cleanup-failure", "cancelled"}),
        (
            EVIDENCE_FAILURE_KINDS,
            {"review-evidence-invalid", "evidence-unverified", "skill-not-invoked", "evidence-tampered"},
        ),
        (
            SYSTEMIC_ERROR_KINDS,
            {"session-error", "infra-error", "cleanup-failure", "review-evidence-invalid"},
        ),
    ],
    ids=["excluded", "execution", "evidence", "systemic"],
)
def test_derived_sets_equal_reference_sets(derived: frozenset[str], expected: set[str]) -> None:
    assert isinstance(derived, frozenset)
    assert derived == expected


@pytest.mark.parametrize("name", list(REFERENCE_TABLE))
def test_each_kind_has_a_one_line_description(name: str) -> None:
    text = ERROR_KINDS[name].produced_when
    assert text.strip() and "\n" not in text


def test_table_is_read_only() -> None:
    with pytest.raises(TypeError):
        ERROR_KINDS["new-kind"] = ERROR_KINDS["cancelled"]  # type: ignore[index]


def test_execution_failure_must_be_excluded() -> None:
    with pytest.raises(ValueError, match="must be excluded"):
        ErrorKind(
            "bad",
            "x",
            is_excluded=False,
            is_execution_failure=True,
            is_evidence_failure=False,
            is_systemic=False,
        )


def test_error_kind_info_names_known_kinds_on_miss() -> None:
    assert error_kind_info("oracle-failed").name == "oracle-failed"
    with pytest.raises(UnknownErrorKind, match="known kinds: session-error"):
        error_kind_info("sesion-error")


def test_execution_failed() -> None:
    assert execution_failed({"error_kind": "infra-error"})
    assert not execution_failed({"error_kind": "verify-failed"})
    assert not execution_failed({"error_kind": None})


def test_evidence_failed_also_on_flags() -> None:
    assert evidence_failed({"error_kind": "skill-not-invoked"})
    assert evidence_failed({"error_kind": None, "review_evidence_valid": False})
    assert evidence_failed({"error_kind": "verify-failed", "transcript_missing": True})
    # Negative controls: unknown (None) flags are not failures.
    assert not evidence_failed(
        {"error_kind": None, "review_evidence_valid": None, "transcript_missing": None}
    )
    assert not evidence_failed({"error_kind": "oracle-failed", "transcript_missing": False})


def test_is_excluded() -> None:
    assert is_excluded({"error_kind": "session-error"})
    assert is_excluded({"error_kind": None, "review_evidence_valid": False})
    # skill-not-invoked ran and spent real tokens: it stays in the medians.
    assert not is_excluded({"error_kind": "skill-not-invoked"})
    assert not is_excluded({"error_kind": None, "transcript_missing": True})


def test_admissible_and_systemic() -> None:
    assert is_admissible({"error_kind": "oracle-failed"})
    assert not is_admissible({"error_kind": "cancelled"})
    assert is_systemic_failure({"error_kind": "verify-failed", "review_evidence_valid": False})
    assert not is_systemic_failure({"error_kind": "cancelled"})
    assert not is_systemic_failure({"error_kind": "evidence-unverified"})


def test_unknown_kind_carries_no_flag() -> None:
    row = {"error_kind": "from-the-future"}
    assert not (execution_failed(row) or evidence_failed(row) or is_excluded(row))


def test_every_error_kind_the_code_writes_is_in_the_vocabulary():
    """Scan the package for error kinds written into rows; each must be a known kind."""
    import re
    from pathlib import Path

    from workflow_bench.judging.outcomes import ERROR_KINDS

    package = Path(__file__).resolve().parents[2] / "workflow_bench"
    patterns = (
        re.compile(r"""error_kind["']?\]?\s*[=:]\s*["']([a-z-]+)["']"""),
        re.compile(r"""EvidenceError\(\s*["']([a-z-]+)["']"""),
        re.compile(r"""["']((?:plan|implementation|review)-evidence-invalid)["']"""),
        re.compile(r"""kind\s*=\s*["']([a-z]+-[a-z-]+)["']"""),
    )
    written = {m for p in package.rglob("*.py") for pat in patterns for m in pat.findall(p.read_text())}
    assert written, "the scan found nothing: the patterns no longer match the code"
    assert {"infra-error", "cancelled", "review-evidence-invalid"} <= written
    assert written <= set(ERROR_KINDS), sorted(written - set(ERROR_KINDS))
