"""Ctrl-C during a sweep: exit 130, every finished row kept, the in-flight cell recorded.

Runs the real runner as a child process (signals must reach a real main
thread) against slow scripted cells, and interrupts it once the first row is
on disk.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import REPO_ROOT

pytestmark = pytest.mark.e2e
SCRIPT = Path(__file__).parent / "scripts" / "slow.yaml"


def test_sigint_keeps_rows_and_exits_130(task_file_for, tmp_path, bwrap_bin, claude_bin):
    tasks = task_file_for("trivial-amount-grouping")
    out = tmp_path / "out"
    argv = [
        sys.executable,
        "-m",
        "workflow_bench.runner",
        "--tasks",
        str(tasks),
        "--provider",
        "scripted",
        "--script",
        str(SCRIPT),
        "--arms",
        "baseline",
        "--runs",
        "4",
        "--out",
        str(out),
    ]
    proc = subprocess.Popen(
        argv,
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    results = out / "results.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (results.exists() and results.read_text().strip()):
        time.sleep(0.1)
    assert results.exists(), "no row was written before the deadline"
    time.sleep(0.8)  # the second cell is now mid-session
    interrupted = time.monotonic()
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=30)
    assert time.monotonic() - interrupted < 15, "cancellation must finish promptly"
    assert proc.returncode == 130, output.decode()[-2000:]
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert 2 <= len(rows) < 4
    assert rows[0]["error_kind"] is None or rows[0]["error_kind"] == "oracle-failed"
    assert rows[-1]["error_kind"] == "cancelled" and rows[-1]["resolved"] is False
    report = (out / "report.md").read_text()
    assert "cancelled" in report.lower()
