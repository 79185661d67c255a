"""The judge's verdicts in a real bwrap sandbox: which path decides, and what each failure is charged as.

test_judge.py covers reading and scoring the review artifact and the exit-status verify; these
pin the rest of `judging.judge`'s contract: a verify with ``verify_min_tests`` is believed only
on a nonce-bound outcome report (exit 0 alone is not a pass), with the task's variables and
mounts; a hang is charged to the agent as ``verify-timeout`` / ``oracle-timeout`` (never an infra
excuse); and the oracle's output never leaves the judge.
"""

from __future__ import annotations

import hashlib
import threading

import pytest

from workflow_bench.judging.attribution import ChargedFailure
from workflow_bench.judging.judge import hide_oracle_text, run_hidden_oracle, run_verify
from workflow_bench.judging.outcome_report import JudgeOutcome
from workflow_bench.judging.verdict import RunEvidence, TestResult, for_task
from workflow_bench.sandbox import Mount, SandboxKind, create_sandbox
from workflow_bench.taskspec.oracles import OracleFile, OracleSnapshot

pytestmark = pytest.mark.component


def _report(*tests: str) -> str:
    """A shell command speaking the outcome-report protocol: one passed line per test on fd 9."""
    lines = "".join(f'{{"test": "{t}", "outcome": "passed"}}\\n' for t in tests)
    return f"""printf '{lines}{{"done": true}}\\n' >&9"""


@pytest.fixture
def sandbox(tmp_path, bwrap_bin):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "code.txt").write_text("agent's work\n")
    return create_sandbox(SandboxKind.BWRAP, workspace=workspace, claude_bin=None, bwrap_bin=bwrap_bin)


@pytest.fixture
def scratch(tmp_path):
    path = tmp_path / "scratch"
    path.mkdir()
    return path


def _expect(min_tests):
    """A verify's expectation without a lock: ``min_tests`` or, None, the exit status."""
    return for_task(min_tests=min_tests, expected=None, report_required=False)


def _verify(sandbox, scratch, command, *, min_tests, timeout_s=60.0, **options):
    return run_verify(
        sandbox,
        command,
        scratch=scratch,
        expectation=_expect(min_tests),
        timeout_s=timeout_s,
        cancel=threading.Event(),
        **options,
    )


def test_a_verify_with_min_tests_passes_only_on_a_report_with_enough_tests(sandbox, scratch) -> None:
    assert _verify(sandbox, scratch, _report("a", "b"), min_tests=2).passed is True
    assert _verify(sandbox, scratch, _report("a", "b"), min_tests=3).passed is False  # too few
    # negative control: exit 0 with no report passes the exit-status path but not this one
    unreported = _verify(sandbox, scratch, "exit 3", min_tests=None)
    assert unreported.passed is False and unreported.detail == "exit status 3 (no outcome report declared)"
    assert unreported.tests_run is None  # no report: the test count is unknown, not 0
    assert _verify(sandbox, scratch, "true", min_tests=None).passed is True
    assert _verify(sandbox, scratch, "true", min_tests=1).passed is False
    assert list(scratch.iterdir()) == []  # the judge kit and report directory are cleaned up


def test_a_reported_verify_gets_the_tasks_variables_and_mounts(sandbox, scratch, tmp_path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "note.txt").write_text("mounted\n")
    command = f'test "$X_EXTRA" = yes && grep -q mounted /extra-mount/note.txt && {_report("a")}'
    mounts = (Mount(source=extra, target="/extra-mount"),)
    outcome = _verify(sandbox, scratch, command, min_tests=1, env_extra={"X_EXTRA": "yes"}, mounts=mounts)
    assert outcome.passed is True
    assert _verify(sandbox, scratch, command, min_tests=1, mounts=mounts).passed is False  # no variable
    assert _verify(sandbox, scratch, command, min_tests=1, env_extra={"X_EXTRA": "yes"}).passed is False


@pytest.mark.parametrize("min_tests", [None, 1])
def test_a_hung_verify_is_charged_to_the_agent_as_verify_timeout(sandbox, scratch, min_tests) -> None:
    with pytest.raises(ChargedFailure) as raised:
        _verify(sandbox, scratch, "sleep 30", min_tests=min_tests, timeout_s=1)
    assert raised.value.kind == "verify-timeout"


def _oracle(content: bytes, command: str) -> OracleSnapshot:
    file = OracleFile(
        target="check.txt", data=content, sha256=hashlib.sha256(content).hexdigest(), size=len(content)
    )
    return OracleSnapshot(command=command, files=(file,))


def test_the_oracles_output_never_leaves_the_judge(sandbox, scratch) -> None:
    command = f'cat "$WORKFLOW_BENCH_ORACLE_ROOT/check.txt"; {_report("hidden")}'
    outcome = run_hidden_oracle(
        sandbox,
        _oracle(b"SECRET-ORACLE-LINE\n", command),
        expectation=_expect(1),
        scratch=scratch,
        timeout_s=60,
        cancel=threading.Event(),
    )
    assert outcome.passed is True and outcome.output == ""


def test_a_hung_oracle_is_charged_as_oracle_timeout(sandbox, scratch) -> None:
    with pytest.raises(ChargedFailure) as raised:
        run_hidden_oracle(
            sandbox,
            _oracle(b"x\n", "sleep 30"),
            expectation=_expect(1),
            scratch=scratch,
            timeout_s=1,
            cancel=threading.Event(),
        )
    assert raised.value.kind == "oracle-timeout"
    assert list(scratch.iterdir()) == []


def test_an_oracle_below_its_min_tests_fails(sandbox, scratch) -> None:
    outcome = run_hidden_oracle(
        sandbox,
        _oracle(b"x\n", _report("one")),
        expectation=_expect(2),
        scratch=scratch,
        timeout_s=60,
        cancel=threading.Event(),
    )
    assert outcome.passed is False


def test_a_directory_planted_at_the_report_path_is_no_proof_not_a_crash(sandbox, scratch) -> None:
    """The code under test can find the writable report directory; what it plants there is refused."""
    plant = 'for d in /.wfbench-out-*; do mkdir "$d/outcome.json"; done'
    outcome = _verify(sandbox, scratch, f"{plant}; {_report('a')}", min_tests=1)
    assert outcome.passed is False
    assert outcome.detail == (
        "no proof of success: the judge runner wrote no outcome report (killed, or it could not run)"
    )
    assert list(scratch.iterdir()) == []


def test_a_reported_run_keeps_its_counts_and_only_the_tail_of_its_output(sandbox, scratch) -> None:
    noisy = f"head -c 10000 /dev/zero | tr '\\0' a; echo END; {_report('a', 'b')}"
    outcome = _verify(sandbox, scratch, noisy, min_tests=2)
    assert outcome.passed is True and (outcome.tests_run, outcome.tests_passed) == (2, 2)
    assert outcome.detail == "2/2 tests passed (outcome report verified)"
    assert len(outcome.output) == 4000 and outcome.output.endswith("aEND\n")


def test_a_cancelled_sweep_stops_a_reported_run_as_a_harness_error_not_a_verdict(sandbox, scratch) -> None:
    from workflow_bench.process import ProcessError

    cancel = threading.Event()
    cancel.set()
    with pytest.raises(ProcessError, match=r"^judge runner"):
        run_verify(sandbox, "sleep 30", scratch=scratch, expectation=_expect(1), timeout_s=60, cancel=cancel)
    assert list(scratch.iterdir()) == []


def test_reported_output_that_is_not_utf8_is_kept_with_replacement_characters(sandbox, scratch) -> None:
    outcome = _verify(sandbox, scratch, f"printf 'ok\\377\\n'; {_report('a')}", min_tests=1)
    assert outcome.passed is True and outcome.output == "ok\ufffd\n"


def test_a_hung_reported_run_says_what_hung_for_how_long_and_what_had_reported(sandbox, scratch) -> None:
    with pytest.raises(ChargedFailure, match=r"^'sleep 30' exceeded 1 s; before that: no tests reported$"):
        _verify(sandbox, scratch, "sleep 30", min_tests=1, timeout_s=1)
    # The runner stops the command at the deadline itself: what streamed before it is kept.
    with pytest.raises(ChargedFailure) as raised:
        _verify(sandbox, scratch, f"{_report('a', 'b')}; sleep 30", min_tests=1, timeout_s=2)
    assert str(raised.value).endswith("before that: 2 run, 2 passed, 0 skipped, 0 failed")
    assert raised.value.outcome.tests_run == 2


def _run_oracle(sandbox, scratch, command: str, *, timeout_s: float = 60, cancel=None, content=b"x\n"):
    return run_hidden_oracle(
        sandbox,
        _oracle(content, command),
        expectation=_expect(1),
        scratch=scratch,
        timeout_s=timeout_s,
        cancel=cancel or threading.Event(),
    )


_FAILED_WITH_SECRET = (
    """printf '{"test": "hidden::a", "outcome": "passed"}\\n"""
    """{"test": "hidden::b", "outcome": "failed", "message": "assert SECRET-ORACLE-LINE"}\\n' >&9"""
)


def test_a_failing_oracle_names_its_tests_but_never_what_they_assert(sandbox, scratch) -> None:
    outcome = _run_oracle(
        sandbox, scratch, f"echo SECRET-ORACLE-LINE; {_FAILED_WITH_SECRET}; echo '{{\"done\": true}}' >&9"
    )
    assert outcome.passed is False and outcome.output == ""
    assert outcome.evidence is not None and outcome.evidence.complete is True
    assert outcome.evidence.tests == (TestResult("hidden::a", "passed"), TestResult("hidden::b", "failed"))
    assert (outcome.tests_run, outcome.tests_passed) == (2, 1)
    assert "SECRET" not in repr(outcome)
    # negative control: the same report through verify keeps the failure message (it is the agent's own test)
    seen = _verify(sandbox, scratch, f"{_FAILED_WITH_SECRET}; echo '{{\"done\": true}}' >&9", min_tests=1)
    assert seen.evidence.tests[1].message == "assert SECRET-ORACLE-LINE"


def test_a_hung_oracle_keeps_what_it_reported_but_not_what_it_said(sandbox, scratch) -> None:
    with pytest.raises(ChargedFailure) as raised:
        _run_oracle(
            sandbox, scratch, f"echo SECRET-ORACLE-LINE; {_FAILED_WITH_SECRET}; sleep 30", timeout_s=2
        )
    assert raised.value.kind == "oracle-timeout"
    outcome = raised.value.outcome
    assert outcome.output == "" and (outcome.tests_run, outcome.tests_passed) == (2, 1)
    assert [t.message for t in outcome.evidence.tests] == [None, None]
    assert "SECRET" not in repr(outcome)
    assert list(scratch.iterdir()) == []


def test_the_oracle_may_write_beside_its_files_for_this_run_only(sandbox, scratch) -> None:
    """Frameworks write caches beside their config; the staged copy is writable, then erased."""
    write = (
        'mkdir "$WORKFLOW_BENCH_ORACLE_ROOT/.cache" && echo x > "$WORKFLOW_BENCH_ORACLE_ROOT/.cache/state"'
    )
    assert _run_oracle(sandbox, scratch, f"{write} && {_report('hidden')}").passed is True
    assert list(scratch.iterdir()) == []


def test_a_cancelled_sweep_stops_the_oracle_as_a_harness_error(sandbox, scratch) -> None:
    from workflow_bench.process import ProcessError

    cancel = threading.Event()
    cancel.set()
    with pytest.raises(ProcessError, match=r"^judge runner"):
        _run_oracle(sandbox, scratch, f"sleep 30; {_report('hidden')}", cancel=cancel)
    assert list(scratch.iterdir()) == []


def test_hiding_the_oracle_text_keeps_the_verdict_and_an_evidence_without_tests() -> None:
    problem = RunEvidence(problem="no report", exit_code=3)
    for evidence in (None, problem):
        hidden = hide_oracle_text(
            JudgeOutcome(passed=False, detail="why", output="quoted", evidence=evidence)
        )
        assert hidden == JudgeOutcome(passed=False, detail="why", output="", evidence=evidence)


def test_two_oracle_runs_sharing_a_scratch_directory_each_get_their_own_copy(sandbox, scratch) -> None:
    """The staged copy is per run: a second run that overlaps the first neither collides nor erases it."""
    command = f'sleep 1; grep -q mine "$WORKFLOW_BENCH_ORACLE_ROOT/check.txt" && {_report("hidden")}'
    results: list[object] = []

    def run() -> None:
        try:
            results.append(_run_oracle(sandbox, scratch, command, content=b"mine\n").passed)
        except Exception as exc:  # a collision must show up as a result, not a lost thread
            results.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [True, True]
    assert list(scratch.iterdir()) == []
