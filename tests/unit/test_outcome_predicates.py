"""Rules of the error-kind vocabulary's predicates that hold whatever the vocabulary's entries are.

The outage breaker (`schedule.pool`) counts `is_systemic_failure` rows; these tests state when a
row counts, with a negative control for each, and what an unknown kind's refusal says.
"""

from __future__ import annotations

import pytest

from tests.builders import row
from workflow_bench.judging.outcomes import (
    ERROR_KINDS,
    SYSTEMIC_ERROR_KINDS,
    error_kind_info,
    is_systemic_failure,
)

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("kind", sorted(SYSTEMIC_ERROR_KINDS))
def test_a_row_with_a_systemic_kind_counts_toward_the_outage_streak(kind):
    assert is_systemic_failure(row(error_kind=kind))


@pytest.mark.parametrize("kind", sorted(set(ERROR_KINDS) - SYSTEMIC_ERROR_KINDS))
def test_a_row_with_any_other_kind_does_not(kind):
    assert not is_systemic_failure(row(error_kind=kind))


def test_invalid_review_evidence_alone_is_never_systemic():
    # The review artifact is the agent's to write: its invalidity is charged, never an outage.
    assert not is_systemic_failure(row(error_kind=None, review_evidence_valid=False))
    assert not is_systemic_failure(row(error_kind=None, review_evidence_valid=True))
    assert not is_systemic_failure(row(error_kind=None))
    assert not is_systemic_failure(row())


def test_there_is_at_least_one_systemic_kind():
    assert SYSTEMIC_ERROR_KINDS  # else the parametrized rule above would pass vacuously


def test_an_unknown_kind_is_refused_with_every_known_kind_listed():
    with pytest.raises(ValueError) as raised:
        error_kind_info("no-such-kind")
    message = str(raised.value)
    assert "'no-such-kind'" in message and message.endswith(", ".join(ERROR_KINDS))
    name = next(iter(ERROR_KINDS))
    assert error_kind_info(name).value == name
