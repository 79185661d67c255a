"""Proof of success from the judge runner, in the real sandbox, against code under test that lies.

Every attack runs as code the tests import (a package ``__init__``), inside the child the
runner starts: exactly where an agent's code runs when the oracle judges it. Negative controls
show each attack would have fooled an exit-status judge.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

import pytest

from workflow_bench.judging import outcome_report
from workflow_bench.judging.attribution import ChargedFailure
from workflow_bench.judging.outcome_report import KIT, run_with_report
from workflow_bench.judging.verdict import for_task
from workflow_bench.sandbox import RunPolicy, SandboxKind, create_sandbox

pytestmark = pytest.mark.component
COMMAND = 'python3 -I -B "$WORKFLOW_BENCH_UNITTEST" tests.test_pkg'
TESTS = """
import unittest
import pkg


class T(unittest.TestCase):
    def test_one(self):
        self.assertEqual(pkg.value(), 1)

    def test_two(self):
        self.assertTrue(pkg.value())

    def test_three(self):
        self.assertIsInstance(pkg.value(), int)
"""
# Finds the judge runner's nonce the only ways a same-uid process could: its environment,
# its stdin, its memory; then forges a report with whatever it found and exits 0.
FORGER = r"""
import glob, json, os, re, time
found = set()
others = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]
for pid in others:
    for name in ("environ", "cmdline", "fd/0"):
        try:
            with open(f"/proc/{pid}/{name}", "rb") as handle:
                os.set_blocking(handle.fileno(), False)
                found.update(re.findall(rb"[0-9a-f]{32}", handle.read(1 << 20) or b""))
        except Exception as exc:
            print("probe", pid, name, type(exc).__name__, flush=True)
    try:
        with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb") as mem:
            for line in maps:
                span, perms = line.split()[:2]
                if "rw" not in perms:
                    continue
                start, end = (int(x, 16) for x in span.split("-"))
                try:
                    mem.seek(start)
                    chunk = mem.read(min(end - start, 64 << 20))
                except OSError:
                    continue
                found.update(re.findall(rb"(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])", chunk))
    except Exception as exc:
        print("probe mem", pid, type(exc).__name__, flush=True)
print("FOUND", len(found), flush=True)
# One report file, so one guess: a forger that found exactly one candidate has the nonce.
nonce = (sorted(found)[:1] or [b"0" * 32])[0].decode()
report = json.dumps({"nonce": nonce, "exit_code": 0, "tests_run": 3, "tests_passed": 3,
                     "tests_not_passed": 0, "done": True, "malformed_lines": 0})
if os.fork() == 0:
    # Outlive the test process and keep the forged report in place after the runner writes.
    os.setsid()
    for _ in range(3000):
        for directory in glob.glob("/.wfbench-out-*"):
            try:
                with open(os.path.join(directory, "outcome.json"), "w") as handle:
                    handle.write(report)
            except OSError:
                pass
        time.sleep(0.001)
    os._exit(0)
os._exit(0)
"""


def _workspace(tmp_path: Path, init: str) -> Path:
    ws = tmp_path / "ws"
    (ws / "pkg").mkdir(parents=True)
    (ws / "tests").mkdir()
    (ws / "pkg" / "__init__.py").write_text(init + "\ndef value():\n    return 1\n")
    (ws / "tests" / "__init__.py").write_text("")
    (ws / "tests" / "test_pkg.py").write_text(TESTS)
    return ws


def _judge(tmp_path: Path, ws: Path, *, min_tests: int = 3, timeout_s: float = 60, command=COMMAND):
    sandbox = create_sandbox(SandboxKind.BWRAP, workspace=ws, claude_bin=None, bwrap_bin="bwrap")
    scratch = tmp_path / "scratch"
    scratch.mkdir(exist_ok=True)
    outcome = run_with_report(
        sandbox,
        command,
        scratch=scratch,
        expectation=for_task(min_tests=min_tests, expected=None, report_required=True),
        timeout_kind="oracle-timeout",
        timeout_s=timeout_s,
        cancel=threading.Event(),
    )
    assert not list(scratch.iterdir()), "the kit and report directories are removed"
    return sandbox, outcome


def _exit_status(sandbox) -> int | None:
    plain = (
        'python3 -I -B -c \'import sys; sys.path.append("."); import unittest; '
        'unittest.main(module="tests.test_pkg")\''
    )
    return sandbox.run(
        ["/bin/sh", "-c", plain], policy=RunPolicy(workspace_writable=False), timeout_s=60
    ).returncode


def test_honest_tests_pass_with_their_count(tmp_path, bwrap_bin):
    _, outcome = _judge(tmp_path, _workspace(tmp_path, ""))
    assert outcome.passed and (outcome.tests_run, outcome.tests_passed) == (3, 3), outcome.detail
    # Negative control: the same honest run falls short of a higher declared minimum.
    _, short = _judge(tmp_path, _workspace(tmp_path / "b", ""), min_tests=4)
    assert not short.passed and "3 tests ran" in short.detail


def test_exit_zero_from_imported_code_is_not_a_pass(tmp_path, bwrap_bin):
    ws = _workspace(tmp_path, "import os\nos._exit(0)")
    sandbox, outcome = _judge(tmp_path, ws)
    assert _exit_status(sandbox) == 0  # negative control: an exit-status judge is fooled
    # Nothing reported any test: the count is unknown (None), never 0.
    assert not outcome.passed and outcome.tests_run is None, outcome.detail


def test_a_forged_report_without_the_nonce_is_refused(tmp_path, bwrap_bin):
    ws = _workspace(tmp_path, FORGER)
    sandbox, outcome = _judge(tmp_path, ws)
    assert _exit_status(sandbox) == 0
    assert not outcome.passed, outcome.detail
    assert "FOUND 0" in outcome.output, outcome.output  # no probe reached the nonce
    # The forged report was overwritten by the runner's own, which saw no test report a result.
    assert outcome.detail.startswith("no proof of success: no test reported a result"), outcome.detail


def test_a_hang_in_imported_code_is_the_arms_timeout(tmp_path, bwrap_bin):
    ws = _workspace(tmp_path, "import time\ntime.sleep(600)")
    with pytest.raises(ChargedFailure) as caught:
        _judge(tmp_path, ws, timeout_s=3)
    assert caught.value.kind == "oracle-timeout"


def _run(tmp_path: Path, command: str, *, timeout_s: float = 60, min_tests: int | None = None):
    ws = tmp_path / "plain-ws"
    ws.mkdir(exist_ok=True)
    sandbox = create_sandbox(SandboxKind.BWRAP, workspace=ws, claude_bin=None, bwrap_bin="bwrap")
    scratch = tmp_path / "scratch"
    scratch.mkdir(exist_ok=True)
    try:
        return run_with_report(
            sandbox,
            command,
            scratch=scratch,
            expectation=for_task(min_tests=min_tests, expected=None, report_required=min_tests is not None),
            timeout_kind="oracle-timeout",
            timeout_s=timeout_s,
            cancel=threading.Event(),
        )
    finally:
        assert not list(scratch.iterdir()), "the kit, report and JUnit directories are removed"


def test_a_junit_report_the_command_writes_is_counted(tmp_path, bwrap_bin):
    suite = (
        '<testsuite name="s"><testcase classname="s" name="a"/><testcase classname="s" name="b"/></testsuite>'
    )
    outcome = _run(tmp_path, f"printf '{suite}' > \"$WORKFLOW_BENCH_JUNIT\"", min_tests=2)
    assert outcome.passed, outcome.detail
    assert (outcome.tests_run, outcome.tests_passed) == (2, 2) and outcome.evidence.sources == ("junit",)
    # negative control: the same suite written anywhere else is no report
    elsewhere = _run(tmp_path, f"printf '{suite}' > /tmp/junit.xml", min_tests=2)
    assert not elsewhere.passed and elsewhere.tests_run is None


def test_every_kit_variable_reaches_its_adapter_byte_for_byte(tmp_path, bwrap_bin):
    """The README's variables are how a task's command reaches the adapters; each adapter needs
    the result-channel module beside it."""
    variables = (
        "WORKFLOW_BENCH_UNITTEST",
        "WORKFLOW_BENCH_PYTEST",
        "WORKFLOW_BENCH_VITEST_REPORTER",
        "WORKFLOW_BENCH_JEST_REPORTER",
        "WORKFLOW_BENCH_REVIEW_CHECK",
    )
    siblings = ("wfbench_result_channel.py", "wfbench_result_channel.cjs")
    paths = " ".join(f'"${v}"' for v in variables)
    command = f'cd "$(dirname "$WORKFLOW_BENCH_UNITTEST")" && sha256sum {paths} {" ".join(siblings)}'
    outcome = _run(tmp_path, command)
    assert outcome.passed, outcome.output
    seen = {
        Path(name).name: digest for digest, name in (line.split() for line in outcome.output.splitlines())
    }
    adapters = {"unittest_shim.py", "pytest_run.py", "review_check.py"}
    expected = {*adapters, "vitest_reporter.mjs", "jest_reporter.cjs", *siblings}
    assert set(seen) == expected
    for name, digest in seen.items():
        assert digest == hashlib.sha256((KIT / name).read_bytes()).hexdigest(), name


def test_a_long_hung_command_is_named_by_its_first_80_characters(tmp_path, bwrap_bin):
    command = "sleep 30; : " + "x" * 100
    with pytest.raises(ChargedFailure) as caught:
        _run(tmp_path, command, timeout_s=2, min_tests=1)
    assert str(caught.value).startswith(f"{command[:80]!r} exceeded 2 s; before that: ")


def test_a_runner_that_outlives_its_grace_is_still_the_arms_timeout(tmp_path, bwrap_bin, monkeypatch):
    """Fault injection: the sandbox's own deadline (deadline + grace) fires before the runner's."""
    monkeypatch.setattr(outcome_report, "RUNNER_GRACE_S", -28.0)  # the sandbox stops it at 2 s of 30
    command = "sleep 60; : " + "y" * 100
    with pytest.raises(ChargedFailure) as caught:
        _run(tmp_path, command, timeout_s=30, min_tests=1)
    assert caught.value.kind == "oracle-timeout"
    assert str(caught.value) == f"{command[:80]!r} exceeded 30 s"


def test_the_judged_command_cannot_change_the_workspace(tmp_path, bwrap_bin):
    (tmp_path / "plain-ws").mkdir()
    (tmp_path / "plain-ws" / "code.txt").write_text("agent's work\n")
    outcome = _run(tmp_path, "echo judged > code.txt; echo new > new.txt")
    assert not outcome.passed  # the write fails: the workspace is read-only to the judge
    assert (tmp_path / "plain-ws" / "code.txt").read_text() == "agent's work\n"
    assert not (tmp_path / "plain-ws" / "new.txt").exists()
