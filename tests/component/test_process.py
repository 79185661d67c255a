"""Owned subprocesses: timeouts kill the whole group, capture is bounded, cancel is honoured."""

from __future__ import annotations

import threading
import time

import pytest

from workflow_bench.process import ProcessError, run_checked, run_process

pytestmark = pytest.mark.component


def test_exit_code_stdout_and_stderr_tail():
    result = run_process(["/bin/sh", "-c", "echo out; echo err >&2; exit 3"], timeout_s=10)
    assert result.state == "exited" and result.returncode == 3 and not result.ok
    assert result.stdout == b"out\n" and "err" in result.stderr_tail


def test_stdin_is_fed():
    assert run_process(["/bin/cat"], timeout_s=10, stdin=b"prompt text").stdout == b"prompt text"


def test_timeout_kills_grandchildren_too(tmp_path):
    marker = tmp_path / "alive"
    script = f"(sleep 3; touch {marker}) & sleep 30"
    started = time.monotonic()
    result = run_process(["/bin/sh", "-c", script], timeout_s=0.5)
    assert result.state == "timeout" and result.returncode is None
    assert time.monotonic() - started < 8
    time.sleep(3.5)
    assert not marker.exists(), "a grandchild survived the timeout"


def test_stdout_overflow_is_flagged_not_silently_truncated():
    result = run_process(["/bin/sh", "-c", "head -c 5000 /dev/zero"], timeout_s=10, max_stdout_bytes=1000)
    assert result.stdout_overflow and len(result.stdout) == 1000


def test_cancellation_event_stops_the_child():
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    result = run_process(["/bin/sleep", "30"], timeout_s=60, cancel=cancel)
    assert result.state == "cancelled"
    assert run_process(["/bin/true"], timeout_s=5, cancel=cancel).detail == "cancelled before start"


def test_spawn_failure_is_a_state():
    result = run_process(["/nonexistent/binary"], timeout_s=5)
    assert result.state == "spawn-failure" and "FileNotFoundError" in result.detail


def test_run_checked_raises_with_the_cause():
    with pytest.raises(ProcessError, match="exit 1"):
        run_checked(["/bin/false"], what="probe")


def test_stdout_lines_are_observed_live():
    lines: list[bytes] = []
    run_process(["/bin/sh", "-c", "echo a; echo b"], timeout_s=10, on_stdout_line=lines.append)
    assert lines == [b"a", b"b"]
