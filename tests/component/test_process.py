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


def test_a_raising_observer_is_reported_and_the_pipe_still_drains():
    seen: list[bytes] = []

    def observer(line: bytes) -> None:
        seen.append(line)
        raise UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed")

    # 4 MiB after the failure: a dead reader would leave the child blocked on a full pipe.
    script = "echo first; head -c 4194304 /dev/zero; echo; echo last"
    result = run_process(["/bin/sh", "-c", script], timeout_s=20, on_stdout_line=observer)
    assert result.state == "exited" and result.returncode == 0
    assert len(result.stdout) == 4194304 + len(b"first\n\nlast\n")
    assert seen == [b"first"]  # called once, then no more
    assert "observer failed: UnicodeEncodeError" in result.reader_error
    assert "observer failed" in result.describe()
    clean = run_process(["/bin/sh", "-c", "echo a"], timeout_s=10, on_stdout_line=lambda _l: None)
    assert clean.reader_error == ""  # negative control


def _drain_peak(payload: bytes, cap: int) -> tuple[list[int], int, float]:
    """Feed ``payload`` to ``_drain`` in 64 KiB reads; return line lengths seen, traced peak, seconds."""
    import io
    import tracemalloc

    from workflow_bench.process import _drain

    lines: list[int] = []
    stream = io.BufferedReader(io.BytesIO(payload), buffer_size=65536)
    tracemalloc.start()
    started = time.monotonic()
    _drain(stream, bytearray(), cap=cap, keep_tail=False, flags={}, on_line=lambda ln: lines.append(len(ln)))
    elapsed = time.monotonic() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return lines, peak, elapsed


def test_drain_line_buffer_is_bounded_and_linear():
    cap = 1024 * 1024
    # One 16 MiB line without a newline, then a normal line: the old buffer grew to 16 MiB
    # by quadratic re-concatenation (RSS +95 MiB for a 1 MiB cap, issue 8).
    lines, peak, elapsed = _drain_peak(b"x" * (16 * cap) + b"\nok\n", cap)
    assert lines == [2]  # the oversized line is dropped, the next one still observed
    assert peak < 4 * cap, f"line buffer grew to {peak} bytes for a {cap} byte cap"
    assert elapsed < 5
    # negative control: a line that fits is delivered whole, split across reads
    lines, _, _ = _drain_peak(b"a" * 200_000 + b"\n" + b"b\n", cap)
    assert lines == [200_000, 1]
