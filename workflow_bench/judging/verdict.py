"""The one verdict on a judged run, whatever format its tests reported in (pure functions).

``RunEvidence`` is what a verify or oracle run proved once the nonce-bound report was checked
(``judging.outcome_report``): the child's exit code, whether the run completed, and each test's
outcome, merged from the result lines and every attested JUnit file. ``Expectation`` is what the
task asks of it (``for_task`` builds it from ``min_tests`` and the expected-tests lock).
``verdict`` applies one to the other and names every reason for refusal, the most informative
first: which tests failed, which expected tests are missing or were skipped, then counts, then the
exit status ("2 of 2 tests failed: a, b; the command exited 1", never just "exited 1").

Test ids are normalized before anything compares them (``normalize_id``): a per-run harness path
(the staged oracle's ``/.wfbench-oracle-<hex>`` as an absolute, relative or dotted module path)
becomes a fixed placeholder, and whitespace runs become one space.

A run where nothing reported any test has ``tests=None``: its counts are unknown, never 0.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from workflow_bench.judging.sentinels import SentinelPlan, check, matches

_RANK = {"passed": 0, "skipped": 1, "failed": 2, "error": 2}  # keep in sync with kit/judge_runner.py
MAX_ID_CHARS = 1000  # keep in sync with kit/judge_runner.py
SHOWN_IDS = 5  # ids named in one reason; the row keeps the full bounded list
# The random harness paths a test id can carry (keep in sync with outcome_report and judge;
# tests/unit/test_no_drift.py checks each staging name is matched): any
# run of "." and "/" before them too, so "../.wfbench-oracle-x/a.py", "/.wfbench-oracle-x/a.py"
# and pytest's dotted "...wfbench-oracle-x.a" all become "<oracle-root>/a.py" / "<oracle-root>.a".
_HARNESS_PATH = re.compile(r"[./]*\.?wfbench-(oracle|judge|out|junit)-[0-9a-f]{16}")
_PLACEHOLDER = {
    "oracle": "<oracle-root>",
    "judge": "<judge-kit>",
    "out": "<report-dir>",
    "junit": "<junit-dir>",
}
NO_RESULTS_HINT = (
    "write JUnit XML to $WORKFLOW_BENCH_JUNIT, or result lines to $WORKFLOW_BENCH_RESULT_PIPE "
    "(fd 9 is the same pipe, but wrappers such as npx, npm test and make close it), or run the "
    "tests through a bundled adapter; README, 'Outcome reports'"
)


def normalize_id(test_id: str) -> str:
    """A test id as compared and stored: harness paths replaced, whitespace collapsed, bounded."""
    text = _HARNESS_PATH.sub(lambda m: _PLACEHOLDER[m.group(1)], test_id)
    return " ".join(text.split())[:MAX_ID_CHARS]


@dataclass(frozen=True, slots=True)
class TestResult:
    """One test's outcome; ``message`` says why it did not pass (it may quote test source)."""

    __test__ = False  # not a pytest test class

    test_id: str
    outcome: str
    message: str | None = None

    @property
    def passed(self) -> bool:
        return self.outcome == "passed"

    @property
    def failed(self) -> bool:
        return self.outcome in ("failed", "error")


def merge_results(reported: Iterable[tuple[str, str, str | None]]) -> tuple[TestResult, ...]:
    """One result per normalized id, worst outcome kept (a late "passed" never undoes a failure)."""
    merged: dict[str, TestResult] = {}
    for raw_id, outcome, message in reported:
        if outcome not in _RANK:
            continue
        test_id = normalize_id(raw_id)
        seen = merged.get(test_id)
        if seen is None or _RANK[outcome] > _RANK[seen.outcome]:
            merged[test_id] = TestResult(test_id, outcome, message or (seen.message if seen else None))
    return tuple(merged.values())


@dataclass(frozen=True, slots=True)
class RunEvidence:
    """What one verify/oracle run proved; ``problem`` set means the report itself is no evidence."""

    problem: str | None = None
    exit_code: int | None = None
    complete: bool = False
    """A ``{"done": true}`` line arrived or a JUnit report was parsed: the framework finished."""
    timed_out: bool = False
    tests: tuple[TestResult, ...] | None = None
    """None: nothing reported any test (unknown); () a report of zero tests."""
    sources: tuple[str, ...] = ()
    """Which formats reported: ``"lines"``, ``"junit"``."""
    plan: SentinelPlan = field(default_factory=SentinelPlan)
    """The sentinel tests the harness added to this run (``judging.sentinels``)."""
    sentinel_results: tuple[TestResult, ...] = ()
    """What was reported for them; never part of ``tests`` (counts and rows leave them out)."""
    decoy_bytes: int = 0
    """Bytes written to the result channel after the kit's adapter claimed it (its decoy,
    ``kit/judge_runner.py``): code under test impersonating a reporter."""
    tampered: tuple[str, ...] = ()
    """What the kit's adapter found changed in the test framework it runs (``tampered`` lines:
    ``kit/wfbench_framework_guard.py``), e.g. ``unittest.case.TestCase.run replaced``."""

    def count(self, outcome: str) -> int | None:
        return None if self.tests is None else sum(1 for t in self.tests if t.outcome == outcome)

    @property
    def tests_run(self) -> int | None:
        return None if self.tests is None else len(self.tests)

    @property
    def tests_skipped(self) -> int | None:
        return self.count("skipped")

    @property
    def tests_passed(self) -> int | None:
        return self.count("passed")

    @property
    def failing(self) -> tuple[TestResult, ...]:
        return tuple(t for t in self.tests or () if t.failed)


@dataclass(frozen=True, slots=True)
class Expectation:
    """What a task asks of one run.

    - ``by_report=False``: the exit status decides (a verify without ``verify_min_tests`` and
      without expected tests: README says so); reported tests are still recorded.
    - no lock (``locked=False``): at least ``min_tests`` distinct tests, every one passed (a skip
      counts as not passed: today's rule for tasks without expected tests).
    - ``locked``: every ``required`` test reported and passed; a ``may_skip`` test (skipped with
      the reference patch too) reported passed or skipped; any other skip, a missing expected
      test or any failure refuses, naming the tests; ``min_tests``, when declared, is a floor.
    """

    by_report: bool = True
    min_tests: int | None = None
    locked: bool = False
    required: frozenset[str] = field(default_factory=frozenset)
    may_skip: frozenset[str] = field(default_factory=frozenset)
    sealed: frozenset[str] | None = None
    """The oracle files whose sentinel tests must be reported (the lock's ``oracle_sealed``: the
    files whose sentinels the reference runs reported); None: every file that carries them."""


def for_task(
    *,
    min_tests: int | None,
    expected: tuple[Sequence[str], Sequence[str]] | None,
    report_required: bool,
    sealed: Sequence[str] | None = None,
) -> Expectation:
    """The expectation of one command: ``expected`` is the lock's (passed ids, skipped ids) or None;
    ``report_required`` is False only for a verify that declares nothing (exit status decides);
    ``sealed`` the lock's sealed oracle files (None without a lock: every sentinel is required)."""
    seal = frozenset(sealed) if sealed is not None else None
    if expected is not None:
        passed, skipped = expected
        return Expectation(
            min_tests=min_tests,
            locked=True,
            required=frozenset(passed),
            may_skip=frozenset(skipped),
            sealed=seal,
        )
    if not report_required and min_tests is None:
        return Expectation(by_report=False, sealed=seal)
    return Expectation(min_tests=min_tests or 1, sealed=seal)


@dataclass(frozen=True, slots=True)
class Verdict:
    passed: bool
    detail: str
    tampered: bool = False
    """The report shows forgery (a sentinel reported wrongly, or missing from a run that otherwise
    proves success; a forced exit status): ``evidence-tampered``, charged to the arm."""
    sealed: bool | None = None
    """Every required sentinel was reported as planned (None: the run carried no sentinels)."""


def verdict(evidence: RunEvidence, expectation: Expectation) -> Verdict:
    """Whether ``evidence`` meets ``expectation``; ``detail`` names every reason (see module doc)."""
    if evidence.problem is not None:
        return Verdict(False, f"no proof of success: {evidence.problem}")
    if evidence.decoy_bytes:
        return Verdict(
            False,
            f"tampered: {evidence.decoy_bytes} bytes were written to the result channel after the kit's "
            "adapter had claimed it (code under test writing result lines; README, 'Sealed outcomes')",
            tampered=True,
            sealed=False,
        )
    if evidence.tampered:
        return Verdict(
            False,
            "tampered: the test framework was changed while the tests ran: "
            f"{'; '.join(evidence.tampered)[:600]} "
            "(code under test patching the framework that reports on it; README, 'Sealed outcomes')",
            tampered=True,
            sealed=False,
        )
    code = evidence.exit_code
    forged, sealed, fails_as_planned = _sentinel_problems(evidence, expectation)
    if not expectation.by_report and not forged:
        counts = f"; {_counts(evidence)}" if evidence.tests is not None else ""
        return Verdict(code == 0, f"exit status {code} (no outcome report declared){counts}")
    problems = _problems(evidence, expectation, sentinel_failed=fails_as_planned)
    missing = _missing_sentinels(evidence, expectation)
    if missing and not problems:
        # Everything else proves success, yet the harness's own tests in the same files are gone:
        # the report did not come from running those files (a forged stream, an early exit).
        forged.append(missing)
    elif missing:
        problems.append(missing)
    if forged:
        return Verdict(False, "tampered: " + "; ".join([*forged, *problems]), tampered=True, sealed=False)
    if problems:
        return Verdict(False, "no proof of success: " + "; ".join(problems), sealed=sealed)
    tests = evidence.tests or ()
    skipped = sum(1 for t in tests if t.outcome == "skipped")
    passed = len(tests) - skipped
    how = "expected tests verified" if expectation.locked else "outcome report verified"
    extra = f", {skipped} skipped as with the reference patch" if skipped else ""
    seal = f"; {len(evidence.plan.sentinels)} sentinel tests as planned" if sealed else ""
    return Verdict(True, f"{passed}/{len(tests)} tests passed{extra} ({how}{seal})", sealed=sealed)


def _sentinel_problems(
    evidence: RunEvidence, expectation: Expectation
) -> tuple[list[str], bool | None, bool]:
    """(forgery found, whether the run is sealed, whether a must-fail sentinel failed as planned)."""
    plan = evidence.plan
    if not plan.sentinels:
        return [], None, False
    finding = check(plan, evidence.sentinel_results, required=expectation.sealed)
    forged = [
        f"the harness's sentinel test {s.token} (in {s.target}) must be reported {s.must}, "
        f"was reported {reported}"
        for s, reported in finding.wrong
    ]
    failed = any(
        s.must == "failed" and any(matches(s, t.test_id) and t.failed for t in evidence.sentinel_results)
        for s in plan.sentinels
    )
    if failed and evidence.exit_code == 0 and evidence.complete:
        forged.append("the command exited 0 although a test it ran failed (its exit status was forced)")
    sealed = bool(finding.verified) and not finding.wrong and not finding.missing
    return forged, sealed, failed


def _missing_sentinels(evidence: RunEvidence, expectation: Expectation) -> str | None:
    finding = check(evidence.plan, evidence.sentinel_results, required=expectation.sealed)
    if not finding.missing:
        return None
    files = sorted({s.target for s in finding.missing})
    return (
        f"{len(finding.missing)} of the harness's sentinel tests in {', '.join(files)} were not reported "
        "(if the oracle command cannot run them, e.g. it filters tests by name, record that with "
        "`tasks check`; README, 'Sealed outcomes')"
    )


def _problems(evidence: RunEvidence, expectation: Expectation, *, sentinel_failed: bool = False) -> list[str]:
    """Every reason the run does not prove success, most informative first. ``sentinel_failed``: a
    must-fail sentinel failed as planned, so the framework's non-zero exit status is expected."""
    tests, code = evidence.tests, evidence.exit_code
    problems = []
    if tests is None:
        problems.append(f"no test reported a result (the command exited {code}): {NO_RESULTS_HINT}")
        return problems
    reported = {t.test_id: t for t in tests}
    failing = [t for t in tests if t.failed]
    if failing:
        problems.append(f"{len(failing)} of {len(tests)} tests failed: {_names(failing)}")
    if expectation.locked:
        expected = expectation.required | expectation.may_skip
        missing = sorted(expected - reported.keys())
        if missing:
            problems.append(f"{len(missing)} expected tests were not reported: {_names(missing)}")
        skipped = [t for t in tests if t.outcome == "skipped" and t.test_id not in expectation.may_skip]
        required = [t for t in skipped if t.test_id in expectation.required]
        if required:
            problems.append(
                f"{len(required)} expected tests were skipped (they passed with the reference patch): "
                f"{_names(required)}"
            )
        if len(skipped) > len(required):
            new = [t for t in skipped if t.test_id not in expectation.required]
            problems.append(f"{len(new)} tests the reference run did not report were skipped: {_names(new)}")
    else:
        skipped = [t for t in tests if t.outcome == "skipped"]
        if skipped:
            problems.append(
                f"{len(skipped)} of {len(tests)} tests were skipped (without expected tests recorded "
                f"by `tasks check`, a skip counts as not passed): {_names(skipped)}"
            )
    if not tests:
        problems.append("the run reported 0 tests")
    if not evidence.complete and not evidence.timed_out:
        problems.append(f"the test run did not complete ({len(tests)} tests reported)")
    floor = expectation.min_tests
    if floor is not None and len(tests) < floor:
        problems.append(f"{len(tests)} tests ran, the task declares at least {floor}")
    if code != 0 and not sentinel_failed:
        problems.append(f"the command exited {code}")
    return problems


def _names(items: Sequence[TestResult] | Sequence[str]) -> str:
    ids = [item.test_id if isinstance(item, TestResult) else item for item in items]
    shown = ", ".join(ids[:SHOWN_IDS])
    return shown + (f" and {len(ids) - SHOWN_IDS} more" if len(ids) > SHOWN_IDS else "")


def _counts(evidence: RunEvidence) -> str:
    return (
        f"{evidence.tests_run} run, {evidence.tests_passed} passed, {evidence.tests_skipped} skipped, "
        f"{len(evidence.failing)} failed"
    )


def summary(evidence: RunEvidence) -> str:
    """``"6 run, 5 passed, 1 skipped, 0 failed"``, or why there are no counts."""
    if evidence.problem is not None:
        return "no valid report"
    if evidence.tests is None:
        return "no tests reported"
    return _counts(evidence)
