"""benchmarks/load_check.py: every test that failed in any of N runs is reported, and the busy
neighbour it starts really spins and never outlives it (not even a SIGKILLed load check).

The runs are real pytest runs of a small generated test directory: one test always passes, one
always fails, one fails only in the first run (a flake, told apart by a counter file).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import REPO_ROOT

pytestmark = pytest.mark.component
LOAD_CHECK = REPO_ROOT / "benchmarks" / "load_check.py"
TESTS = """
from pathlib import Path

COUNTER = Path(__file__).with_name("runs")


def test_steady():
    pass


def test_broken():
    assert False, "always"


def test_flaky():
    runs = int(COUNTER.read_text()) if COUNTER.exists() else 0
    COUNTER.write_text(str(runs + 1))
    assert runs > 0, "fails the first time only"
"""


def _project(root: Path, body: str) -> Path:
    root.mkdir()
    (root / "pytest.ini").write_text("[pytest]\n")
    (root / "test_sample.py").write_text(body)
    return root


def _pytest_args(project: Path) -> list[str]:
    return [
        "--",
        str(project),
        "-q",
        "-p",
        "no:xdist",
        "-c",
        str(project / "pytest.ini"),
        "--rootdir",
        str(project),
    ]


def _children(pid: int, *, excluding: list[int]) -> list[int]:
    try:
        found = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    return [int(p) for p in found if int(p) not in excluding]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_every_test_failed_in_any_run_is_reported_and_the_busy_loops_stop(tmp_path):
    project = _project(tmp_path / "project", TESTS)
    out = tmp_path / "out"
    argv = [sys.executable, str(LOAD_CHECK), "--runs", "3", "--canary-runs", "0", "--busy", "2"]
    done = subprocess.run(
        [*argv, "--out", str(out), *_pytest_args(project)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 1, done.stdout + done.stderr
    summary = json.loads((out / "summary.json").read_text())
    failed = summary["tests"]["failed"]
    assert failed == {"test_sample::test_broken": [1, 2, 3], "test_sample::test_flaky": [1]}, done.stdout
    assert "3/3  test_sample::test_broken" in done.stdout and "1/3  test_sample::test_flaky" in done.stdout
    assert sorted(p.name for p in out.glob("pytest-*.xml")) == [
        "pytest-1.xml",
        "pytest-2.xml",
        "pytest-3.xml",
    ]
    pids = _busy_pids(done.stdout)
    assert len(pids) == 2 and not any(_alive(pid) for pid in pids)
    # The neighbour was busy: each loop spent CPU time (a sleeping one would show 0).
    spent = re.search(r"CPU seconds each: ([\d. ?]+)", done.stdout).group(1).split()
    assert len(spent) == 2 and all(s != "?" and float(s) >= 0 for s in spent)


def test_nothing_failed_is_exit_0(tmp_path):
    project = _project(tmp_path / "project", "def test_steady():\n    pass\n")
    argv = [sys.executable, str(LOAD_CHECK), "--runs", "2", "--canary-runs", "0", "--busy", "0"]
    done = subprocess.run([*argv, *_pytest_args(project)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "tests: nothing failed in 2 run(s)" in done.stdout


def test_a_pytest_run_that_gave_no_verdict_is_reported(tmp_path):
    project = _project(tmp_path / "project", "import nonexistent_module_xyz\n\ndef test_x():\n    pass\n")
    argv = [sys.executable, str(LOAD_CHECK), "--runs", "1", "--canary-runs", "0", "--busy", "0"]
    done = subprocess.run([*argv, *_pytest_args(project)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    assert "1/1  test_sample" in done.stdout  # the collection error is the failed entry


@pytest.mark.parametrize("bad", [["--runs", "-1"], ["--busy", "-2"]])
def test_bad_arguments_exit_2(bad):
    done = subprocess.run([sys.executable, str(LOAD_CHECK), *bad], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "must be 0 or more" in done.stderr and "Traceback" not in done.stderr


def _busy_pids(line: str) -> list[int]:
    return [int(p) for p in re.search(r"busy loops: pids ([\d ]+)", line).group(1).split()]


def _gone(pids: list[int], *, within_s: float) -> bool:
    """True once none of ``pids`` runs (a zombie counts as gone), polled for ``within_s``."""
    deadline = time.monotonic() + within_s
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not any(_alive(pid) for pid in pids)


def _stop(check: subprocess.Popen[str], strays: list[int]) -> None:
    """Kill what a failed test would leave running, then reap the check."""
    for pid in strays:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    if check.poll() is None:
        check.kill()
    check.wait()
    check.stdout.close()


def test_a_killed_load_check_leaves_no_busy_loop(tmp_path):
    project = _project(tmp_path / "project", "import time\n\ndef test_slow():\n    time.sleep(60)\n")
    argv = [sys.executable, str(LOAD_CHECK), "--runs", "1", "--canary-runs", "0", "--busy", "2"]
    runs: list[int] = []
    check = subprocess.Popen([*argv, *_pytest_args(project)], stdout=subprocess.PIPE, text=True)
    try:
        pids = _busy_pids(check.stdout.readline())
        assert all(_alive(pid) for pid in pids)
        deadline = time.monotonic() + 30
        while not (runs := _children(check.pid, excluding=pids)) and time.monotonic() < deadline:
            time.sleep(0.1)  # the pytest run has started
        os.kill(check.pid, signal.SIGKILL)  # no finally runs: only the loops' own parent check is left
        check.wait(timeout=30)
        assert _gone(pids, within_s=20)
    finally:
        _stop(check, runs)  # the orphaned pytest run sleeps on otherwise


def test_a_load_check_killed_before_its_loops_started_leaves_no_busy_loop(tmp_path):
    """The loops are told their parent's pid: one whose interpreter had not started when the check
    was killed (seconds under load; here every interpreter sleeps 3 s in sitecustomize) must not
    take its new parent for the check and spin for ever (CI once lost a run to exactly that)."""
    slow = tmp_path / "slow-start"
    slow.mkdir()
    (slow / "sitecustomize.py").write_text("import time\ntime.sleep(3)\n")
    argv = [sys.executable, str(LOAD_CHECK), "--runs", "1", "--canary-runs", "0", "--busy", "2"]
    env = {**os.environ, "PYTHONPATH": str(slow)}
    project = _project(tmp_path / "project", "def test_x():\n    pass\n")
    check = subprocess.Popen([*argv, *_pytest_args(project)], stdout=subprocess.PIPE, text=True, env=env)
    pids: list[int] = []
    try:
        pids = _busy_pids(check.stdout.readline())
        os.kill(check.pid, signal.SIGKILL)  # the loops are still asleep in sitecustomize
        check.wait(timeout=30)
        assert _gone(pids, within_s=30)
    finally:
        _stop(check, pids)
