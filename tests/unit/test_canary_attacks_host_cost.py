"""The host-cost canary judge: blocked only on a filled bound with the harness's cost within its overhead."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.builders import row
from workflow_bench.canary.attacks_host_cost import (
    BOUND_MIB,
    HARNESS_OVERHEAD_BYTES,
    HOST_COST_ATTACKS,
    RSS_OVERHEAD_BYTES,
)
from workflow_bench.canary.attacks_limits import LimitEvidence

pytestmark = pytest.mark.unit
MIB = 1024 * 1024
FULL = row(
    error_kind="resource-limit", error_detail="disk limit 256 MiB: volume full (primary=judging-error)"
)
DEFENDED = LimitEvidence(
    output="",
    row=FULL,
    transcripts="",
    console=(),
    sentinel_alive=True,
    disk_grown=(BOUND_MIB + 24) * MIB,
    harness_grown=18 * MIB,
    rss_grown=2 * MIB,
)
(ATTACK,) = HOST_COST_ATTACKS


def test_the_defended_evidence_is_blocked():
    blocked, observed = ATTACK.judge(DEFENDED)
    assert blocked, observed


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"harness_grown": HARNESS_OVERHEAD_BYTES + MIB, "disk_grown": (BOUND_MIB + 600) * MIB}, "disk"),
        ({"rss_grown": RSS_OVERHEAD_BYTES + MIB}, "rss"),
        ({"rss_grown": None}, "not measured"),
        ({"harness_grown": None}, "not measured"),
        ({"disk_grown": (BOUND_MIB // 2) * MIB + 18 * MIB}, "did not take"),
        ({"row": row(error_kind="oracle-failed", error_detail="hidden oracle failed")}, "did not take"),
    ],
)
def test_a_cost_over_the_overhead_unknown_or_an_unfilled_bound_is_not_blocked(change, why):
    blocked, observed = ATTACK.judge(replace(DEFENDED, **change))
    assert not blocked and (why in observed or why in ("disk", "rss")), observed
