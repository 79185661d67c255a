"""The review artifact contract, the hidden-label format, and scoring per reference harness §4.3.

Negative controls from the reference: a finding in the wrong place is tp=0 fp=1 fn=1 and fails
the oracle while the artifact stays valid evidence; approving defective code is a miss with
precision ``None``; a clean control with a spurious finding fails clean pass; every contract
violation has its own message.

Mutation checks (each was applied by hand and made the named tests fail):
- ``match_findings`` replaced by a greedy pass over pairs in rank order →
  ``test_matching_is_maximum_cardinality_not_greedy`` and
  ``test_property_true_positives_equal_the_maximum_matching`` fail.
- ``score_review`` without the canonical sort (findings and labels in input order) →
  ``test_property_score_is_identical_under_any_permutation`` fails.
- ``_f1`` returning ``None`` instead of 0.0 when labels exist → the approve-defective control fails.
"""

from __future__ import annotations

import itertools
import json
import pickle
import random
from typing import Any

import pytest

from workflow_bench.reports.aggregate import REVIEW_FLAGS, REVIEW_METRICS
from workflow_bench.review.contract import MAX_ARTIFACT_BYTES, MAX_TEXT_BYTES
from workflow_bench.review.score import (
    ARTIFACT_ERROR_CODES,
    MAX_FINDINGS,
    REVIEW_LABELS_TARGET,
    REVIEW_OUTPUT_CONTRACT,
    REVIEW_OUTPUT_PATH,
    REVIEW_ROW_FIELDS,
    SEVERITY_WEIGHTS,
    Label,
    ReviewArtifact,
    ReviewArtifactError,
    ReviewFinding,
    ReviewLabelsError,
    expected_verdict,
    labels_from_oracle,
    match_findings,
    parse_labels,
    parse_review_artifact,
    review_oracle_passed,
    review_row_fields,
    score_review,
)

pytestmark = pytest.mark.unit


# ── builders ───────────────────────────────────────────────────────────────


def finding_json(**overrides: Any) -> dict[str, Any]:
    base = {
        "id": "f1",
        "severity": "high",
        "path": "ledger/report.py",
        "line": 16,
        "end_line": 17,
        "category": "correctness",
        "scenario": "prefix='expenses:' prints total 0.00",
        "evidence": "total = _grand_total(ledger)",
        "recommendation": "sum the listed accounts",
        "blocking": True,
    }
    return {**base, **overrides}


def artifact_json(verdict: str = "request_changes", findings: list[Any] | None = None, **extra: Any) -> bytes:
    body = {
        "schema_version": 1,
        "verdict": verdict,
        "findings": [finding_json()] if findings is None else findings,
    }
    return json.dumps({**body, **extra}).encode()


def finding(
    fid: str = "f1",
    *,
    path: str = "a.py",
    line: int = 10,
    end_line: int | None = None,
    severity: str = "high",
    category: str = "correctness",
    blocking: bool = True,
) -> ReviewFinding:
    return ReviewFinding(
        finding_id=fid,
        severity=severity,  # type: ignore[arg-type]
        path=path,
        line=line,
        end_line=line if end_line is None else end_line,
        category=category,
        scenario="scenario",
        evidence="evidence",
        recommendation="fix it",
        blocking=blocking,
    )


def label(
    lid: str = "L1",
    *,
    path: str = "a.py",
    start: int = 10,
    end: int | None = None,
    severity: str = "high",
    category: str = "correctness",
) -> Label:
    return Label(lid, severity, path, start, start if end is None else end, category)  # type: ignore[arg-type]


def review(verdict: str, *findings: ReviewFinding) -> ReviewArtifact:
    return ReviewArtifact(verdict=verdict, findings=findings)  # type: ignore[arg-type]


# ── the artifact contract ──────────────────────────────────────────────────


def test_a_valid_artifact_parses_and_normalizes() -> None:
    data = artifact_json(
        findings=[
            finding_json(path="./ledger\\report.py", category="  Correctness "),
            finding_json(
                id="f2", severity="low", blocking=False, line=3, end_line=3, path="ledger/x/../money.py"
            ),
        ]
    )
    artifact = parse_review_artifact(data)
    assert artifact.verdict == "request_changes"
    first, second = artifact.findings
    assert (first.finding_id, first.path, first.category, first.line, first.end_line) == (
        "f1",
        "ledger/report.py",
        "correctness",
        16,
        17,
    )
    assert second.path == "ledger/money.py" and second.blocking is False


def test_approve_and_comment_shapes_are_valid() -> None:
    assert parse_review_artifact(artifact_json("approve", [])).findings == ()
    assert parse_review_artifact(artifact_json("comment", [])).verdict == "comment"
    comment = parse_review_artifact(artifact_json("comment", [finding_json(blocking=False)]))
    assert len(comment.findings) == 1


def _without(key: str) -> dict[str, Any]:
    return {k: v for k, v in finding_json().items() if k != key}


def _many(n: int) -> list[dict[str, Any]]:
    return [finding_json(id=f"f{i}") for i in range(n)]


# (case name, artifact bytes or None, expected code, a fragment the message must contain)
VIOLATIONS: list[tuple[str, bytes | None, str, str]] = [
    ("never written", None, "never-written", "never written"),
    ("empty", b"", "empty", "empty"),
    ("too large", b" " * (MAX_ARTIFACT_BYTES + 1), "too-large", "at most 262144"),
    ("not utf-8", b'{"verdict": "\xff"}', "not-utf8", "not valid UTF-8"),
    ("not json", b"{verdict: approve}", "not-json", "not JSON"),
    ("markdown", b"## Review\n\nLooks good.", "not-json", "not JSON: Expecting value"),
    ("nested too deep", b"[" * 200_000, "not-json", "RecursionError"),
    ("duplicate key", b'{"schema_version": 1, "verdict": "approve", "verdict": "comment", "findings": []}',
     "duplicate-key", "'verdict' appears twice"),
    ("NaN", b'{"schema_version": NaN, "verdict": "approve", "findings": []}', "non-finite-number", "NaN"),
    ("1e999", b'{"schema_version": 1e999, "verdict": "approve", "findings": []}', "non-finite-number",
     "1e999"),
    ("a list", b"[]", "not-an-object", "got a list"),
    ("missing key", b'{"schema_version": 1, "verdict": "approve"}', "keys", "missing findings"),
    ("unknown key", artifact_json("approve", [], summary="ok"), "keys", "unknown 'summary'"),
    ("schema 2", json.dumps({"schema_version": 2, "verdict": "approve", "findings": []}).encode(),
     "schema-version", "got 2"),
    ("schema true", json.dumps({"schema_version": True, "verdict": "approve", "findings": []}).encode(),
     "schema-version", "got True"),
    ("verdict spelling", artifact_json("request-changes"), "verdict", "got 'request-changes'"),
    ("verdict case", artifact_json("Approve", []), "verdict", "got 'Approve'"),
    ("findings object", b'{"schema_version": 1, "verdict": "approve", "findings": {}}', "findings-not-a-list",
     "got an object"),
    ("101 findings", artifact_json(findings=_many(MAX_FINDINGS + 1)), "too-many-findings", "101 entries"),
    ("finding string", artifact_json(findings=["total is wrong"]), "finding-not-an-object",
     "findings[0] want"),
    ("finding extra key", artifact_json(findings=[finding_json(title="x")]), "finding-keys",
     "unknown 'title'"),
    ("finding missing key", artifact_json(findings=[_without("evidence")]), "finding-keys",
     "missing evidence"),
    ("blank id", artifact_json(findings=[finding_json(id=" ")]), "finding-id",
     "findings[0].id must not be blank"),
    ("numeric id", artifact_json(findings=[finding_json(id=7)]), "finding-id", "got a number"),
    ("severity case", artifact_json(findings=[finding_json(severity="High")]), "finding-severity",
     "got 'High'"),
    ("absolute path", artifact_json(findings=[finding_json(path="/workspace/ledger/report.py")]),
     "finding-path", "repository-relative"),
    ("escaping path", artifact_json(findings=[finding_json(path="../etc/passwd")]), "finding-path",
     "repository-relative"),
    ("line 0", artifact_json(findings=[finding_json(line=0)]), "finding-line",
     "findings[0].line want a positive"),
    ("line float", artifact_json(findings=[finding_json(line=16.0)]), "finding-line", "got 16.0"),
    ("line bool", artifact_json(findings=[finding_json(line=True)]), "finding-line", "got True"),
    ("end before line", artifact_json(findings=[finding_json(line=17, end_line=16)]), "finding-end-line",
     "end_line 16 is before line 17"),
    ("end_line string", artifact_json(findings=[finding_json(end_line="17")]), "finding-end-line",
     "got '17'"),
    ("blank category", artifact_json(findings=[finding_json(category="")]), "finding-category",
     "category must not"),
    ("blank scenario", artifact_json(findings=[finding_json(scenario="\n")]), "finding-scenario",
     "scenario must not be blank"),
    ("huge evidence", artifact_json(findings=[finding_json(evidence="x" * (MAX_TEXT_BYTES + 1))]),
     "finding-evidence", "at most 4096"),
    ("null recommendation", artifact_json(findings=[finding_json(recommendation=None)]),
     "finding-recommendation", "got null"),
    ("blocking string", artifact_json(findings=[finding_json(blocking="yes")]), "finding-blocking",
     "got 'yes'"),
    ("duplicate ids", artifact_json(findings=[finding_json(), finding_json()]), "duplicate-finding-id",
     "findings[0] and findings[1]"),
    ("approve with findings", artifact_json("approve"), "approve-with-findings", "1 finding(s)"),
    ("request_changes without blocker", artifact_json(findings=[finding_json(blocking=False)]),
     "request-changes-without-blocker", "blocking: true"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("data", "code", "fragment"), [v[1:] for v in VIOLATIONS], ids=[v[0] for v in VIOLATIONS]
)
def test_each_violation_is_reported_with_its_code(data: bytes | None, code: str, fragment: str) -> None:
    with pytest.raises(ReviewArtifactError) as caught:
        parse_review_artifact(data)
    assert caught.value.code == code
    assert fragment in caught.value.message, caught.value.message
    assert str(caught.value) == caught.value.message
    assert len(caught.value.message) < 300  # rows keep it; a model-written value is only quoted briefly


def test_violation_messages_are_distinct_and_cover_every_code() -> None:
    messages = []
    for _name, data, _code, _fragment in VIOLATIONS:
        with pytest.raises(ReviewArtifactError) as caught:
            parse_review_artifact(data)
        messages.append(caught.value.message)
    assert len(set(messages)) == len(messages)
    # "unreadable" is raised by the caller that reads the file, never by the parser.
    assert {v[2] for v in VIOLATIONS} == set(ARTIFACT_ERROR_CODES) - {"unreadable"}


def test_the_four_read_failures_never_share_a_message() -> None:
    # The reference's incident: "never written" once read as an encoding fault for 15 runs.
    codes = {}
    for data in (None, b"", b"\xff", b"nope"):
        with pytest.raises(ReviewArtifactError) as caught:
            parse_review_artifact(data)
        codes[caught.value.code] = caught.value.message
    assert list(codes) == ["never-written", "empty", "not-utf8", "not-json"]
    assert len(set(codes.values())) == 4


def test_artifact_error_is_typed_picklable_and_closed() -> None:
    err = ReviewArtifactError("unreadable", "review artifact is a symlink, not a regular file")
    assert isinstance(err, ValueError)
    copy = pickle.loads(pickle.dumps(err))
    assert (copy.code, copy.message) == (err.code, err.message)
    with pytest.raises(ValueError, match="unknown review artifact error code"):
        ReviewArtifactError("made-up", "x")


def test_values_validate_on_construction() -> None:
    with pytest.raises(ReviewArtifactError) as caught:
        finding(line=0)
    assert caught.value.code == "finding-line"
    with pytest.raises(ReviewArtifactError) as caught:
        review("approve", finding())
    assert caught.value.code == "approve-with-findings"
    with pytest.raises(ReviewArtifactError) as caught:
        review("request_changes", finding("a", blocking=False))
    assert caught.value.code == "request-changes-without-blocker"


def test_the_prompt_contract_names_what_the_parser_checks() -> None:
    assert REVIEW_OUTPUT_PATH == "/review-output/review-output.json"
    for word in (REVIEW_OUTPUT_PATH, "request_changes", "end_line", "blocking", "critical", "at most 100"):
        assert word in REVIEW_OUTPUT_CONTRACT
    # Arm prompts are str.format templates: the contract must survive being part of one.
    assert ("{task}\n" + REVIEW_OUTPUT_CONTRACT).format(task="t") == "t\n" + REVIEW_OUTPUT_CONTRACT


# ── hidden labels ──────────────────────────────────────────────────────────


def labels_json(*findings: dict[str, Any], **top: Any) -> bytes:
    return json.dumps({"schema_version": 1, "findings": list(findings), **top}).encode()


LABEL = {"id": "L1", "severity": "high", "path": "./ledger/report.py", "line_start": 16, "line_end": 17,
         "category": "Correctness"}  # fmt: skip


def test_labels_parse_and_normalize() -> None:
    (parsed,) = parse_labels(labels_json(LABEL))
    assert parsed == Label("L1", "high", "ledger/report.py", 16, 17, "correctness")
    assert parsed.is_blocking
    assert parse_labels(labels_json()) == ()  # a clean control


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (b"not json", "not JSON"),
        (b"[]", "must be a JSON object"),
        (labels_json(version=2), "unknown 'version'"),
        (json.dumps({"schema_version": 2, "findings": []}).encode(), "schema_version want 1"),
        (json.dumps({"schema_version": 1, "findings": {}}).encode(), "findings want a list"),
        (labels_json({**LABEL, "evidence": "x"}), "unknown 'evidence'"),
        (labels_json({k: v for k, v in LABEL.items() if k != "line_end"}), "missing line_end"),
        (labels_json({**LABEL, "line_start": 18}), "line_end is before line_start"),
        (labels_json({**LABEL, "severity": "blocker"}), "want one of critical"),
        (labels_json({**LABEL, "path": "/abs.py"}), "repository-relative"),
        (labels_json(LABEL, LABEL), "repeat the id(s) 'L1'"),
        (labels_json("L1"), "findings[0] want an object"),
    ],
)
def test_bad_label_files_are_rejected(data: bytes, fragment: str) -> None:
    with pytest.raises(ReviewLabelsError, match=None) as caught:
        parse_labels(data)
    assert fragment in str(caught.value)


class _OracleFile:
    def __init__(self, target: str, data: bytes) -> None:
        self.target = target
        self.data = data


def test_labels_come_from_the_one_review_labels_oracle_file() -> None:
    files = [_OracleFile("other.py", b"x"), _OracleFile(REVIEW_LABELS_TARGET, labels_json(LABEL))]
    assert [lb.label_id for lb in labels_from_oracle(files)] == ["L1"]
    for wrong in ([], [*files, _OracleFile(REVIEW_LABELS_TARGET, labels_json())]):
        with pytest.raises(ReviewLabelsError, match="exactly one file"):
            labels_from_oracle(wrong)


# ── scoring: the reference's negative controls ─────────────────────────────


def test_exact_review_passes_the_oracle() -> None:
    score = score_review(review("request_changes", finding()), [label()])
    assert (score.true_positives, score.false_positives, score.false_negatives) == (1, 0, 0)
    assert score.precision == score.recall == score.f1 == score.weighted_f1 == 1.0
    assert score.blocker_recall == score.severity_accuracy == score.category_accuracy == 1.0
    assert score.verdict_correct and score.score_finite
    assert not score.clean_control and not score.clean_pass
    assert score.matches == (("f1", "L1"),)
    assert review_oracle_passed(score)


def test_a_finding_in_the_wrong_place_is_one_false_positive_and_one_miss() -> None:
    # Valid evidence (it parsed), wrong answer: the oracle fails, the row stays admissible.
    artifact = parse_review_artifact(artifact_json(findings=[finding_json(line=40, end_line=41)]))
    score = score_review(artifact, [label(path="ledger/report.py", start=16, end=17)])
    assert (score.true_positives, score.false_positives, score.false_negatives) == (0, 1, 1)
    assert score.precision == 0.0 and score.recall == 0.0 and score.f1 == 0.0
    assert score.blocker_recall == 0.0 and score.severity_accuracy is None
    assert score.verdict_correct  # request_changes was right; the place was not
    assert not review_oracle_passed(score)


def test_approving_defective_code_is_a_miss_with_precision_none() -> None:
    score = score_review(review("approve"), [label(), label("L2", start=30, severity="low")])
    assert (score.true_positives, score.false_positives, score.false_negatives) == (0, 0, 2)
    assert score.precision is None and score.weighted_precision is None
    assert score.recall == 0.0 and score.weighted_recall == 0.0
    assert score.f1 == 0.0 and score.weighted_f1 == 0.0  # labels exist: zero, not unknown
    assert score.blocker_recall == 0.0
    assert not score.verdict_correct and not review_oracle_passed(score)


def test_a_clean_control_with_a_spurious_finding_fails_clean_pass() -> None:
    score = score_review(review("comment", finding(blocking=False, severity="low")), [])
    assert score.clean_control and not score.clean_pass
    assert (score.true_positives, score.false_positives, score.false_negatives) == (0, 1, 0)
    assert score.precision == 0.0 and score.recall is None and score.f1 is None
    assert not score.verdict_correct and not review_oracle_passed(score)


def test_a_clean_control_approved_passes() -> None:
    score = score_review(review("approve"), [])
    assert score.clean_control and score.clean_pass and score.verdict_correct
    assert review_oracle_passed(score)
    ratios = [score.precision, score.recall, score.f1, score.weighted_f1, score.blocker_recall]
    assert ratios == [None] * 5  # nothing to measure is unknown, never a pass mark of 1.0


@pytest.mark.parametrize(
    ("severities", "verdict"),
    [((), "approve"), (("low",), "comment"), (("medium", "low"), "comment"),
     (("medium", "high"), "request_changes"), (("critical",), "request_changes")],
)  # fmt: skip
def test_expected_verdict(severities: tuple[str, ...], verdict: str) -> None:
    labels = [label(f"L{i}", start=10 * (i + 1), severity=s) for i, s in enumerate(severities)]
    assert expected_verdict(labels) == verdict


def test_request_changes_on_non_blocking_labels_is_the_wrong_verdict() -> None:
    score = score_review(review("request_changes", finding(severity="medium")), [label(severity="medium")])
    assert score.true_positives == 1 and not score.verdict_correct and not review_oracle_passed(score)


# ── scoring: matching rules ────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("finding_range", "label_range", "matched"),
    [((10, 12), (12, 14), True), ((14, 20), (12, 14), True), ((13, 13), (12, 14), True),
     ((10, 20), (12, 14), True), ((10, 11), (12, 14), False), ((15, 15), (12, 14), False)],
)  # fmt: skip
def test_line_ranges_must_overlap(
    finding_range: tuple[int, int], label_range: tuple[int, int], matched: bool
) -> None:
    f = finding(line=finding_range[0], end_line=finding_range[1])
    score = score_review(review("request_changes", f), [label(start=label_range[0], end=label_range[1])])
    assert score.true_positives == int(matched)


def test_paths_must_match_after_normalization() -> None:
    assert score_review(review("request_changes", finding(path="./a.py")), [label()]).true_positives == 1
    assert score_review(review("request_changes", finding(path="b/a.py")), [label()]).true_positives == 0


def test_category_is_case_folded_before_comparing() -> None:
    score = score_review(review("request_changes", finding(category="CORRECTNESS")), [label()])
    assert score.category_accuracy == 1.0


def test_weights_use_the_lighter_severity_of_a_match() -> None:
    # low finding on a high label: matched weight min(1, 5) = 1; plus an unmatched medium finding.
    artifact = review(
        "comment", finding("a", severity="low", blocking=False), finding("b", line=50, severity="medium")
    )
    score = score_review(artifact, [label(severity="high")])
    assert (score.true_positives, score.false_positives, score.false_negatives) == (1, 1, 0)
    assert score.weighted_precision == round(1 / (1 + 2), 6)
    assert score.weighted_recall == round(1 / 5, 6)
    assert score.weighted_f1 == round(2 * (1 / 3) * 0.2 / (1 / 3 + 0.2), 6)
    assert score.blocker_recall == 0.0  # the high label was caught only by a low finding
    assert score.severity_accuracy == 0.0
    assert score.precision == 0.5 and score.recall == 1.0


def test_values_are_rounded_to_six_decimals() -> None:
    labels = [label(f"L{i}", start=10 * (i + 1)) for i in range(3)]
    score = score_review(review("request_changes", finding(line=10)), labels)
    assert score.recall == 0.333333 and score.f1 == 0.5


def test_a_finding_overlapping_two_labels_takes_the_better_match() -> None:
    span = finding(line=10, end_line=20, category="security", severity="medium")
    by_category = [
        label("wrong-cat", start=10, severity="medium"),
        label("right-cat", start=20, category="security"),
    ]
    assert score_review(review("comment", span), by_category).matches == (("f1", "right-cat"),)
    by_severity = [label("wrong-sev", start=10, category="security", severity="low"),
                   label("right-sev", start=20, category="security", severity="medium")]  # fmt: skip
    assert score_review(review("comment", span), by_severity).matches == (("f1", "right-sev"),)
    by_distance = [label("far", start=18, category="security", severity="medium"),
                   label("near", start=11, category="security", severity="medium")]  # fmt: skip
    assert score_review(review("comment", span), by_distance).matches == (("f1", "near"),)
    by_span = [label("wide", start=12, end=19, category="security", severity="medium"),
               label("narrow", start=12, category="security", severity="medium")]  # fmt: skip
    assert score_review(review("comment", span), by_span).matches == (("f1", "narrow"),)


def test_matching_is_maximum_cardinality_not_greedy() -> None:
    # "wide" covers both labels and is the best pair for L-top (category and severity agree);
    # "narrow" only reaches L-top. A greedy pass gives wide→L-top and leaves narrow unmatched
    # (tp 1); the maximum matching re-seats wide on L-bottom (tp 2).
    wide = finding("wide", line=10, end_line=20)
    narrow = finding("narrow", line=10, category="tests", severity="low", blocking=False)
    labels = [label("L-top", start=10), label("L-bottom", start=20)]
    score = score_review(review("request_changes", wide, narrow), labels)
    assert (score.true_positives, score.false_positives, score.false_negatives) == (2, 0, 0)
    assert score.matches == (("narrow", "L-top"), ("wide", "L-bottom"))


# ── property tests (seeded random; no extra dependency) ────────────────────

_PATHS = ("a.py", "b.py")
_SEVERITIES = ("critical", "high", "medium", "low")
_CATEGORIES = ("correctness", "security", "tests")


def _random_case(rng: random.Random) -> tuple[ReviewArtifact, list[Label]]:
    # A small grid of paths and lines so overlaps, ties and contention are the common case.
    findings = []
    for i in range(rng.randint(0, 6)):
        line = rng.randint(1, 12)
        findings.append(
            finding(
                f"f{i}",
                path=rng.choice(_PATHS),
                line=line,
                end_line=line + rng.choice((0, 0, 1, 3, 6)),
                severity=rng.choice(_SEVERITIES),
                category=rng.choice(_CATEGORIES),
                blocking=True,
            )
        )
    labels = []
    for i in range(rng.randint(0, 6)):
        start = rng.randint(1, 12)
        labels.append(
            label(
                f"L{i}",
                path=rng.choice(_PATHS),
                start=start,
                end=start + rng.choice((0, 0, 2, 4)),
                severity=rng.choice(_SEVERITIES),
                category=rng.choice(_CATEGORIES),
            )
        )
    verdict = "request_changes" if findings else "approve"
    return review(verdict, *findings), labels


def _brute_force_max_matching(findings: tuple[ReviewFinding, ...], labels: list[Label]) -> int:
    """The largest number of disjoint overlapping pairs, by trying every assignment."""

    def overlaps(f: ReviewFinding, lb: Label) -> bool:
        return f.path == lb.path and f.line <= lb.line_end and f.end_line >= lb.line_start

    if len(findings) >= len(labels):
        assignments = itertools.permutations(range(len(findings)), len(labels))
        return max(
            sum(overlaps(findings[i], lb) for i, lb in zip(a, labels, strict=True)) for a in assignments
        )
    assignments = itertools.permutations(range(len(labels)), len(findings))
    return max(sum(overlaps(f, labels[j]) for f, j in zip(findings, a, strict=True)) for a in assignments)


CASES = 400
RATIO_NAMES = (
    "precision", "recall", "f1", "weighted_precision", "weighted_recall", "weighted_f1",
    "blocker_recall", "severity_accuracy", "category_accuracy",
)  # fmt: skip


def test_property_score_is_identical_under_any_permutation() -> None:
    rng = random.Random(20240917)
    for _ in range(CASES):
        artifact, labels = _random_case(rng)
        expected = score_review(artifact, labels)
        for _ in range(6):
            shuffled_findings = list(artifact.findings)
            rng.shuffle(shuffled_findings)
            shuffled_labels = list(labels)
            rng.shuffle(shuffled_labels)
            permuted = score_review(review(artifact.verdict, *shuffled_findings), shuffled_labels)
            assert permuted == expected, (artifact, labels)


def test_property_true_positives_equal_the_maximum_matching() -> None:
    rng = random.Random(7)
    for _ in range(CASES):
        artifact, labels = _random_case(rng)
        score = score_review(artifact, labels)
        assert score.true_positives == _brute_force_max_matching(artifact.findings, labels), (
            artifact,
            labels,
        )
        assert score.true_positives + score.false_positives == len(artifact.findings)
        assert score.true_positives + score.false_negatives == len(labels)
        assert score.score_finite
        for name in RATIO_NAMES:
            value = getattr(score, name)
            assert value is None or 0.0 <= value <= 1.0, (name, value)
        if labels:
            assert score.f1 is not None and score.weighted_f1 is not None


def test_match_findings_returns_a_matching() -> None:
    rng = random.Random(11)
    for _ in range(CASES):
        artifact, labels = _random_case(rng)
        pairs = match_findings(artifact.findings, labels)
        assert len({f for f, _ in pairs}) == len({lb for _, lb in pairs}) == len(pairs)


# ── rows ───────────────────────────────────────────────────────────────────

# Keep in sync with reference-harness.md §5 (review arms only: the flattened review_<metric> keys).
REFERENCE_ROW_FIELDS = (
    "review_true_positives", "review_false_positives", "review_false_negatives", "review_precision",
    "review_recall", "review_f1", "review_weighted_precision", "review_weighted_recall",
    "review_weighted_f1", "review_blocker_recall", "review_severity_accuracy", "review_category_accuracy",
    "review_verdict_correct", "review_clean_control", "review_clean_pass",
    "review_score_finite",
)  # fmt: skip


def test_to_row_names_match_the_reference_and_the_aggregator() -> None:
    score = score_review(review("request_changes", finding()), [label()])
    row = score.to_row()
    assert tuple(row) == REVIEW_ROW_FIELDS == REFERENCE_ROW_FIELDS
    assert {f"review_{name}" for name in (*REVIEW_METRICS, *REVIEW_FLAGS)} <= set(row)
    assert json.loads(json.dumps(row)) == row
    assert score.as_dict() == {key.removeprefix("review_"): value for key, value in row.items()}


def test_review_row_fields_for_valid_and_invalid_evidence() -> None:
    score = score_review(review("approve"), [])
    valid = review_row_fields(score, evidence_valid=True)
    assert valid["review_evidence_valid"] is True and valid["review_score"] == score.as_dict()
    assert valid["review_clean_pass"] is True
    invalid = review_row_fields(None, evidence_valid=False)
    assert invalid == {
        "review_score": None,
        "review_evidence_valid": False,
        **dict.fromkeys(REFERENCE_ROW_FIELDS),
    }


# ── tie-breaks among overlapping labels, and the clean pass ────────────────


def test_a_finding_pairs_with_the_overlapping_label_whose_start_is_nearest() -> None:
    # Both labels overlap the finding at lines 20-30 and agree on category and severity.
    far, near = label("far", start=10, end=40), label("near", start=18, end=40)
    for labels in ([far, near], [near, far]):
        score = score_review(review("request_changes", finding("f", line=20, end_line=30)), labels)
        assert score.matches == (("f", "near"),)


def test_at_equal_distance_the_narrower_label_wins() -> None:
    # Starts 2 lines either side of the finding; spans 8 and 2 (the narrow one ends later).
    wide, narrow = label("wide", start=18, end=26), label("narrow", start=22, end=24)
    for labels in ([wide, narrow], [narrow, wide]):
        score = score_review(review("request_changes", finding("f", line=20, end_line=30)), labels)
        assert score.matches == (("f", "narrow"),)


def test_the_better_finding_gets_a_contested_label() -> None:
    # Two findings, one label: the one whose category matches is the pair; the other is an FP.
    target = label("L", category="security")
    wrong = finding("a", category="correctness")
    right = finding("b", category="security")
    score = score_review(review("request_changes", wrong, right), [target])
    assert score.matches == (("b", "L"),) and score.category_accuracy == 1.0
    assert (score.true_positives, score.false_positives) == (1, 1)


def test_an_approve_verdict_on_a_labeled_case_is_not_a_clean_pass() -> None:
    score = score_review(review("approve"), [label()])
    assert score.clean_pass is False and score.clean_control is False and score.verdict_correct is False
    clean = score_review(review("approve"), [])
    assert clean.clean_pass is True and clean.clean_control is True
    assert score_review(review("comment"), []).clean_pass is False


def test_severity_weights_are_the_reference_weights() -> None:
    # One missed critical (8) outweighs a caught high (5) and a caught low (1).
    labels = [
        label("c", start=1, severity="critical"),
        label("h", start=5),
        label("l", start=9, severity="low"),
    ]
    score = score_review(
        review("request_changes", finding("h", line=5), finding("l", line=9, severity="low", blocking=False)),
        labels,
    )
    assert score.weighted_recall == round(6 / 14, 6) and score.recall == round(2 / 3, 6)
    assert SEVERITY_WEIGHTS == {"critical": 8, "high": 5, "medium": 2, "low": 1}
