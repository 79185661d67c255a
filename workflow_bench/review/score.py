"""Review benchmark scoring: a review artifact against its hidden labels (reference harness §4.3).

Owns ``score_review`` (deterministic matching and every metric), ``ReviewScore`` with its row
form (``to_row``: the flattened ``review_<metric>`` fields of reference §5), ``review_row_fields``
(all review fields of a row, valid artifact or not) and ``review_oracle_passed``. The artifact
contract lives in ``review.contract`` and the hidden labels in ``review.labels``; their public
names are re-exported here, so ``workflow_bench.review.score`` is the one import path for callers.

Matching. A finding and a label are a candidate pair when their normalized paths are equal and
their line ranges overlap. The assignment is a **maximum-cardinality** bipartite matching found
with augmenting paths (Kuhn), so a finding that overlaps two labels can never cost a second
finding its only match (a greedy pass by rank would). Ranking only decides among matchings of
that size: pairs rank by (category match, severity match, -line distance, -label span), ties
broken by the finding's (path, category, line, ...) and then the label's content. Findings and
labels are first put into a canonical order by their full content (ids are unique, so the order
is total), which is why the score is identical under any permutation of either input.

No "grounded evidence" metric: the artifact contract already rejects a finding without a path,
a positive line and nonblank evidence, so counting those was 1.0 for every scorable review.
Grounding worth the name (the cited lines exist in the reviewed change and the evidence quotes
them) needs the harness-owned view of that change, which the scorer does not receive.

Must never: read files, import workflow_bench modules other than the two above, or turn
"no evidence" into a number: a ratio with an empty denominator is ``None``, except F1, which is
0.0 when labels exist and nothing matched (a reviewer that found nothing scored zero, not n/a).
Callers: the cell (scoring a review arm), tests.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from .contract import (
    ARTIFACT_ERROR_CODES,
    BLOCKING_SEVERITIES,
    MAX_FINDINGS,
    REVIEW_LABELS_TARGET,
    REVIEW_OUTPUT_CONTRACT,
    REVIEW_OUTPUT_DIR,
    REVIEW_OUTPUT_ENV_VAR,
    REVIEW_OUTPUT_FILE,
    REVIEW_OUTPUT_PATH,
    SEVERITIES,
    VERDICTS,
    ReviewArtifact,
    ReviewArtifactError,
    ReviewFinding,
    parse_review_artifact,
)
from .labels import Label, ReviewLabelsError, labels_from_oracle, parse_labels

__all__ = [
    "ARTIFACT_ERROR_CODES",
    "BLOCKING_SEVERITIES",
    "MAX_FINDINGS",
    "METRIC_NAMES",
    "REVIEW_LABELS_TARGET",
    "REVIEW_OUTPUT_CONTRACT",
    "REVIEW_OUTPUT_DIR",
    "REVIEW_OUTPUT_ENV_VAR",
    "REVIEW_OUTPUT_FILE",
    "REVIEW_OUTPUT_PATH",
    "REVIEW_ROW_FIELDS",
    "SEVERITIES",
    "SEVERITY_WEIGHTS",
    "VERDICTS",
    "Label",
    "ReviewArtifact",
    "ReviewArtifactError",
    "ReviewFinding",
    "ReviewLabelsError",
    "ReviewMetrics",
    "ReviewScore",
    "expected_verdict",
    "labels_from_oracle",
    "match_findings",
    "parse_labels",
    "parse_review_artifact",
    "review_oracle_passed",
    "review_row_fields",
    "score_review",
]

# Reference weights (§4.3): one missed critical outweighs several low-severity nits.
SEVERITY_WEIGHTS: Mapping[str, int] = MappingProxyType({"critical": 8, "high": 5, "medium": 2, "low": 1})
ROUND_DIGITS = 6  # reference: metrics are stored rounded to 6 decimals


Ratio = Annotated[int | float, Field(union_mode="left_to_right")]
"""A metric as computed (rounded to ``ROUND_DIGITS``) and stored: a stored row re-serializes to its bytes."""


class ReviewMetrics(BaseModel):
    """Every metric of one review against its labels, each declared once, here, with its meaning.

    The row's ``review_score`` is this object; its ``review_<metric>`` fields flatten it (names in
    ``REVIEW_ROW_FIELDS``); ``reports.aggregate.ReviewAggregate`` reduces them per task×arm.
    ``None`` = no evidence for that ratio.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    true_positives: int = Field(description="findings matched to a hidden label (one match per label)")
    false_positives: int = Field(description="findings that matched no label")
    false_negatives: int = Field(description="labels no finding matched")
    precision: Ratio | None = Field(
        description="matched findings / findings; null when the review has no findings"
    )
    recall: Ratio | None = Field(description="matched labels / labels; null for a clean control")
    f1: Ratio | None = Field(
        description="F1 of precision and recall: 0.0 when labels exist and nothing matched, "
        "null without labels"
    )
    weighted_precision: Ratio | None = Field(
        description="matched weight / (matched weight + weight of unmatched findings); null without findings"
    )
    weighted_recall: Ratio | None = Field(
        description="matched weight / total label weight; a match weighs min(finding, label) severity weight"
    )
    weighted_f1: Ratio | None = Field(
        description="F1 of weighted precision and weighted recall (what the promotion gate reads)"
    )
    blocker_recall: Ratio | None = Field(
        description="of the critical/high labels, the fraction matched by a critical/high finding; "
        "null without one"
    )
    severity_accuracy: Ratio | None = Field(
        description="of the matched pairs, the fraction whose severities agree; null with no match"
    )
    category_accuracy: Ratio | None = Field(
        description="of the matched pairs, the fraction whose (case-folded) categories agree; "
        "null with no match"
    )
    verdict_correct: bool = Field(
        description="the artifact's verdict is the one the labels call for: none → approve, any "
        "critical/high → request_changes, else comment"
    )
    clean_control: bool = Field(description="the case has no labels")
    clean_pass: bool = Field(description="a clean control answered with no findings and approve")
    score_finite: bool = Field(description="every ratio is finite or null (a guard on the arithmetic)")

    def as_dict(self) -> dict[str, Any]:
        """The metrics as JSON-ready values, in field order (the row's ``review_score``)."""
        return {name: getattr(self, name) for name in METRIC_NAMES}

    def to_row(self) -> dict[str, Any]:
        """The flattened ``review_<metric>`` row fields (names in ``REVIEW_ROW_FIELDS``)."""
        return {f"review_{name}": value for name, value in self.as_dict().items()}


class ReviewScore(ReviewMetrics):
    """The metrics with the matched pairs behind them (diagnostics, never a row field)."""

    matches: tuple[tuple[str, str], ...] = Field(
        default=(), description="(finding id, label id) of each matched pair, sorted"
    )

    def metrics(self) -> ReviewMetrics:
        """The metrics alone, as a row keeps them."""
        return ReviewMetrics.model_validate(self.as_dict())


METRIC_NAMES: tuple[str, ...] = tuple(ReviewMetrics.model_fields)
REVIEW_ROW_FIELDS: tuple[str, ...] = tuple(f"review_{name}" for name in METRIC_NAMES)


def expected_verdict(labels: Sequence[Label]) -> str:
    """The verdict the labels call for: approve, request_changes or comment."""
    if not labels:
        return "approve"
    return "request_changes" if any(label.is_blocking for label in labels) else "comment"


def review_oracle_passed(score: ReviewScore) -> bool:
    """The hidden labels were fully matched: none missed, no false positive, the right verdict."""
    return score.false_negatives == 0 and score.false_positives == 0 and score.verdict_correct


def review_row_fields(score: ReviewScore | None, *, evidence_valid: bool) -> dict[str, Any]:
    """Every review field of a row: ``review_score``, ``review_evidence_valid`` and the metrics.

    With no score (the artifact was invalid, or the cell never got that far) every metric is
    ``None``: the keys are still present, which is what marks the row as a review arm's.
    """
    if score is None:
        metrics: dict[str, Any] = dict.fromkeys(REVIEW_ROW_FIELDS)
    else:
        metrics = score.to_row()
    return {
        "review_score": None if score is None else score.as_dict(),
        "review_evidence_valid": evidence_valid,
        **metrics,
    }


# ── matching ───────────────────────────────────────────────────────────────


def _finding_key(finding: ReviewFinding) -> tuple[Any, ...]:
    # Leads with (path, category, line): the reference's tie-break order after the quality rank.
    return (
        finding.path,
        finding.category,
        finding.line,
        finding.end_line,
        finding.severity,
        finding.finding_id,
        finding.scenario,
        finding.evidence,
        finding.recommendation,
        finding.blocking,
    )


def _label_key(label: Label) -> tuple[Any, ...]:
    return (label.path, label.line_start, label.line_end, label.category, label.severity, label.label_id)


def _overlaps(finding: ReviewFinding, label: Label) -> bool:
    return (
        finding.path == label.path and finding.line <= label.line_end and finding.end_line >= label.line_start
    )


def _quality(finding: ReviewFinding, label: Label) -> tuple[int, int, int, int]:
    """Higher is better: (category match, severity match, -line distance, -label span)."""
    return (
        int(finding.category == label.category),
        int(finding.severity == label.severity),
        -abs(finding.line - label.line_start),
        -(label.line_end - label.line_start),
    )


def match_findings(findings: Sequence[ReviewFinding], labels: Sequence[Label]) -> list[tuple[int, int]]:
    """A maximum-cardinality matching of ``findings`` to ``labels`` as (finding, label) indices.

    Deterministic for the given sequences; ``score_review`` passes them in canonical order.
    Findings are tried best candidate pair first, each trying its labels best first; Kuhn's
    augmenting paths then make the matching maximum, re-seating earlier findings only when
    that matches one more label.
    """
    candidates: list[list[tuple[tuple[int, int, int, int], int]]] = []
    for finding in findings:
        ranked = [
            (_quality(finding, label), index)
            for index, label in enumerate(labels)
            if _overlaps(finding, label)
        ]
        # best quality first; equal quality → the label that comes first canonically
        ranked.sort(key=lambda pair: (tuple(-q for q in pair[0]), pair[1]))
        candidates.append(ranked)
    order = sorted(
        (index for index, ranked in enumerate(candidates) if ranked),
        key=lambda index: (tuple(-q for q in candidates[index][0][0]), index),
    )
    owner: dict[int, int] = {}  # label index → finding index

    def augment(finding_index: int, visited: set[int]) -> bool:
        # Depth is bounded by the number of findings (≤ MAX_FINDINGS under the contract).
        for _quality_key, label_index in candidates[finding_index]:
            if label_index in visited:
                continue
            visited.add(label_index)
            holder = owner.get(label_index)
            if holder is None or augment(holder, visited):
                owner[label_index] = finding_index
                return True
        return False

    for finding_index in order:
        augment(finding_index, set())
    return sorted((finding_index, label_index) for label_index, finding_index in owner.items())


# ── metrics ────────────────────────────────────────────────────────────────


def _ratio(numerator: float, denominator: float) -> float | None:
    return numerator / denominator if denominator else None


def _f1(precision: float | None, recall: float | None, *, has_labels: bool) -> float | None:
    if precision is not None and recall is not None and precision + recall > 0:
        return 2 * precision * recall / (precision + recall)
    return 0.0 if has_labels else None


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, ROUND_DIGITS)


def score_review(artifact: ReviewArtifact, labels: Sequence[Label]) -> ReviewScore:
    """Score one review against its hidden labels (see the module docstring for the matching)."""
    findings = sorted(artifact.findings, key=_finding_key)
    expected = sorted(labels, key=_label_key)
    pairs = match_findings(findings, expected)
    matched_findings = {f for f, _ in pairs}
    tp = len(pairs)
    fp = len(findings) - tp
    fn = len(expected) - tp
    has_labels = bool(expected)

    precision = _ratio(tp, len(findings))
    recall = _ratio(tp, len(expected))
    matched_weight = sum(
        min(SEVERITY_WEIGHTS[findings[f].severity], SEVERITY_WEIGHTS[expected[lb].severity])
        for f, lb in pairs
    )
    unmatched_weight = sum(
        SEVERITY_WEIGHTS[finding.severity] for i, finding in enumerate(findings) if i not in matched_findings
    )
    weighted_precision = _ratio(matched_weight, matched_weight + unmatched_weight)
    weighted_recall = _ratio(matched_weight, sum(SEVERITY_WEIGHTS[label.severity] for label in expected))
    blockers = [i for i, label in enumerate(expected) if label.is_blocking]
    caught = {lb for f, lb in pairs if findings[f].severity in BLOCKING_SEVERITIES}
    ratios = {
        "precision": precision,
        "recall": recall,
        "f1": _f1(precision, recall, has_labels=has_labels),
        "weighted_precision": weighted_precision,
        "weighted_recall": weighted_recall,
        "weighted_f1": _f1(weighted_precision, weighted_recall, has_labels=has_labels),
        "blocker_recall": _ratio(sum(i in caught for i in blockers), len(blockers)),
        "severity_accuracy": _ratio(
            sum(findings[f].severity == expected[lb].severity for f, lb in pairs), tp
        ),
        "category_accuracy": _ratio(
            sum(findings[f].category == expected[lb].category for f, lb in pairs), tp
        ),
    }
    return ReviewScore(
        true_positives=tp,
        false_positives=fp,
        false_negatives=fn,
        **{name: _rounded(value) for name, value in ratios.items()},
        verdict_correct=artifact.verdict == expected_verdict(expected),
        clean_control=not has_labels,
        clean_pass=not has_labels and not findings and artifact.verdict == "approve",
        score_finite=all(value is None or math.isfinite(value) for value in ratios.values()),
        matches=tuple(sorted((findings[f].finding_id, expected[lb].label_id) for f, lb in pairs)),
    )
