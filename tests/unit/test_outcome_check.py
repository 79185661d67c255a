"""`read_evidence` and `_read_bounded` on their own: what one outcome report proves, reason by reason.

The component tests (test_outcome_report.py, test_judge_runner.py, test_frameworks.py) attack the
protocol in a real sandbox; these pin the pure reading: a report counts only with this run's
nonce and a well-formed body; JUnit files count only as attested (size and sha256), and are parsed
only then; result lines and JUnit cases merge by normalized id, worst outcome kept; a run where
nothing reported any test has unknown counts (None), never 0. The report and every JUnit file are
read as regular files only, never through a symlink, never past their cap.
"""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from workflow_bench.judging.outcome_report import MAX_REPORT_BYTES, JudgeOutcome, _read_bounded, read_evidence
from workflow_bench.judging.verdict import Expectation, RunEvidence, TestResult, verdict

pytestmark = pytest.mark.unit
NONCE = "ab" * 16
JUNIT = b"""<?xml version="1.0"?>
<testsuites><testsuite name="t.py"><testcase classname="t.py" name="a"/>
<testcase classname="t.py" name="b"><failure message="boom">trace</failure></testcase>
</testsuite></testsuites>
"""


def _report(**overrides) -> bytes:
    base = {
        "nonce": NONCE,
        "exit_code": 0,
        "tests": {"x.test_a": ["passed", None]},
        "done": True,
        "timed_out": False,
        "junit": [],
        "junit_refused": None,
        "decoy_bytes": 0,
    }
    return json.dumps({**base, **overrides}).encode()


def _attest(tmp_path, name="junit.xml", data=JUNIT) -> dict:
    (tmp_path / name).write_bytes(data)
    return {"name": name, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def test_a_report_with_this_runs_nonce_is_evidence(tmp_path) -> None:
    evidence = read_evidence(_report(), nonce=NONCE, junit_dir=tmp_path)
    assert evidence.problem is None and evidence.exit_code == 0 and evidence.complete
    assert evidence.tests == (TestResult("x.test_a", "passed"),) and evidence.sources == ("lines",)


@pytest.mark.parametrize(
    ("report", "problem"),
    [
        (None, "the judge runner wrote no outcome report (killed, or it could not run)"),
        (b"{not json", "the outcome report is not JSON"),
        (b"[1, 2]", "the outcome report has no nonce"),
        (_report(nonce=None), "the outcome report has no nonce"),
        (_report(nonce="cd" * 16), "the outcome report's nonce is not this run's (forged or stale)"),
        (_report(exit_code="0"), "the outcome report is malformed"),
        (_report(tests=[["a", "passed"]]), "the outcome report is malformed"),
        (_report(tests={"a": ["passed"]}), "the outcome report is malformed"),
        (_report(tests={"a": [1, None]}), "the outcome report is malformed"),
        (_report(done="yes"), "the outcome report is malformed"),
        (_report(junit={}), "the outcome report is malformed"),
        (_report(junit=[{"name": "a.xml"}]), "the outcome report is malformed"),
        (_report(junit_refused=3), "the outcome report is malformed"),
        (
            _report(junit_refused="junit.xml is a symbolic link"),
            "the JUnit report was refused: junit.xml is a symbolic link",
        ),
        (
            _report(junit=[{"name": "../x.xml", "size": 1, "sha256": "0" * 64}]),
            "the outcome report names an impossible JUnit file '../x.xml'",
        ),
    ],
)
def test_every_refusal_is_named_and_carries_no_counts(report, problem, tmp_path) -> None:
    evidence = read_evidence(report, nonce=NONCE, junit_dir=tmp_path)
    assert evidence.problem == problem
    assert evidence.tests is None and evidence.tests_run is None  # no evidence: unknown, never 0


def test_junit_counts_only_as_attested_and_merges_with_the_lines(tmp_path) -> None:
    entry = _attest(tmp_path)
    evidence = read_evidence(
        _report(tests={"t.py::a": ["skipped", "later"]}, junit=[entry], done=False),
        nonce=NONCE,
        junit_dir=tmp_path,
    )
    assert evidence.problem is None and evidence.complete  # a parsed JUnit report is a completed run
    assert evidence.sources == ("lines", "junit")
    assert evidence.tests == (
        TestResult("t.py::a", "skipped", "later"),
        TestResult("t.py::b", "failed", "boom"),
    )
    # An unattested file beside it is never read.
    (tmp_path / "forged.xml").write_bytes(JUNIT.replace(b"<failure", b"<skippedx"))
    assert read_evidence(_report(junit=[entry]), nonce=NONCE, junit_dir=tmp_path).tests_run == 3


@pytest.mark.parametrize("change", ["rewritten", "grown", "removed", "symlinked"])
def test_a_junit_file_changed_after_the_attestation_is_refused(change, tmp_path) -> None:
    entry = _attest(tmp_path)
    path = tmp_path / "junit.xml"
    if change == "rewritten":
        path.write_bytes(JUNIT.replace(b"<failure", b"<falure "))
        entry["size"] = len(path.read_bytes())  # same size claimed, other bytes
    elif change == "grown":
        path.write_bytes(JUNIT + b" ")
    elif change == "removed":
        path.unlink()
    else:
        (tmp_path / "real.xml").write_bytes(JUNIT)
        path.unlink()
        path.symlink_to(tmp_path / "real.xml")
    evidence = read_evidence(_report(junit=[entry]), nonce=NONCE, junit_dir=tmp_path)
    assert evidence.problem == "the JUnit file 'junit.xml' changed after the judge runner attested it"


def test_an_attested_file_that_is_no_junit_is_refused_with_the_reason(tmp_path) -> None:
    entry = _attest(tmp_path, data=b"<html><body>not a report</body></html>")
    evidence = read_evidence(_report(junit=[entry]), nonce=NONCE, junit_dir=tmp_path)
    assert evidence.problem == (
        "the JUnit file 'junit.xml' is no test report: "
        "the root element is <html>, not <testsuites> or <testsuite>"
    )


def test_nothing_reported_is_unknown_and_a_completed_empty_run_is_zero(tmp_path) -> None:
    silent = read_evidence(_report(tests={}, done=False), nonce=NONCE, junit_dir=tmp_path)
    assert silent.problem is None and silent.tests is None and silent.tests_run is None
    empty = read_evidence(_report(tests={}, done=True), nonce=NONCE, junit_dir=tmp_path)
    assert empty.tests == () and empty.tests_run == 0


def test_the_oracle_root_is_normalized_in_every_format(tmp_path) -> None:
    token = "0123456789abcdef"
    staged = f"../.wfbench-oracle-{token}/t.py".encode()  # vitest: suite and classname relative to the root
    entry = _attest(tmp_path, data=JUNIT.replace(b'"t.py"', b'"' + staged + b'"'))
    lines = {
        f"/.wfbench-oracle-{token}/t.py::a": ["passed", None],  # absolute (an adapter's module id)
        f"...wfbench-oracle-{token}.t::c": ["passed", None],  # pytest's dotted classname
    }
    evidence = read_evidence(_report(tests=lines, junit=[entry]), nonce=NONCE, junit_dir=tmp_path)
    assert [(t.test_id, t.outcome) for t in evidence.tests] == [
        ("<oracle-root>/t.py::a", "passed"),
        ("<oracle-root>.t::c", "passed"),
        ("<oracle-root>/t.py::b", "failed"),
    ]


def test_the_size_cap_is_inclusive(tmp_path) -> None:
    at_cap = _report().ljust(MAX_REPORT_BYTES)
    assert (
        len(at_cap) == MAX_REPORT_BYTES
        and read_evidence(at_cap, nonce=NONCE, junit_dir=tmp_path).problem is None
    )
    over = _report().ljust(MAX_REPORT_BYTES + 1)
    assert read_evidence(over, nonce=NONCE, junit_dir=tmp_path).problem == "the outcome report is oversized"


def test_files_are_read_as_regular_files_up_to_one_byte_past_the_cap(tmp_path) -> None:
    path = tmp_path / "outcome.json"
    path.write_bytes(b"x" * 150)
    assert _read_bounded(path, 100) == b"x" * 101  # enough to say "oversized"
    link = tmp_path / "link.json"
    link.symlink_to(path)
    assert _read_bounded(link, 100) is None  # never through a symlink
    assert _read_bounded(tmp_path / "absent.json", 100) is None
    (tmp_path / "dir.json").mkdir()
    assert _read_bounded(tmp_path / "dir.json", 100) is None
    os.mkfifo(tmp_path / "fifo.json")
    assert _read_bounded(tmp_path / "fifo.json", 100) is None  # opened without blocking, refused


def test_a_refused_or_unreadable_junit_report_keeps_the_exit_status_and_a_bounded_reason(tmp_path) -> None:
    refused = read_evidence(_report(exit_code=3, junit_refused="r" * 400), nonce=NONCE, junit_dir=tmp_path)
    assert refused == RunEvidence(problem="the JUnit report was refused: " + "r" * 300, exit_code=3)
    impossible = _report(exit_code=3, junit=[{"name": "a/b.xml", "size": 1, "sha256": "0" * 64}])
    assert read_evidence(impossible, nonce=NONCE, junit_dir=tmp_path) == RunEvidence(
        problem="the outcome report names an impossible JUnit file 'a/b.xml'", exit_code=3
    )


@pytest.mark.parametrize("name", [".", "..", "n" * 200])
def test_a_junit_name_that_cannot_be_a_file_here_is_refused_and_quoted_at_most_80_chars(
    name, tmp_path
) -> None:
    (tmp_path / ("n" * 200)).write_bytes(JUNIT)  # even when it exists, a 200-char name is quoted short
    entry = {"name": name, "size": len(JUNIT), "sha256": hashlib.sha256(JUNIT).hexdigest()}
    evidence = read_evidence(_report(junit=[entry]), nonce=NONCE, junit_dir=tmp_path)
    if len(name) > 80:
        assert evidence.problem is None and evidence.tests_run == 3  # a long name is still a file name
    else:
        assert evidence.problem == f"the outcome report names an impossible JUnit file {name!r}"
    missing = read_evidence(
        _report(junit=[{**entry, "name": "m" * 200 + "/x"}]), nonce=NONCE, junit_dir=tmp_path
    )
    assert missing.problem == f"the outcome report names an impossible JUnit file {'m' * 80!r}"


@pytest.mark.parametrize(
    "defect",
    [{"name": 1}, {"size": "12"}, {"size": True}, {"sha256": None}],
    ids=["name", "size-str", "size-bool", "sha256"],
)
def test_an_attestation_with_any_one_bad_field_is_malformed(defect, tmp_path) -> None:
    entry = {**_attest(tmp_path), **defect}
    evidence = read_evidence(_report(junit=[entry]), nonce=NONCE, junit_dir=tmp_path)
    assert evidence.problem == "the outcome report is malformed"
    assert read_evidence(_report(junit=["junit.xml"]), nonce=NONCE, junit_dir=tmp_path).problem == (
        "the outcome report is malformed"
    )


def test_every_attested_junit_file_counts(tmp_path) -> None:
    second = b'<testsuite name="u.py"><testcase classname="u.py" name="c"/></testsuite>'
    entries = [_attest(tmp_path), _attest(tmp_path, "second.xml", second)]
    evidence = read_evidence(_report(tests={}, junit=entries), nonce=NONCE, junit_dir=tmp_path)
    assert [t.test_id for t in evidence.tests] == ["t.py::a", "t.py::b", "u.py::c"]


def test_rejudging_an_outcome_keeps_its_output_and_evidence() -> None:
    evidence = read_evidence(_report(), nonce=NONCE, junit_dir=None)
    outcome = JudgeOutcome(passed=True, detail="1/1", output="the tail", evidence=evidence)
    stricter = outcome.judged(Expectation(min_tests=2))
    assert stricter == JudgeOutcome(
        passed=False,
        detail=verdict(evidence, Expectation(min_tests=2)).detail,
        output="the tail",
        evidence=evidence,
    )
    assert stricter.passed is False and "2" in stricter.detail
    unjudged = JudgeOutcome(passed=False, detail="no run", output="")
    assert unjudged.judged(Expectation(min_tests=2)) is unjudged  # nothing to re-read


def test_the_hosts_junit_file_cap_is_the_runners() -> None:
    """A file the runner attests at its cap must not be refused by the host (kept in sync by hand)."""
    import importlib.util

    from workflow_bench.judging import outcome_report

    spec = importlib.util.spec_from_file_location(
        "judge_runner_under_test", outcome_report.KIT / "judge_runner.py"
    )
    assert spec is not None and spec.loader is not None
    runner = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runner)
    assert outcome_report.MAX_JUNIT_FILE_BYTES == runner.MAX_JUNIT_FILE_BYTES == 16 * 1024 * 1024


def test_bytes_on_the_decoy_are_tampering_whatever_else_the_report_proves(tmp_path) -> None:
    """Written after the adapter claimed the channel: code under test impersonating a reporter."""
    from workflow_bench.judging.verdict import for_task, verdict

    expectation = for_task(min_tests=1, expected=None, report_required=True)
    clean = verdict(read_evidence(_report(), nonce=NONCE, junit_dir=tmp_path), expectation)
    assert clean.passed and not clean.tampered  # negative control: an empty decoy
    forged = verdict(read_evidence(_report(decoy_bytes=120), nonce=NONCE, junit_dir=tmp_path), expectation)
    assert (
        not forged.passed
        and forged.tampered
        and "120 bytes were written to the result channel" in forged.detail
    )
    for bad in (-1, "3", None, True):
        evidence = read_evidence(_report(decoy_bytes=bad), nonce=NONCE, junit_dir=tmp_path)
        assert evidence.problem == "the outcome report is malformed", bad
