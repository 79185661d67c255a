"""`check_report` and `_read_report` on their own: the verdict on one outcome report, reason by reason.

The component tests (test_outcome_report.py) attack the protocol in a real sandbox; these pin the
pure verdict: success needs this run's nonce, a completed run, exit 0, at least ``min_tests``
tests and every one passed; each refusal is named, and keeps the counts the report did give
(a refused report is still evidence of how many tests ran); the report is read as a regular
file only, never through a symlink, never past its cap (the cap itself is allowed).
"""

from __future__ import annotations

import json
import os

import pytest

from workflow_bench.judging.outcome_report import MAX_REPORT_BYTES, _read_report, check_report

pytestmark = pytest.mark.unit
NONCE = "ab" * 16


def _report(**overrides) -> bytes:
    base = {"nonce": NONCE, "exit_code": 0, "tests_run": 3, "tests_passed": 3, "done": True}
    return json.dumps({**base, **overrides}).encode()


def _check(data, min_tests=3, **options):
    return check_report(data, nonce=NONCE, min_tests=min_tests, **options)


def test_a_complete_passing_report_with_this_runs_nonce_passes() -> None:
    outcome = _check(_report(), output="tail")
    assert (outcome.passed, outcome.tests_run, outcome.tests_passed) == (True, 3, 3)
    assert outcome.detail == "3/3 tests passed (outcome report verified)" and outcome.output == "tail"
    assert _check(_report()).output == ""  # no output given: none invented


@pytest.mark.parametrize(
    ("report", "reason", "counts"),
    [
        (_report(exit_code=1, tests_passed=2), "the command exited 1", (3, 2)),
        (_report(tests_run=2, tests_passed=2), "2 tests ran, the task declares at least 3", (2, 2)),
        (_report(tests_passed=1), "2 of 3 tests did not pass", (3, 1)),
        (_report(done=False), "the test run did not complete (3 tests reported, exit 0)", (3, 3)),
        (_report(tests_passed=None), "the outcome report is malformed", (3, None)),
        (_report(tests_run=-1), "the outcome report is malformed", (None, 3)),
        (_report(exit_code="0"), "the outcome report is malformed", (3, 3)),
        (
            _report(nonce="cd" * 16),
            "the outcome report's nonce is not this run's (forged or stale)",
            (None, None),
        ),
        (_report(nonce=None), "the outcome report has no nonce", (None, None)),
        (b"[1, 2]", "the outcome report has no nonce", (None, None)),
        (b"{not json", "the outcome report is not JSON", (None, None)),
        (None, "no outcome report was written", (None, None)),
    ],
)
def test_every_refusal_is_named_and_keeps_the_counts_it_was_given(report, reason, counts) -> None:
    outcome = _check(report)
    assert outcome.passed is False
    assert outcome.detail == f"no proof of success: {reason}"
    assert (outcome.tests_run, outcome.tests_passed) == counts


def test_the_size_cap_is_inclusive() -> None:
    at_cap = _report().ljust(MAX_REPORT_BYTES)
    assert len(at_cap) == MAX_REPORT_BYTES and _check(at_cap).passed is True
    over = _report().ljust(MAX_REPORT_BYTES + 1)
    assert _check(over).detail == "no proof of success: the outcome report is oversized"


def test_the_report_is_read_as_a_regular_file_up_to_one_byte_past_the_cap(tmp_path) -> None:
    path = tmp_path / "outcome.json"
    path.write_bytes(b"x" * (MAX_REPORT_BYTES + 50))
    assert _read_report(path) == b"x" * (MAX_REPORT_BYTES + 1)  # enough to say "oversized"
    path.write_bytes(_report())
    assert _read_report(path) == _report()
    link = tmp_path / "link.json"
    link.symlink_to(path)
    assert _read_report(link) is None  # never through a symlink
    assert _read_report(tmp_path / "absent.json") is None
    (tmp_path / "dir.json").mkdir()
    assert _read_report(tmp_path / "dir.json") is None
    os.mkfifo(tmp_path / "fifo.json")
    assert _read_report(tmp_path / "fifo.json") is None  # opened without blocking, refused
