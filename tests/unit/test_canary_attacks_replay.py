"""The replay attack's judge says "blocked" only on the defended outcomes."""

from __future__ import annotations

import pytest

from tests.builders import row
from workflow_bench.canary.attacks_limits import LimitEvidence
from workflow_bench.canary.attacks_replay import REPLAY_ATTACKS

pytestmark = pytest.mark.unit
(ATTACK,) = REPLAY_ATTACKS
CAUGHT = {"error_kind": "evidence-tampered", "error_detail": "request 1 repeats request 0 (a replay: ...)"}


def _verdict(output: str, fields: dict) -> bool:
    evidence = LimitEvidence(
        output=output, row=row(**fields), transcripts="", console=(), sentinel_alive=True
    )
    return ATTACK.judge(evidence)[0]


def test_blocked_when_refused_or_caught_as_a_replay():
    assert _verdict("replay-status 403 9120 bytes", {"error_kind": "oracle-failed"})
    assert _verdict("replay-status 200 9120 bytes", CAUGHT)


@pytest.mark.parametrize(
    ("output", "fields"),
    [
        ("replay-status 200 9120 bytes", {"error_kind": "oracle-failed", "error_detail": "x"}),
        ("replay-status 200 9120 bytes", {"error_kind": "evidence-tampered", "error_detail": "forged"}),
        ("Traceback: FileNotFoundError", CAUGHT),  # the replay never ran: proves nothing
    ],
    ids=["served-and-clean", "tampered-for-another-reason", "did-not-run"],
)
def test_not_blocked_otherwise(output, fields):
    assert not _verdict(output, fields)
