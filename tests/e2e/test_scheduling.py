"""Schedulers through runner.main(): a slow healthy first cell, then an outage.

Plan (one task, runs 2, arms baseline baseline_nomcp workflow_direct workflow):
0 slow ok, 1 fail, 2 fail, 3 fail, 4 slow ok, 5..7 fail. With ``--outage-streak 2``
the breaker trips on plan cell 2 under both schedulers; with two workers (waves)
or a window of two (packed) only cell 3 may have started after it. Every planned
cell is either a row or a ``not-run.jsonl`` record, never both.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.builders import result_dicts
from workflow_bench import runner
from workflow_bench.report.cli import main as report_main

pytestmark = pytest.mark.e2e
SCRIPT = Path(__file__).parent / "scripts" / "breaker.yaml"
ARMS = ["baseline", "baseline_nomcp", "workflow_direct", "workflow"]
PLAN = [(run, arm) for run in range(2) for arm in ARMS]


@pytest.mark.parametrize("scheduler", ["packed", "waves"])
def test_breaker_overrun_is_bounded_and_unstarted_cells_are_listed(
    scheduler, task_file_for, tmp_path, bwrap_bin, claude_bin
):
    tasks = task_file_for("trivial-amount-grouping")
    out = tmp_path / "out"
    window = ["--window", "2"] if scheduler == "packed" else []
    code = runner.main(
        ["--tasks", str(tasks), "--provider", "scripted", "--script", str(SCRIPT), "--arms", *ARMS,
         "--runs", "2", "--workers", "2", "--scheduler", scheduler, *window, "--outage-streak", "2",
         "--max-retries", "0", "--out", str(out)]
    )  # fmt: skip
    assert code == 1
    rows = result_dicts(out)
    ran = sorted(PLAN.index((r["run"], r["arm"])) for r in rows)
    trip = 2
    assert ran[: trip + 1] == [0, 1, 2]
    overrun = [i for i in ran if i > trip]
    assert len(overrun) <= 1, f"{scheduler} started {overrun} after the breaker cell"
    not_run = [json.loads(line) for line in (out / "not-run.jsonl").read_text().splitlines()]
    assert {r["why"] for r in not_run} == {"outage-breaker"}
    listed = sorted(PLAN.index((r["run"], r["arm"])) for r in not_run)
    assert sorted(ran + listed) == list(range(len(PLAN)))
    report = (out / "report.md").read_text()
    assert "Sweep aborted" in report and f"Scheduler: `{scheduler}`" in report
    assert f"Cells planned but not run: {len(not_run)}" in report
    # The Scheduling section comes from sweep.json + not-run.jsonl: the re-render is byte-identical,
    # and it needs not-run.jsonl (without it the section would say 0).
    assert report_main([str(out)]) == 0
    assert (out / "report.md").read_text() == report
    (out / "not-run.jsonl").rename(out / "not-run.moved")
    assert report_main([str(out)]) == 0
    assert "Cells planned but not run: 0" in (out / "report.md").read_text()
