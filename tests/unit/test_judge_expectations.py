"""What a sweep asks of verify and of the hidden oracle (`judging.judge`'s expectations).

Pinned, for each command: a lock entry decides by its ids (the declared count stays a floor);
without one, the declared count decides; with neither, verify falls back to its exit status while
the oracle still needs a report of at least one passing test. Only the oracle is sealed: with a
lock, by the files the lock records; without one, every sentinel counts (None). Each case is the
negative control of the others (a swapped source, a lost floor or a dropped id changes it).
"""

from __future__ import annotations

import pytest

from tests.builders import make_spec
from workflow_bench.judging.judge import oracle_expectation, verify_expectation
from workflow_bench.judging.verdict import Expectation
from workflow_bench.taskspec.expected_tests import ExpectedTests, RecordedTests
from workflow_bench.taskspec.oracle_spec import OracleFileSpec, OracleSpec

pytestmark = pytest.mark.unit
ORACLE_FILES = (OracleFileSpec(source="o.py", target="o.py"),)


def _spec(*, verify_min_tests=None, oracle_min_tests=None):
    oracle = OracleSpec(command="c", files=ORACLE_FILES, min_tests=oracle_min_tests)
    return make_spec(verify_min_tests=verify_min_tests, oracle=oracle)


def _entry(*, verify: RecordedTests | None) -> ExpectedTests:
    return ExpectedTests(
        subject={},
        verify=verify,
        oracle=RecordedTests.of(["o.a", "o.b"], ["o.s"]),
        oracle_sealed=("o_test.py",),
    )


def test_with_nothing_declared_verify_reads_its_exit_status_and_the_oracle_needs_one_test() -> None:
    spec = _spec()
    assert verify_expectation(spec, None) == Expectation(by_report=False)
    assert oracle_expectation(spec, None) == Expectation(min_tests=1)


def test_without_a_lock_each_command_needs_its_own_declared_count() -> None:
    spec = _spec(verify_min_tests=3, oracle_min_tests=2)
    assert verify_expectation(spec, None) == Expectation(min_tests=3)
    assert oracle_expectation(spec, None) == Expectation(min_tests=2)


def test_a_lock_entry_decides_by_its_ids_and_the_declared_counts_stay_floors() -> None:
    spec = _spec(verify_min_tests=3, oracle_min_tests=2)
    entry = _entry(verify=RecordedTests.of(["v.a"], ["v.s"]))
    assert verify_expectation(spec, entry) == Expectation(
        min_tests=3, locked=True, required=frozenset({"v.a"}), may_skip=frozenset({"v.s"})
    )
    assert oracle_expectation(spec, entry) == Expectation(
        min_tests=2,
        locked=True,
        required=frozenset({"o.a", "o.b"}),
        may_skip=frozenset({"o.s"}),
        sealed=frozenset({"o_test.py"}),  # the lock's sealed files: their sentinels must report
    )
    undeclared = _spec()
    assert oracle_expectation(undeclared, entry).min_tests is None  # the ids decide, no floor


def test_a_lock_whose_verify_reported_nothing_leaves_verify_to_its_own_declaration() -> None:
    entry = _entry(verify=None)
    assert verify_expectation(_spec(), entry) == Expectation(by_report=False)
    assert verify_expectation(_spec(verify_min_tests=2), entry) == Expectation(min_tests=2)
    assert oracle_expectation(_spec(), entry).locked is True  # the oracle's ids still decide
