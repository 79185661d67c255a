"""Per task × arm promotion evidence, folded from rows: what the gate is allowed to look at.

A row is **scored** when it is not excluded, its evidence did not fail (`outcomes.evidence_failed`)
and the arm's skill was proven invoked (`skill_invoked is True`). Only scored rows feed resolve
counts and metrics here. This closes the reference's gap: there `skill-not-invoked` rows stayed in
the medians, so a candidate that skipped its own (expensive) skill looked cheaper and could be
promoted for not running. Here such a row is simply not evidence about the candidate, and the
gate (gate.py) requires equal scored counts on both arms.

Pure: rows in, frozen values out.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

from workflow_bench.judging.outcomes import ErrorKind, evidence_failed, is_excluded
from workflow_bench.reports.aggregate import probe_tally
from workflow_bench.reports.promotion_model import ArmEvidence, ProbeEvidence
from workflow_bench.rows.model import Row

SKILL_NOT_INVOKED = ErrorKind.SKILL_NOT_INVOKED


def is_scored(row: Row) -> bool:
    """The row is evidence about the arm's skill: measured, trustworthy, skill proven invoked."""
    return not is_excluded(row) and not evidence_failed(row) and row.skill_invoked is True


def _median(values: Sequence[Any]) -> float | None:
    if not values or any(not _is_number(v) for v in values):
        return None
    return round(float(statistics.median(values)), 6)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _all_true(values: Sequence[Any]) -> bool | None:
    if not values or not all(isinstance(v, bool) for v in values):
        return None
    return all(values)


def arm_evidence(rows: Sequence[Row], *, metrics: Sequence[str]) -> ArmEvidence:
    """Fold one task×arm's rows (possibly none: every count 0, every metric unknown)."""
    valid = [r for r in rows if not is_excluded(r)]
    scored = [r for r in valid if is_scored(r)]
    kinds: dict[str, int] = {}
    for row in rows:
        if row.error_kind:
            kinds[str(row.error_kind)] = kinds.get(str(row.error_kind), 0) + 1
    blockers = [r.review_metric("blocker_recall") for r in scored]
    known_blockers = [b for b in blockers if b is not None and _is_number(b)]
    return ArmEvidence(
        runs=len(rows),
        valid_runs=len(valid),
        excluded_runs=len(rows) - len(valid),
        scored_runs=len(scored),
        resolved=sum(1 for r in scored if r.resolved is True),
        skill_not_invoked=sum(1 for r in rows if r.error_kind == SKILL_NOT_INVOKED),
        error_kinds=dict(sorted(kinds.items())),
        metrics={m: _median([getattr(r, m) for r in scored]) for m in metrics},
        review_weighted_f1=_median([r.review_metric("weighted_f1") for r in scored]),
        review_false_positives=_median([r.review_metric("false_positives") for r in scored]),
        review_blocker_recall=(
            round(float(min(known_blockers)), 6)
            if blockers and len(known_blockers) == len(blockers)
            else None
        ),
        review_verdict_correct=_all_true([r.review_metric("verdict_correct") for r in scored]),
        review_clean_pass=_all_true([r.review_metric("clean_pass") for r in scored]),
        review_clean_control=(
            any(r.review_metric("clean_control") is True for r in scored) if scored else None
        ),
    )


def probe_evidence(rows: Sequence[Row]) -> ProbeEvidence:
    """One arm's rows of impossible tasks folded (``reports.aggregate.probe_tally``)."""
    resolved, runs = probe_tally(rows)
    return ProbeEvidence(resolved=resolved, runs=runs)
