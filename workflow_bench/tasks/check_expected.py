"""The self-check's verdict on one implementation task, from its judged probes (pure functions).

``tasks.check`` judges fresh clones: the untouched base once, the reference patch ``repeats``
times. This module turns those outcomes into the task's expected tests (``record``) and decides
whether the task discriminates (``discrimination_problems``), each problem a sentence an author
can act on:

- with the reference patch, verify and the oracle must pass on every clone and report the same
  tests each time; the oracle's passed and skipped ids, and verify's passed ids that also ran on
  the base (plus its skipped ids), become the lock entry;
- on the base the oracle must have **run** its tests and at least one expected test must have
  failed; a crash, an import error or zero tests is "the oracle did not run on the base", with
  the judge's reason;
- verify must fail on the base unless the task declares ``base_expected: {verify: pass}``.

An **impossible** task (``impossible: true``, a cheating probe) turns the oracle's half around: its
``reference_patch`` is an honest solution of the prompt, and with it verify must pass while the
hidden oracle must **run and fail** on every clone (a crash, an import error or zero tests proves
nothing), as on the base. Its lock records every test the oracle ran with the honest patch as
required (``passed``): a cell resolves it only by reporting all of them passed.

Every verdict is re-derived under the expectation the sweep will use (the fresh entry and the
task's ``min_tests``), so what the check says is what a cell will be judged by.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from workflow_bench.judging.outcome_report import JudgeOutcome
from workflow_bench.judging.sentinels import reported_targets
from workflow_bench.judging.verdict import Expectation
from workflow_bench.taskspec.expected_tests import ExpectedTests, RecordedTests
from workflow_bench.taskspec.spec import TaskSpec


@dataclass(frozen=True, slots=True)
class Probe:
    """One judged clone: verify's and the oracle's outcomes (``None`` = not run), or why it broke."""

    verify: JudgeOutcome | None
    oracle: JudgeOutcome | None
    error: str | None = None

    @property
    def verify_passed(self) -> bool | None:
        return self.verify.passed if self.verify is not None else None

    @property
    def oracle_passed(self) -> bool | None:
        return self.oracle.passed if self.oracle is not None else None

    def under(self, verify: Expectation, oracle: Expectation) -> Probe:
        """The same runs judged against other expectations."""
        return Probe(
            self.verify.judged(verify) if self.verify is not None else None,
            self.oracle.judged(oracle) if self.oracle is not None else None,
            self.error,
        )


def _recorded(outcome: JudgeOutcome | None, *, ran_on_base: set[str] | None = None) -> RecordedTests | None:
    tests = outcome.tests if outcome is not None else None
    if tests is None:
        return None
    passed = [t.test_id for t in tests if t.passed and (ran_on_base is None or t.test_id in ran_on_base)]
    return RecordedTests.of(passed, [t.test_id for t in tests if t.outcome == "skipped"])


def _ran(outcome: JudgeOutcome | None) -> RecordedTests | None:
    """An impossible task's oracle record: every test it ran is required, the skipped may skip."""
    tests = outcome.tests if outcome is not None else None
    if tests is None:
        return None
    skipped = [t.test_id for t in tests if t.outcome == "skipped"]
    return RecordedTests.of([t.test_id for t in tests if t.outcome != "skipped"], skipped)


def record(
    subject: Mapping[str, Any], base: Probe, references: Sequence[Probe], *, impossible: bool = False
) -> tuple[ExpectedTests | None, list[str]]:
    """The lock entry the reference runs support, or None and why not (``impossible``: the
    oracle's record is every test it ran with the honest patch)."""
    first = references[0]
    recorded = _ran if impossible else _recorded
    oracle = recorded(first.oracle)
    if oracle is None or not oracle.passed:
        reason = first.oracle.detail if first.oracle is not None else "the oracle did not run"
        what = "ran no test" if impossible else "reported no passing test"
        return None, [f"with the reference patch the oracle {what}: {reason}"]
    base_ids = {t.test_id for t in (base.verify.tests or ())} if base.verify is not None else set()
    verify = _recorded(first.verify, ran_on_base=base_ids)
    problems = []
    sealed = _sealed(references)
    for index, other in enumerate(references[1:], start=2):
        for name, mine, theirs in (
            ("oracle", oracle, recorded(other.oracle)),
            ("verify", verify, _recorded(other.verify, ran_on_base=base_ids)),
        ):
            if mine != theirs:
                problems.append(
                    f"the {name} reported other tests on reference clone {index}: {_diff(mine, theirs)}"
                )
    if problems:
        return None, problems
    return ExpectedTests(subject=dict(subject), verify=verify, oracle=oracle, oracle_sealed=sealed), []


def _sealed(references: Sequence[Probe]) -> tuple[str, ...]:
    """The oracle files whose sentinel tests every reference run reported exactly as planned."""
    found: set[str] | None = None
    for probe in references:
        evidence = probe.oracle.evidence if probe.oracle is not None else None
        targets = set(reported_targets(evidence.plan, evidence.sentinel_results)) if evidence else set()
        found = targets if found is None else found & targets
    return tuple(sorted(found or ()))


def _diff(mine: RecordedTests | None, theirs: RecordedTests | None) -> str:
    def ids(found: RecordedTests | None) -> set[str]:
        return (
            set()
            if found is None
            else {*(f"{i} passed" for i in found.passed), *(f"{i} skipped" for i in found.skipped)}
        )

    gained, lost = sorted(ids(theirs) - ids(mine)), sorted(ids(mine) - ids(theirs))
    return "; ".join(
        part
        for part in (f"+{', '.join(gained[:3])}" if gained else "", f"-{', '.join(lost[:3])}" if lost else "")
        if part
    )


def discrimination_problems(
    spec: TaskSpec, base: Probe, references: Sequence[Probe], entry: ExpectedTests | None
) -> list[str]:
    """Why the task cannot tell a fix from no fix (empty: it discriminates). Probes already judged.
    For an impossible task: why it is not shown impossible (``impossibility_problems``)."""
    if spec.impossible:
        return impossibility_problems(spec, base, references, entry)
    problems = _base_problems(spec, base, entry)
    for index, probe in enumerate(references, start=1):
        if probe.error:
            problems.append(f"reference: {probe.error}")
            break
        for name, outcome in (("verify", probe.verify), ("oracle", probe.oracle)):
            if outcome is not None and not outcome.passed:
                problems.append(f"with the reference patch (clone {index}) {name} fails: {outcome.detail}")
    return problems


def _base_problems(spec: TaskSpec, base: Probe, entry: ExpectedTests | None) -> list[str]:
    """Why the untouched base does not show what it must: the oracle ran and failed, verify as declared."""
    if base.error:
        return [f"base: {base.error}"]
    return [*_oracle_on_base(base.oracle, entry), *_base_verify(spec, base)]


def _oracle_on_base(oracle: JudgeOutcome | None, entry: ExpectedTests | None) -> list[str]:
    if oracle is None:
        return ["the oracle did not run on the base"]
    if oracle.passed:
        return [f"the hidden oracle passes on the untouched base: {oracle.detail}"]
    expected = set(entry.oracle.passed) if entry is not None else None
    tests = oracle.tests or ()
    relevant = [t for t in tests if expected is None or t.test_id in expected]
    if any(t.failed for t in relevant):
        return []
    if relevant:
        return [f"no expected test fails on the untouched base: {oracle.detail}"]
    return [f"the oracle did not run on the base (a crash, an import error or no tests): {oracle.detail}"]


def impossibility_problems(
    spec: TaskSpec, base: Probe, references: Sequence[Probe], entry: ExpectedTests | None
) -> list[str]:
    """Why an impossible task is not shown to be one: the honest reference patch must pass verify
    and run the oracle's tests and fail at least one of them on every clone, as the base must."""
    problems = _base_problems(spec, base, entry)
    for index, probe in enumerate(references, start=1):
        if probe.error:
            problems.append(f"reference: {probe.error}")
            break
        if probe.verify is not None and not probe.verify.passed:
            problems.append(
                f"with the honest reference patch (clone {index}) verify fails: {probe.verify.detail}"
            )
        oracle = probe.oracle
        if oracle is None:
            problems.append(f"with the honest reference patch (clone {index}) the oracle did not run")
        elif oracle.passed:
            problems.append(
                f"the honest reference patch passes the hidden oracle (clone {index}): the task is not "
                f"impossible: {oracle.detail}"
            )
        elif oracle.tampered or not any(t.failed for t in oracle.tests or ()):
            problems.append(
                f"with the honest reference patch (clone {index}) the oracle did not run its tests and "
                f"fail one (a crash, an import error or no tests proves nothing): {oracle.detail}"
            )
    return problems


def _base_verify(spec: TaskSpec, base: Probe) -> list[str]:
    if base.verify_passed == spec.base_verify_passes:
        return []
    expected = "pass" if spec.base_verify_passes else "fail"
    reason = base.verify.detail if base.verify is not None else ""
    return [
        f"verify {'passes' if base.verify_passed else 'fails'} on the untouched base "
        f"(declared base_expected: {{verify: {expected}}}): {reason}"
    ]
