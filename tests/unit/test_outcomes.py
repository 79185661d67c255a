"""The error-kind vocabulary, flag by flag, and who is charged for each kind."""

from __future__ import annotations

import pytest

from tests.builders import row
from workflow_bench.judging.outcomes import (
    CHARGED_ERROR_KINDS,
    ERROR_KINDS,
    EVIDENCE_FAILURE_KINDS,
    EXCLUDED_ERROR_KINDS,
    EXECUTION_FAILURE_KINDS,
    SYSTEMIC_ERROR_KINDS,
    ErrorKind,
    KindFlags,
    UnknownErrorKind,
    error_kind_info,
    evidence_failed,
    execution_failed,
    is_admissible,
    is_charged_to_arm,
    is_excluded,
    is_systemic_failure,
)

pytestmark = pytest.mark.unit

# Restated by hand — deliberately NOT derived from the module, so flipping one flag in
# outcomes.ErrorKind fails here. Started from reference-harness.md §5.1; every kind the agent can
# cause is charged to its arm (docs/error-kinds.md gives the reason per kind).
# name: (excluded, execution failure, evidence failure, systemic, charged to the arm)
REFERENCE_TABLE = {
    "session-error": (True, True, False, True, False),
    "infra-error": (True, True, False, True, False),
    "cancelled": (True, True, False, False, False),
    "evidence-unverified": (True, False, True, False, False),
    # Charged to the arm: only the agent (or its tools) can make the stream disagree with the wire.
    "evidence-tampered": (False, False, True, False, True),
    "session-failed": (False, True, False, False, True),
    "session-timeout": (False, True, False, False, True),
    "workspace-invalid": (False, False, True, False, True),
    "verify-timeout": (False, True, False, False, True),
    "oracle-timeout": (False, True, False, False, True),
    "judging-error": (False, True, False, False, True),
    "cleanup-failure": (False, True, False, False, True),
    "review-evidence-invalid": (False, False, True, False, True),
    "skill-not-invoked": (False, False, True, False, True),
    "plan-evidence-invalid": (False, False, False, False, True),
    "implementation-evidence-invalid": (False, False, False, False, True),
    "verify-failed": (False, False, False, False, True),
    "oracle-failed": (False, False, False, False, True),
    "oracle-unavailable": (True, False, False, False, False),
    "no-work-produced": (False, False, False, False, True),
    "resource-limit": (False, False, False, False, True),
}


def test_vocabulary_is_exactly_the_table_kinds_in_order() -> None:
    assert list(ERROR_KINDS) == list(REFERENCE_TABLE)


@pytest.mark.parametrize("name", list(REFERENCE_TABLE))
def test_each_kind_flags_match_the_table(name: str) -> None:
    kind = ERROR_KINDS[name]
    excluded, execution, evidence, systemic, charged = REFERENCE_TABLE[name]
    assert kind.value == name and kind == name and ErrorKind(name) is kind
    assert (
        kind.is_excluded,
        kind.is_execution_failure,
        kind.is_evidence_failure,
        kind.is_systemic,
        kind.charged_to_arm,
    ) == (excluded, execution, evidence, systemic, charged)
    assert (name in EXCLUDED_ERROR_KINDS) is excluded
    assert (name in EXECUTION_FAILURE_KINDS) is execution
    assert (name in EVIDENCE_FAILURE_KINDS) is evidence
    assert (name in SYSTEMIC_ERROR_KINDS) is systemic
    assert (name in CHARGED_ERROR_KINDS) is charged
    assert kind.attribution.strip() and "\n" not in kind.attribution


def test_nothing_the_agent_can_cause_is_excluded_or_systemic() -> None:
    assert not CHARGED_ERROR_KINDS & (EXCLUDED_ERROR_KINDS | SYSTEMIC_ERROR_KINDS)
    # The breaker counts exactly the outages the agent cannot cause.
    assert {"session-error", "infra-error"} == SYSTEMIC_ERROR_KINDS


def test_agent_causable_triggers_are_charged() -> None:
    # The triggers issue 8 observed self-excluding, each now a charged kind.
    for name in (
        "session-failed",
        "session-timeout",
        "workspace-invalid",
        "verify-timeout",
        "oracle-timeout",
        "judging-error",
        "cleanup-failure",
        "review-evidence-invalid",
    ):
        failed = row(error_kind=name, review_evidence_valid=False)
        assert is_charged_to_arm(failed) and not is_excluded(failed) and not is_systemic_failure(failed), name


def test_charged_kind_cannot_be_excluded() -> None:
    with pytest.raises(ValueError, match="charged to the arm cannot be excluded"):
        KindFlags("x", "y", True, False, False, False, True)
    with pytest.raises(ValueError, match="charged to the arm cannot be excluded or systemic"):
        KindFlags("x", "y", False, False, False, True, True)


@pytest.mark.parametrize("name", list(REFERENCE_TABLE))
def test_each_kind_has_a_one_line_description(name: str) -> None:
    text = ERROR_KINDS[name].produced_when
    assert text.strip() and "\n" not in text


def test_table_is_read_only() -> None:
    with pytest.raises(TypeError):
        ERROR_KINDS["new-kind"] = ERROR_KINDS["cancelled"]  # type: ignore[index]


def test_uncharged_execution_failure_must_be_excluded() -> None:
    with pytest.raises(ValueError, match="must be excluded"):
        KindFlags(
            produced_when="x",
            attribution="y",
            is_excluded=False,
            is_execution_failure=True,
            is_evidence_failure=False,
            is_systemic=False,
            charged_to_arm=False,
        )


def test_error_kind_info_names_known_kinds_on_miss() -> None:
    assert error_kind_info("oracle-failed") is ErrorKind.ORACLE_FAILED
    with pytest.raises(UnknownErrorKind, match="known kinds: session-error"):
        error_kind_info("sesion-error")


def test_execution_failed() -> None:
    assert execution_failed(row(error_kind="infra-error"))
    assert not execution_failed(row(error_kind="verify-failed"))
    assert not execution_failed(row(error_kind=None))


def test_evidence_failed_also_on_flags() -> None:
    assert evidence_failed(row(error_kind="skill-not-invoked"))
    assert evidence_failed(row(error_kind=None, review_evidence_valid=False))
    assert evidence_failed(row(error_kind="verify-failed", transcript_missing=True))
    # Negative controls: unknown (None) flags are not failures.
    assert not evidence_failed(row(error_kind=None, review_evidence_valid=None, transcript_missing=None))
    assert not evidence_failed(row(error_kind="oracle-failed", transcript_missing=False))


def test_is_excluded() -> None:
    assert is_excluded(row(error_kind="session-error"))
    # review_evidence_valid is the agent's artifact: it never excludes a row by itself.
    assert not is_excluded(row(error_kind=None, review_evidence_valid=False))
    assert not is_excluded(row(error_kind="review-evidence-invalid", review_evidence_valid=False))
    # skill-not-invoked ran and spent real tokens: it stays in the medians.
    assert not is_excluded(row(error_kind="skill-not-invoked"))
    assert not is_excluded(row(error_kind=None, transcript_missing=True))


def test_admissible_and_systemic() -> None:
    assert is_admissible(row(error_kind="oracle-failed"))
    assert not is_admissible(row(error_kind="cancelled"))
    assert is_systemic_failure(row(error_kind="infra-error"))
    assert not is_systemic_failure(row(error_kind="verify-failed", review_evidence_valid=False))
    assert not is_systemic_failure(row(error_kind="cancelled"))
    assert not is_systemic_failure(row(error_kind="evidence-unverified"))


def test_a_kind_outside_the_vocabulary_cannot_be_recorded() -> None:
    # The row's error_kind is the closed type: a row carrying an unknown kind is never built.
    with pytest.raises(ValueError, match="error_kind"):
        row(error_kind="from-the-future")
    with pytest.raises(ValueError):
        ErrorKind("from-the-future")


def test_no_module_spells_an_error_kind_as_a_bare_string():
    """Code names a kind by its member (``ErrorKind.INFRA_ERROR``): a bare string is a typo waiting."""
    import ast
    from pathlib import Path

    package = Path(__file__).resolve().parents[2] / "workflow_bench"
    # "cancelled" is also a process state and a sweep status (process.py, schedule.pool): not a kind there.
    names = set(ERROR_KINDS) - {"cancelled"}

    def bare(path: Path) -> list[str]:
        tree = ast.parse(path.read_text())
        return [
            f"{path.name}:{node.lineno}: {node.value}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names
        ]

    found = [hit for path in package.rglob("*.py") if path.name != "outcomes.py" for hit in bare(path)]
    assert found == []
    # Negative control: the scan sees a bare kind where one is written.
    probe = package.parent / "tests" / "unit" / "test_outcomes.py"
    assert any("infra-error" in hit for hit in bare(probe))


def test_error_kinds_doc_is_generated_from_the_table() -> None:
    from pathlib import Path

    from workflow_bench.judging.outcomes import vocabulary_markdown

    doc = Path(__file__).resolve().parents[2] / "docs" / "error-kinds.md"
    assert doc.read_text() == vocabulary_markdown(), (
        "run: python -m workflow_bench.judging.outcomes > docs/error-kinds.md"
    )
