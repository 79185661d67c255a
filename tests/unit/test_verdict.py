"""The one verdict (`judging.verdict`): every rule, its wording, the order of reasons, and ids.

Negative controls: each rule that refuses is shown refusing with the test named; each relaxation
(a skip the reference run shared, an extra passing test) is shown not to relax anything else.
"""

from __future__ import annotations

import pytest

from workflow_bench.judging.verdict import (
    NO_RESULTS_HINT,
    Expectation,
    RunEvidence,
    TestResult,
    for_task,
    merge_results,
    normalize_id,
    summary,
    verdict,
)

pytestmark = pytest.mark.unit


def _run(
    *tests: tuple[str, str], exit_code: int = 0, complete: bool = True, none: bool = False
) -> RunEvidence:
    results = None if none else tuple(TestResult(i, o, "why" if o != "passed" else None) for i, o in tests)
    return RunEvidence(exit_code=exit_code, complete=complete, tests=results, sources=("junit",))


LOCK = for_task(min_tests=None, expected=(("a", "b"), ("s",)), report_required=True)
COUNT = for_task(min_tests=2, expected=None, report_required=True)


def test_a_failing_run_names_the_failed_tests_before_the_exit_status() -> None:
    found = verdict(_run(("a", "failed"), ("b", "error"), exit_code=1), COUNT)
    assert found == type(found)(False, "no proof of success: 2 of 2 tests failed: a, b; the command exited 1")


def test_the_lock_passes_with_its_shared_skip_and_names_the_rest() -> None:
    assert verdict(_run(("a", "passed"), ("b", "passed"), ("s", "skipped")), LOCK).passed
    found = verdict(_run(("a", "passed"), ("b", "passed"), ("s", "skipped")), LOCK)
    assert found.detail == "2/3 tests passed, 1 skipped as with the reference patch (expected tests verified)"
    assert verdict(_run(("a", "passed"), ("b", "passed"), ("s", "passed")), LOCK).passed  # may skip, may pass
    assert verdict(_run(("a", "passed"), ("b", "passed"), ("s", "passed"), ("new", "passed")), LOCK).passed


@pytest.mark.parametrize(
    ("tests", "reason"),
    [
        ((("a", "passed"), ("s", "skipped")), "1 expected tests were not reported: b"),
        ((("a", "passed"), ("b", "passed")), "1 expected tests were not reported: s"),
        (
            (("a", "passed"), ("b", "skipped"), ("s", "skipped")),
            "1 expected tests were skipped (they passed with the reference patch): b",
        ),
        (
            (("a", "passed"), ("b", "passed"), ("s", "skipped"), ("mine", "skipped")),
            "1 tests the reference run did not report were skipped: mine",
        ),
        ((("a", "passed"), ("b", "failed"), ("s", "skipped")), "1 of 3 tests failed: b"),
    ],
    ids=["missing-expected", "missing-may-skip", "skipped-expected", "new-skip", "failed"],
)
def test_the_lock_refuses_and_names_the_test(tests, reason) -> None:
    found = verdict(_run(*tests), LOCK)
    assert not found.passed and found.detail == f"no proof of success: {reason}"


def test_without_a_lock_a_skip_is_not_a_pass_and_counts_are_a_floor() -> None:
    found = verdict(_run(("a", "passed"), ("s", "skipped")), COUNT)
    assert found.detail == (
        "no proof of success: 1 of 2 tests were skipped (without expected tests recorded by "
        "`tasks check`, a skip counts as not passed): s"
    )
    assert verdict(_run(("a", "passed")), COUNT).detail == (
        "no proof of success: 1 tests ran, the task declares at least 2"
    )
    assert verdict(_run(("a", "passed"), ("b", "passed")), COUNT).detail == (
        "2/2 tests passed (outcome report verified)"
    )
    # Declared min_tests stays a floor under a lock too.
    floored = for_task(min_tests=4, expected=(("a", "b"), ()), report_required=True)
    assert "2 tests ran, the task declares at least 4" in verify_detail(floored)


def verify_detail(expectation: Expectation) -> str:
    return verdict(_run(("a", "passed"), ("b", "passed")), expectation).detail


def test_nothing_reported_says_what_to_do() -> None:
    found = verdict(_run(none=True, exit_code=1, complete=False), COUNT)
    assert (
        found.detail
        == f"no proof of success: no test reported a result (the command exited 1): {NO_RESULTS_HINT}"
    )
    for words in ("$WORKFLOW_BENCH_JUNIT", "$WORKFLOW_BENCH_RESULT_PIPE", "fd 9", "npx", "'Outcome reports'"):
        assert words in found.detail
    assert verdict(_run(), COUNT).detail == (
        "no proof of success: the run reported 0 tests; 0 tests ran, the task declares at least 2"
    )


def test_an_incomplete_run_and_a_bad_exit_refuse_even_when_every_test_passed() -> None:
    assert verdict(_run(("a", "passed"), ("b", "passed"), complete=False), COUNT).detail == (
        "no proof of success: the test run did not complete (2 tests reported)"
    )
    assert verdict(_run(("a", "passed"), ("b", "passed"), exit_code=2), LOCK).detail == (
        "no proof of success: 1 expected tests were not reported: s; the command exited 2"
    )


def test_exit_status_mode_is_the_exit_status_with_the_counts_recorded() -> None:
    plain = for_task(min_tests=None, expected=None, report_required=False)
    assert plain == Expectation(by_report=False)
    assert verdict(_run(none=True), plain).detail == "exit status 0 (no outcome report declared)"
    failed = verdict(_run(("a", "failed"), exit_code=1), plain)
    assert failed == type(failed)(
        False, "exit status 1 (no outcome report declared); 1 run, 0 passed, 0 skipped, 1 failed"
    )
    # A refused report is never read as an exit status.
    assert not verdict(RunEvidence(problem="forged"), plain).passed


def test_a_report_that_is_no_evidence_refuses_first() -> None:
    assert verdict(RunEvidence(problem="the outcome report is oversized"), LOCK).detail == (
        "no proof of success: the outcome report is oversized"
    )


def test_merging_keeps_the_worst_outcome_and_the_first_message() -> None:
    merged = merge_results(
        [
            ("a", "failed", "first"),
            ("a", "passed", None),
            ("b", "skipped", "r"),
            ("b", "error", None),
            ("c", "bogus", None),
        ]
    )
    assert merged == (TestResult("a", "failed", "first"), TestResult("b", "error", "r"))


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        ("/.wfbench-oracle-0123456789abcdef/a.test.ts > x", "<oracle-root>/a.test.ts > x"),
        ("../../.wfbench-oracle-0123456789abcdef/a.py::t", "<oracle-root>/a.py::t"),
        ("...wfbench-oracle-0123456789abcdef.a::t", "<oracle-root>.a::t"),
        ("/.wfbench-judge-0123456789abcdef/unittest_shim.py", "<judge-kit>/unittest_shim.py"),
        ("tests/a.py::t[  two   spaces ]", "tests/a.py::t[ two spaces ]"),
        ("wfbench-oracle-short/a", "wfbench-oracle-short/a"),  # not a harness token: kept
        ("x" * 2000, "x" * 1000),
    ],
)
def test_ids_are_normalized(raw, normalized) -> None:
    assert normalize_id(raw) == normalized


def test_counts_and_the_summary_of_a_run() -> None:
    run = _run(("a", "passed"), ("b", "skipped"), ("c", "failed"), ("d", "error"), ("e", "passed"))
    assert (run.tests_run, run.tests_passed, run.tests_skipped) == (5, 2, 1)
    assert [t.test_id for t in run.failing] == ["c", "d"]
    assert [t.passed for t in run.tests] == [True, False, False, False, True]
    assert summary(run) == "5 run, 2 passed, 1 skipped, 2 failed"
    assert summary(_run(none=True)) == "no tests reported"
    assert (_run(none=True).tests_run, _run(none=True).tests_passed, _run(none=True).tests_skipped) == (
        None,
    ) * 3
    assert summary(RunEvidence(problem="x", tests=(TestResult("a", "passed"),))) == "no valid report"
    assert RunEvidence().complete is False and RunEvidence().tests is None


def test_a_refusal_is_false_never_unknown_and_long_lists_are_cut() -> None:
    assert verdict(RunEvidence(problem="x"), LOCK).passed is False
    many = _run(*((f"t{i}", "failed") for i in range(7)), exit_code=1)
    assert verdict(many, COUNT).detail == (
        "no proof of success: 7 of 7 tests failed: t0, t1, t2, t3, t4 and 2 more; the command exited 1"
    )
    exactly = _run(*((f"t{i}", "failed") for i in range(5)), exit_code=1)
    assert "t0, t1, t2, t3, t4; the command" in verdict(exactly, COUNT).detail


def test_a_tie_keeps_the_first_outcome_and_an_unknown_outcome_is_skipped_not_the_end() -> None:
    assert merge_results([("a", "bogus", None), ("a", "failed", "first"), ("a", "error", "second")]) == (
        TestResult("a", "failed", "first"),
    )


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        ("/.wfbench-out-0123456789abcdef/x", "<report-dir>/x"),
        ("/.wfbench-junit-0123456789abcdef/junit.xml", "<junit-dir>/junit.xml"),
    ],
)
def test_every_harness_path_has_its_placeholder(raw, normalized) -> None:
    assert normalize_id(raw) == normalized
