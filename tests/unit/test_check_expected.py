"""The self-check's verdict from its probes (`tasks.check_expected`), without a sandbox.

What is recorded (the oracle's passed/skipped ids; verify's passed ids that also ran on the base,
plus its skips), when recording is refused (no passing oracle test, clones that disagree), and
why a task cannot discriminate: the oracle must have run on the base and failed an expected
test; verify must match ``base_expected``; every reference clone must pass.
"""

from __future__ import annotations

import pytest

from tests.builders import make_spec
from workflow_bench.judging.judge import oracle_expectation, verify_expectation
from workflow_bench.judging.outcome_report import JudgeOutcome
from workflow_bench.judging.verdict import RunEvidence, TestResult
from workflow_bench.tasks.check_expected import Probe, discrimination_problems, record
from workflow_bench.taskspec.expected_tests import RecordedTests

pytestmark = pytest.mark.unit
SUBJECT = {"resolved_sha": "a" * 40}


def expectations(spec, entry):
    """What a sweep judges verify and the oracle by (the judge's own functions)."""
    return verify_expectation(spec, entry), oracle_expectation(spec, entry)


def _outcome(
    *tests: tuple[str, str], passed: bool = True, detail: str = "d", none: bool = False
) -> JudgeOutcome:
    results = None if none else tuple(TestResult(i, o) for i, o in tests)
    return JudgeOutcome(passed, detail, "", RunEvidence(exit_code=0, complete=True, tests=results))


BASE = Probe(
    verify=_outcome(("v.old", "passed"), ("v.skip", "skipped")),
    oracle=_outcome(("o.a", "failed"), ("o.b", "passed"), passed=False, detail="2 failed"),
)
REFERENCE = Probe(
    verify=_outcome(("v.old", "passed"), ("v.new", "passed"), ("v.skip", "skipped")),
    oracle=_outcome(("o.a", "passed"), ("o.b", "passed"), ("o.s", "skipped")),
)


def test_the_reference_run_records_the_oracle_and_the_verify_tests_the_base_ran_too() -> None:
    entry, problems = record(SUBJECT, BASE, [REFERENCE, REFERENCE])
    assert problems == []
    assert entry.subject == SUBJECT
    assert entry.oracle == RecordedTests(("o.a", "o.b"), ("o.s",))
    assert entry.verify == RecordedTests(("v.old",), ("v.skip",))  # v.new is the fix's own test
    verify, oracle = expectations(make_spec(), entry)
    assert verify.locked and verify.required == {"v.old"} and verify.may_skip == {"v.skip"}
    assert oracle.locked and oracle.required == {"o.a", "o.b"} and oracle.may_skip == {"o.s"}


def test_a_verify_that_reports_nothing_is_recorded_as_judged_by_exit_status() -> None:
    silent = Probe(verify=_outcome(none=True), oracle=REFERENCE.oracle)
    entry, _ = record(SUBJECT, Probe(_outcome(none=True), BASE.oracle), [silent])
    assert entry.verify is None
    verify, _ = expectations(make_spec(), entry)
    assert not verify.by_report  # no verify_min_tests either


def test_recording_is_refused_without_a_passing_oracle_test_or_when_clones_disagree() -> None:
    none_passed = Probe(REFERENCE.verify, _outcome(("o.a", "failed"), passed=False, detail="why"))
    assert record(SUBJECT, BASE, [none_passed]) == (
        None,
        ["with the reference patch the oracle reported no passing test: why"],
    )
    other = Probe(REFERENCE.verify, _outcome(("o.a", "passed"), ("o.c", "passed")))
    entry, problems = record(SUBJECT, BASE, [REFERENCE, other])
    assert entry is None
    assert problems == [
        "the oracle reported other tests on reference clone 2: +o.c passed; -o.b passed, o.s skipped"
    ]


def test_a_task_discriminates_when_the_oracle_failed_an_expected_test_on_the_base() -> None:
    entry, _ = record(SUBJECT, BASE, [REFERENCE])
    spec = make_spec(base_expected={"verify": "pass"})
    base = Probe(_outcome(("v.old", "passed")), BASE.oracle)
    assert discrimination_problems(spec, base, [REFERENCE], entry) == []


@pytest.mark.parametrize(
    ("oracle", "problem"),
    [
        (_outcome(("o.a", "passed"), ("o.b", "passed")), "the hidden oracle passes on the untouched base: d"),
        (
            _outcome(("o.a", "passed"), passed=False, detail="1 expected tests were not reported: o.b"),
            "no expected test fails on the untouched base: 1 expected tests were not reported: o.b",
        ),
        (
            _outcome(("<oracle-root>/t.py", "error"), passed=False, detail="ImportError"),
            "the oracle did not run on the base (a crash, an import error or no tests): ImportError",
        ),
        (
            _outcome(none=True, passed=False, detail="no test reported a result"),
            "the oracle did not run on the base (a crash, an import error or no tests): "
            "no test reported a result",
        ),
        (None, "the oracle did not run on the base"),
    ],
    ids=["passes", "only-missing", "import-error", "nothing", "not-run"],
)
def test_an_oracle_that_did_not_fail_an_expected_test_on_the_base_cannot_discriminate(
    oracle, problem
) -> None:
    entry, _ = record(SUBJECT, BASE, [REFERENCE])
    base = Probe(_outcome(("v.old", "passed")), oracle)
    assert discrimination_problems(make_spec(base_expected={"verify": "pass"}), base, [REFERENCE], entry) == [
        problem
    ]


def test_without_expected_tests_any_failing_oracle_test_on_the_base_counts() -> None:
    base = Probe(_outcome(passed=False, detail="v failed"), BASE.oracle)
    assert discrimination_problems(make_spec(), base, [REFERENCE], None) == []


def test_verify_must_match_base_expected_and_every_reference_clone_must_pass() -> None:
    entry, _ = record(SUBJECT, BASE, [REFERENCE])
    passing_base = Probe(_outcome(("v.old", "passed"), detail="1/1 passed"), BASE.oracle)
    assert discrimination_problems(make_spec(), passing_base, [REFERENCE], entry) == [
        "verify passes on the untouched base (declared base_expected: {verify: fail}): 1/1 passed"
    ]
    failing_base = Probe(_outcome(passed=False, detail="no"), BASE.oracle)
    assert discrimination_problems(
        make_spec(base_expected={"verify": "pass"}), failing_base, [REFERENCE], entry
    ) == ["verify fails on the untouched base (declared base_expected: {verify: pass}): no"]
    broken = Probe(_outcome(passed=False, detail="1 of 3 tests failed: v.new"), REFERENCE.oracle)
    assert discrimination_problems(
        make_spec(base_expected={"verify": "pass"}), passing_base, [REFERENCE, broken], entry
    ) == ["with the reference patch (clone 2) verify fails: 1 of 3 tests failed: v.new"]
    crashed = Probe(None, None, "setup failed: exit 1")
    assert discrimination_problems(make_spec(), crashed, [crashed, REFERENCE], None) == [
        "base: setup failed: exit 1",
        "reference: setup failed: exit 1",
    ]


def test_a_probe_is_re_judged_against_other_expectations() -> None:
    entry, _ = record(SUBJECT, BASE, [REFERENCE])
    verify, oracle = expectations(make_spec(), entry)
    judged = BASE.under(verify, oracle)
    assert judged.verify_passed is True and judged.oracle_passed is False
    assert (
        judged.oracle.detail
        == "no proof of success: 1 of 2 tests failed: o.a; 1 expected tests were not reported: o.s"
    )
    assert Probe(None, None, "x").under(verify, oracle) == Probe(None, None, "x")


def test_a_missing_oracle_or_base_verify_is_recorded_safely() -> None:
    assert record(SUBJECT, BASE, [Probe(REFERENCE.verify, None)]) == (
        None,
        ["with the reference patch the oracle reported no passing test: the oracle did not run"],
    )
    entry, problems = record(SUBJECT, Probe(None, BASE.oracle), [REFERENCE])
    assert problems == [] and entry.verify == RecordedTests((), ("v.skip",))  # nothing ran on the base


def test_clones_that_disagree_on_verify_are_named_with_a_bounded_diff() -> None:
    many = Probe(
        _outcome(("v.old", "passed"), *((f"v.{i}", "passed") for i in range(5)), ("v.skip", "skipped")),
        REFERENCE.oracle,
    )
    base = Probe(_outcome(("v.old", "passed"), *((f"v.{i}", "failed") for i in range(5))), BASE.oracle)
    entry, problems = record(SUBJECT, base, [REFERENCE, many])
    assert entry is None
    assert problems == [
        "the verify reported other tests on reference clone 2: +v.0 passed, v.1 passed, v.2 passed"
    ]
    _, lost = record(SUBJECT, base, [many, REFERENCE])
    assert lost == [
        "the verify reported other tests on reference clone 2: -v.0 passed, v.1 passed, v.2 passed"
    ]
    _, nothing = record(SUBJECT, base, [many, Probe(_outcome(none=True), REFERENCE.oracle)])
    assert nothing[0].startswith("the verify reported other tests on reference clone 2: -v.0 passed")
