"""--resume after kill -9: one row per cell, no paid request repeated for a finished cell.

The runner is SIGKILLed mid-sweep (under the subreaper helper, so anything it
leaves running is reported), a transcript of one finished cell is then edited
and a torn half-row appended, and ``--resume`` completes the sweep in place.
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

from workflow_bench import runner

from .conftest import REPO_ROOT

pytestmark = pytest.mark.e2e
SCRIPT = Path(__file__).parent / "scripts" / "slow.yaml"
HELPER = Path(__file__).parent / "subreaper.py"
RUNS = 4


def _ledger(out: Path) -> list[dict]:
    path = out / "provider-ledger.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_resume_after_kill_9_completes_with_one_row_per_cell(
    task_file_for, tmp_path, short_tmpdir, bwrap_bin, claude_bin
):
    tasks = task_file_for("trivial-amount-grouping")
    out = tmp_path / "out"
    args = ["--tasks", str(tasks), "--provider", "scripted", "--script", str(SCRIPT), "--arms", "baseline",
            "--runs", str(RUNS), "--workers", "2"]  # fmt: skip
    log = tmp_path / "runner.log"
    # A SIGKILLed runner cannot remove its cell dir: give it a private TMPDIR (short_tmpdir collects
    # the killed runner's work root, unmounting its cell volume, when the test ends).
    private_tmp = short_tmpdir
    helper = subprocess.Popen(
        [sys.executable, str(HELPER), str(log), "--", sys.executable, "-m", "workflow_bench.runner", *args,
         "--out", str(out)],
        cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "TMPDIR": str(private_tmp)},
    )  # fmt: skip
    runner_pid = int(helper.stdout.readline().split()[1])
    results = out / "results.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (results.exists() and results.read_text().count("\n") >= 2):
        time.sleep(0.05)
    os.kill(runner_pid, signal.SIGKILL)
    lines = dict(line.split(" ", 1) for line in helper.communicate(timeout=60)[0].splitlines() if " " in line)
    assert int(lines["RC"]) == -signal.SIGKILL, log.read_text()[-2000:]
    assert json.loads(lines["LEFT"]) == [], "processes outlived the killed runner"

    before = [json.loads(line) for line in results.read_text().splitlines()]
    assert 2 <= len(before) < RUNS, "the kill must land mid-sweep"
    finished = {r["run"] for r in before}
    ledger_at_kill = len(_ledger(out))
    tampered = before[0]
    assert tampered["transcript_artifacts"], (tampered["error_kind"], tampered["error_detail"])
    transcript = out / tampered["transcript_artifacts"][0]["path"]
    transcript.write_bytes(transcript.read_bytes() + b"{}\n")
    with open(results, "a") as handle:
        handle.write('{"task": "trivial-amount-grouping", "arm": "baseli')

    # a different configuration is refused before anything changes
    snapshot = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    other_runs = [a if a != str(RUNS) else str(RUNS - 1) for a in args]
    assert runner.main([*other_runs, "--resume", str(out)]) == 2
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == snapshot
    assert runner.main([*args, "--resume", str(out)]) in (0, 1)

    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert sorted(r["run"] for r in rows) == list(range(RUNS)), "exactly one row per cell"
    new_requests = _ledger(out)[ledger_at_kill:]
    rerun = {tampered["run"]} | (set(range(RUNS)) - finished)
    assert {e["run"] for e in new_requests} == rerun, "paid requests after the kill: exactly the cells rerun"
    intact = [r for r in before if r["run"] != tampered["run"]]
    assert all(r in rows for r in intact), "kept rows are byte-for-byte the rows written before the kill"
    assert not (out / "not-run.jsonl").exists()
